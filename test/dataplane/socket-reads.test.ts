// The Node internals behind reads into our own buffers on accepted sockets (src/dataplane/
// socket-reads.ts). Should a Node upgrade move them, this fails here, by name, rather than the
// proxy silently falling back to a slower path.
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { USER_BUFFER_READS, createReadForwarder, readAcceptedSocketInto } from '../../src/dataplane/socket-reads.ts';
import { randomPayload, sha256 } from '../support/backends.ts';

describe('reads into reused buffers', () => {
  it('the onread internals are where this Node keeps them', () => {
    assert.equal(USER_BUFFER_READS, true, `Node ${process.version}: the kBuffer/kBufferCb/kBufferGen symbols of net.Socket are gone`);
  });

  it('an accepted socket reads through the forwarder: every byte, in order, and no data events', async () => {
    const payload = randomPayload(3 * 1024 * 1024);
    const server = net.createServer({ pauseOnConnect: true });
    server.listen({ host: '127.0.0.1', port: 0 });
    await once(server, 'listening');
    const sink = net.createServer();
    const received: Buffer[] = [];
    sink.on('connection', (socket) => socket.on('data', (chunk: Buffer) => received.push(chunk)));
    sink.listen({ host: '127.0.0.1', port: 0 });
    await once(sink, 'listening');
    try {
      const sinkDone = new Promise<void>((resolve) => sink.once('connection', (socket) => socket.once('end', () => resolve())));
      const forwarded = new Promise<{ counted: number; dataEvents: number }>((resolve) => {
        server.once('connection', (accepted) => {
          const upstream = net.connect({ host: '127.0.0.1', port: (sink.address() as net.AddressInfo).port });
          let counted = 0;
          let dataEvents = 0;
          accepted.on('data', () => dataEvents++);
          assert.equal(readAcceptedSocketInto(accepted, createReadForwarder(upstream, (bytes) => (counted += bytes))), true);
          upstream.on('drain', () => accepted.resume());
          accepted.on('end', () => {
            upstream.end();
            resolve({ counted, dataEvents });
          });
          accepted.resume();
        });
      });
      const client = net.connect({ host: '127.0.0.1', port: (server.address() as net.AddressInfo).port });
      client.end(payload);
      const { counted, dataEvents } = await forwarded;
      await sinkDone;
      assert.equal(counted, payload.length);
      assert.equal(dataEvents, 0, 'the bytes went through the forwarder, not through data events');
      assert.equal(sha256(Buffer.concat(received)), sha256(payload));
    } finally {
      server.close();
      sink.close();
    }
  });
});
