-- wrk: one request per connection (the server closes after answering), for connections per second.
wrk.headers["Connection"] = "close"
