-- kubectl canary-l4 resume: the steps go on.
obj.spec.paused = false
return obj
