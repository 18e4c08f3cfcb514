// The Node internals behind reads into our own buffers on accepted sockets (src/dataplane/
// socket-reads.ts). Should a Node upgrade move them, this fails here, by name, rather than the
// proxy silently falling back to a slower path. And a connection that went idle lets go of them.
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import {
  USER_BUFFER_READS,
  createReadForwarder,
  readAcceptedSocketInto,
} from '../../../src/dataplane/resources/socket-reads.ts';
import { randomPayload, sha256, startEchoBackend } from '../../support/net/backends.ts';
import { applyOnFreePort, createPlane, metricValue } from '../../support/dataplane/test-plane.ts';
import { waitFor } from '../../support/wait.ts';

describe('reads into reused buffers', () => {
  it('the onread internals are where this Node keeps them', () => {
    assert.equal(
      USER_BUFFER_READS,
      true,
      `Node ${process.version}: the kBuffer/kBufferCb/kBufferGen symbols of net.Socket are gone`,
    );
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
      const sinkDone = new Promise<void>((resolve) =>
        sink.once('connection', (socket) => socket.once('end', () => resolve())),
      );
      const forwarded = new Promise<{ counted: number; dataEvents: number }>((resolve) => {
        server.once('connection', (accepted) => {
          const upstream = net.connect({ host: '127.0.0.1', port: (sink.address() as net.AddressInfo).port });
          let counted = 0;
          let dataEvents = 0;
          accepted.on('data', () => dataEvents++);
          assert.equal(
            readAcceptedSocketInto(
              accepted,
              createReadForwarder(upstream, (bytes) => (counted += bytes)),
            ),
            true,
          );
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

describe('read buffers of idle connections', { timeout: 20_000 }, () => {
  /** Sends `payload` on a live connection and resolves with as many bytes of echo. */
  function echoed(socket: net.Socket, payload: Buffer): Promise<Buffer> {
    return new Promise((resolve) => {
      const chunks: Buffer[] = [];
      let length = 0;
      const onData = (chunk: Buffer) => {
        chunks.push(chunk);
        length += chunk.length;
        if (length < payload.length) return;
        socket.off('data', onData);
        resolve(Buffer.concat(chunks));
      };
      socket.on('data', onData);
      socket.write(payload);
    });
  }

  it('a connection that carried 1 MiB and went idle lets go of its read buffers, and carries bytes exactly after', async () => {
    const plane = createPlane(200, { idleBufferSweepMs: 100 });
    const echo = await startEchoBackend();
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [
        {
          name: 'idle-buffers',
          listen: `127.0.0.1:${p}`,
          backends: [{ name: 'echo', host: '127.0.0.1', port: echo.port, weight: 1 }],
        },
      ],
    }));
    const client = net.connect({ host: '127.0.0.1', port });
    try {
      await once(client, 'connect');
      const first = randomPayload(1024 * 1024);
      assert.equal(sha256(await echoed(client, first)), sha256(first));
      assert.ok(plane.dataplane.readBufferBytes() > 64 * 1024, 'a bulk transfer grows the read buffers of both sides');
      await waitFor(
        () => plane.dataplane.readBufferBytes() === 0,
        'the idle connection to let go of its read buffers',
        3000,
      );
      assert.equal(metricValue(await plane.metrics(), 'canary_l4_read_buffer_bytes'), 0);

      const second = randomPayload(1024 * 1024);
      assert.equal(
        sha256(await echoed(client, second)),
        sha256(second),
        'the connection carries bytes exactly after its buffers were let go of',
      );
    } finally {
      client.destroy();
      await plane.close();
      await echo.close();
    }
  });
});
