// TCP through a listener: byte-exact both ways under concurrency, half-close in both directions,
// the idle timeout, the maxConnections cap, all weights 0, and IPv6.
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import {
  exchange,
  randomPayload,
  sha256,
  startEchoBackend,
  startTcpBackend,
  type EchoBackend,
  type TcpBackend,
} from '../../support/net/backends.ts';
import { freePort } from '../../support/net/free-ports.ts';
import { applyOnFreePort, createPlane, metricValue, type TestPlane } from '../../support/dataplane/test-plane.ts';
import { sleep, waitFor } from '../../support/wait.ts';

const MiB = 1024 * 1024;

function tcpListener(
  name: string,
  port: number,
  backends: { name: string; port: number; weight: number; host?: string }[],
  extra: Record<string, unknown> = {},
) {
  return {
    name,
    protocol: 'tcp',
    listen: `127.0.0.1:${port}`,
    backends: backends.map((b) => ({ host: '127.0.0.1', ...b })),
    ...extra,
  };
}

describe('TCP data plane', { timeout: 30_000 }, () => {
  let plane: TestPlane;
  let echo: EchoBackend;
  const extraBackends: TcpBackend[] = [];

  before(async () => {
    plane = createPlane();
    echo = await startEchoBackend();
  });
  after(async () => {
    await plane.close();
    await echo.close();
    await Promise.all(extraBackends.map((backend) => backend.close()));
  });

  test('512 concurrent connections carry 66 MiB each way byte-exact (hashes compared at both ends)', async () => {
    const connections = 512;
    const size = 132 * 1024; // 512 × 132 KiB = 66 MiB each way
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [tcpListener('bulk', p, [{ name: 'echo', port: echo.port, weight: 1 }])],
    }));
    const before = echo.receivedHashes.length;
    const payloads = Array.from({ length: connections }, () => randomPayload(size));

    // Open them all first, so the transfers really run side by side through the proxy.
    const sockets = await Promise.all(
      payloads.map(async () => {
        const socket = net.connect({ host: '127.0.0.1', port });
        await once(socket, 'connect');
        return socket;
      }),
    );
    await waitFor(() => echo.sockets.size >= connections, `${connections} upstream connections open at once`, 15_000);
    assert.equal(plane.dataplane.activeConnections, connections);

    const received = await Promise.all(
      sockets.map(
        (socket, i) =>
          new Promise<Buffer>((resolve, reject) => {
            const chunks: Buffer[] = [];
            socket.on('data', (chunk: Buffer) => chunks.push(chunk));
            socket.on('error', reject);
            socket.on('end', () => resolve(Buffer.concat(chunks)));
            socket.end(payloads[i]!);
          }),
      ),
    );
    let mismatched = 0;
    let bytesBack = 0;
    for (let i = 0; i < connections; i++) {
      bytesBack += received[i]!.length;
      if (sha256(received[i]!) !== sha256(payloads[i]!)) mismatched++;
    }
    assert.equal(bytesBack, connections * size, 'bytes back to the clients');
    assert.equal(mismatched, 0, 'connections whose echo differs from what was sent');
    // The backend's view of the client→backend direction, independently of the echo.
    const sentHashes = payloads.map(sha256).sort();
    assert.deepEqual(echo.receivedHashes.slice(before).sort(), sentHashes);
    const stats = plane.backend('bulk', 'echo');
    assert.equal(stats.bytesToBackend, connections * size);
    assert.equal(stats.bytesToClient, connections * size);
    await waitFor(() => plane.dataplane.activeConnections === 0, 'every connection closed');
  });

  test('one connection carries 64 MiB each way byte-exact', async () => {
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [tcpListener('single', p, [{ name: 'echo', port: echo.port, weight: 1 }])],
    }));
    const payload = randomPayload(64 * MiB);
    const { data, error } = await exchange(port, payload, { timeoutMs: 25_000 });
    assert.equal(error, undefined);
    assert.equal(data.length, payload.length);
    assert.equal(sha256(data), sha256(payload));
  });

  test('half-close client→backend: the client ends its side and still gets the whole answer', async () => {
    // Answers only once the client's FIN arrived: the hash and size of everything received.
    const backend = await startTcpBackend((socket) => {
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('end', () => {
        const all = Buffer.concat(chunks);
        socket.end(`${all.length} ${sha256(all)}`);
      });
    });
    extraBackends.push(backend);
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [tcpListener('half-client', p, [{ name: 'b', port: backend.port, weight: 1 }])],
    }));
    const payload = randomPayload(4 * MiB);
    const { data, error } = await exchange(port, payload);
    assert.equal(error, undefined);
    assert.equal(data.toString(), `${payload.length} ${sha256(payload)}`);
  });

  test('half-close backend→client: the backend ends its side first, the client keeps sending', async () => {
    const hashes: string[] = [];
    const backend = await startTcpBackend((socket) => {
      socket.end('bye-from-backend'); // FIN first, still reading (allowHalfOpen)
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('end', () => hashes.push(sha256(Buffer.concat(chunks))));
    });
    extraBackends.push(backend);
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [tcpListener('half-backend', p, [{ name: 'b', port: backend.port, weight: 1 }])],
    }));

    const client = net.connect({ host: '127.0.0.1', port, allowHalfOpen: true });
    const chunks: Buffer[] = [];
    client.on('data', (chunk: Buffer) => chunks.push(chunk));
    await once(client, 'end'); // the backend's FIN came through
    assert.equal(Buffer.concat(chunks).toString(), 'bye-from-backend');
    const payload = randomPayload(4 * MiB);
    client.end(payload); // written after the backend's FIN: must still arrive
    await once(client, 'close');
    await waitFor(() => hashes.length === 1, 'the backend saw the client end');
    assert.equal(hashes[0], sha256(payload));
  });

  test('idle timeout closes a silent connection, not one with traffic in either direction', async () => {
    // Trickles a byte to the client every 100 ms when asked ("t"); otherwise echoes.
    const backend = await startTcpBackend((socket) => {
      socket.on('data', (chunk: Buffer) => {
        if (chunk.toString() === 't') {
          const timer = setInterval(() => socket.write('.'), 100);
          socket.on('close', () => clearInterval(timer));
        } else socket.write(chunk);
      });
    });
    extraBackends.push(backend);
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [tcpListener('idle', p, [{ name: 'b', port: backend.port, weight: 1 }], { idleTimeoutMs: 400 })],
    }));

    const silent = net.connect({ host: '127.0.0.1', port });
    silent.on('error', () => {});
    silent.write('hello');
    await once(silent, 'data');
    const lastActivity = Date.now();
    await once(silent, 'close');
    const idleFor = Date.now() - lastActivity;
    assert.ok(idleFor >= 300, `closed after ${idleFor} ms idle, the timeout is 400 ms`);

    // Traffic only backend→client keeps the connection open well past the timeout.
    const trickled = net.connect({ host: '127.0.0.1', port });
    let closed = false;
    let dots = 0;
    trickled.on('close', () => (closed = true));
    trickled.on('data', (chunk: Buffer) => (dots += chunk.length));
    trickled.write('t');
    await sleep(1500);
    assert.equal(closed, false, 'a connection with traffic to the client was closed as idle');
    assert.ok(dots >= 5, `only ${dots} bytes trickled`);
    trickled.destroy();
  });

  test('a draining listener still closes idle connections at the idle timeout, so a shutdown need not wait out its grace', async () => {
    const draining = createPlane(10_000);
    const port = await applyOnFreePort(draining, (p) => ({
      listeners: [tcpListener('idle-drain', p, [{ name: 'echo', port: echo.port, weight: 1 }], { idleTimeoutMs: 400 })],
    }));
    const silent = net.connect({ host: '127.0.0.1', port });
    silent.on('error', () => {});
    silent.write('hello');
    await once(silent, 'data');
    const started = Date.now();
    await draining.close(10_000);
    const took = Date.now() - started;
    assert.ok(took < 3_000, `the shutdown took ${took} ms: the idle connection was kept for the 10 s grace`);
    await waitFor(() => silent.destroyed, 'the client to see its connection closed', 1_000);
  });

  test('maxConnections: the connection over the cap is refused and counted; a slot that frees up is reused', async () => {
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [tcpListener('capped', p, [{ name: 'echo', port: echo.port, weight: 1 }], { maxConnections: 2 })],
    }));
    const held = await Promise.all(
      [0, 1].map(async () => {
        const socket = net.connect({ host: '127.0.0.1', port });
        socket.write('ping');
        await once(socket, 'data');
        return socket;
      }),
    );
    const over = await exchange(port, 'ping');
    assert.equal(over.data.length, 0, 'a connection over the cap was served');
    assert.equal(plane.listener('capped').refused.max_connections, 1);
    assert.match(
      await plane.metrics(),
      /canary_l4_connections_refused_total\{listener="capped",reason="max_connections"\} 1/,
    );

    held[0]!.destroy();
    await waitFor(
      async () => (await exchange(port, 'again')).data.toString() === 'again',
      'a freed slot to serve a new connection',
    );
    held[1]!.destroy();
  });

  test('all weights 0: new connections are refused (reset, no bytes) and counted as no_backend', async () => {
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [
        tcpListener('all-zero', p, [
          { name: 'a', port: echo.port, weight: 0 },
          { name: 'b', port: echo.port, weight: 0 },
        ]),
      ],
    }));
    const acceptedBefore = echo.accepted;
    for (let i = 0; i < 3; i++) {
      const { data, error } = await exchange(port, 'hello');
      assert.equal(data.length, 0);
      assert.equal(error?.code, 'ECONNRESET', 'the refusal is a reset, not a clean end');
    }
    assert.equal(echo.accepted, acceptedBefore, 'a weight-0 backend received a connection');
    const metrics = await plane.metrics();
    assert.equal(
      metricValue(metrics, 'canary_l4_connections_refused_total', { listener: 'all-zero', reason: 'no_backend' }),
      3,
    );
  });

  test('IPv6: a [::1] listener proxies to a ::1 backend', async () => {
    const echo6 = await startEchoBackend('::1');
    extraBackends.push(echo6);
    const port = await applyOnFreePort(
      plane,
      (p) => ({
        listeners: [
          { name: 'v6', listen: `[::1]:${p}`, backends: [{ name: 'echo6', host: '::1', port: echo6.port, weight: 1 }] },
        ],
      }),
      '::1',
    );
    const payload = randomPayload(MiB);
    const { data, error } = await exchange(port, payload, { host: '::1' });
    assert.equal(error, undefined);
    assert.equal(sha256(data), sha256(payload));
    assert.equal(echo6.accepted, 1);
  });

  test('a listener on every address (no host) serves IPv4 and IPv6 clients', async () => {
    const port = await freePort('::');
    await plane.apply({
      listeners: [
        { name: 'dual', listen: port, backends: [{ name: 'echo', host: '127.0.0.1', port: echo.port, weight: 1 }] },
      ],
    });
    for (const host of ['127.0.0.1', '::1']) {
      const { data } = await exchange(port, `via ${host}`, { host });
      assert.equal(data.toString(), `via ${host}`);
    }
  });
});
