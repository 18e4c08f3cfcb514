// A UDP session is idle only when neither side talks: replies from the backend keep it alive, as
// with a client that asks once and then receives a stream (media, log tailing, a subscription).
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';

import { applyOnFreePort, createPlane, type TestPlane } from '../../support/dataplane/test-plane.ts';
import { waitFor } from '../../support/wait.ts';

const IDLE_TIMEOUT_MS = 300;
const INTERVAL_MS = 50;
/** Four idle timeouts of the backend talking alone. */
const STREAM_MS = 4 * IDLE_TIMEOUT_MS;
const DATAGRAMS = STREAM_MS / INTERVAL_MS;

async function boundSocket(): Promise<dgram.Socket> {
  const socket = dgram.createSocket('udp4');
  socket.bind({ address: '127.0.0.1', port: 0 });
  await once(socket, 'listening');
  return socket;
}

/** Answers the first datagram of each sender with DATAGRAMS datagrams, INTERVAL_MS apart, numbered from 1. */
async function startStreamingBackend(): Promise<{ port: number; close(): void }> {
  const socket = await boundSocket();
  const timers = new Set<NodeJS.Timeout>();
  const streaming = new Set<string>();
  socket.on('message', (_msg, rinfo) => {
    const sender = `${rinfo.address}:${rinfo.port}`;
    if (streaming.has(sender)) return;
    streaming.add(sender);
    let sent = 0;
    const timer = setInterval(() => {
      socket.send(String(++sent), rinfo.port, rinfo.address);
      if (sent === DATAGRAMS) {
        clearInterval(timer);
        timers.delete(timer);
      }
    }, INTERVAL_MS);
    timers.add(timer);
  });
  return {
    port: socket.address().port,
    close: () => {
      for (const timer of timers) clearInterval(timer);
      socket.close();
    },
  };
}

describe('UDP idle timeout', { timeout: 10_000 }, () => {
  let plane: TestPlane;
  let backend: Awaited<ReturnType<typeof startStreamingBackend>>;
  let client: dgram.Socket;

  before(async () => {
    plane = createPlane();
    backend = await startStreamingBackend();
    client = await boundSocket();
  });
  after(async () => {
    client.close();
    backend.close();
    await plane.close();
  });

  test(`replies keep a session alive: one datagram in, a ${STREAM_MS} ms stream out, idle timeout ${IDLE_TIMEOUT_MS} ms`, async () => {
    const port = await applyOnFreePort(
      plane,
      (p) => ({
        listeners: [
          {
            name: 'stream',
            protocol: 'udp',
            listen: `127.0.0.1:${p}`,
            idleTimeoutMs: IDLE_TIMEOUT_MS,
            backends: [{ name: 'streamer', host: '127.0.0.1', port: backend.port, weight: 1 }],
          },
        ],
      }),
      '127.0.0.1',
      'udp',
    );
    const received: number[] = [];
    client.on('message', (msg) => received.push(Number(msg.toString('utf8'))));
    const started = Date.now();
    client.send('subscribe', port, '127.0.0.1');
    const stats = plane.backend('stream', 'streamer');
    // The stream plus margin; a session cut short gets nothing after the cut.
    await waitFor(() => received.includes(DATAGRAMS), `datagram ${DATAGRAMS} of the stream`, STREAM_MS + 1_000).catch(
      () => {},
    );
    const last = received.at(-1) ?? 0;
    assert.equal(
      received.length,
      DATAGRAMS,
      `${received.length} of ${DATAGRAMS} datagrams arrived, the last one numbered ${last}, sent about ${last * INTERVAL_MS} ms into the stream: ` +
        `the session was cut though the backend was talking every ${INTERVAL_MS} ms`,
    );
    assert.equal(stats.connections, 1, 'one session for the whole stream');
    // Once both sides are quiet, the session does expire.
    await waitFor(() => stats.active === 0, 'the session to expire once the stream ended', 3 * IDLE_TIMEOUT_MS);
    assert.ok(
      Date.now() - started >= STREAM_MS + IDLE_TIMEOUT_MS,
      'expired no sooner than an idle timeout after the last datagram',
    );
  });
});
