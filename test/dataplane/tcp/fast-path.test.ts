// The TCP fast path (src/dataplane/tcp/raw-handles.ts, fast-pipe.ts): every Node internal it relies
// on is where this Node keeps it — should an upgrade move one, a test fails here naming it, rather
// than the proxy silently falling back to the slower path —, which listeners take it, and how a
// connection on it ends gracefully (the linger and the deadline, on real sockets with mocked timers).
// The data plane's own tests run on the fast path (the default); net-path.test.ts runs them again
// on the net.Socket path. Addresses in the file's loopback range.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { afterEach, describe, mock, test } from 'node:test';
import { validateConfig } from '../../../src/config/validate.ts';
import { BackendHealth } from '../../../src/dataplane/choice/passive-health.ts';
import { buildSnapshot } from '../../../src/dataplane/routing/routing.ts';
import type { BackendRuntime } from '../../../src/dataplane/routing/backend-runtime.ts';
import { BackendStats, ListenerStats } from '../../../src/dataplane/stats/stats.ts';
import { DescriptorBudget } from '../../../src/dataplane/resources/descriptor-budget.ts';
import { IdleReadBuffers } from '../../../src/dataplane/resources/idle-read-buffers.ts';
import { FastLeg, FastTcpConnection } from '../../../src/dataplane/tcp/fast-pipe.ts';
import { TcpListener, fitsFastPath } from '../../../src/dataplane/tcp/listener.ts';
import { RAW_TCP_REQUIREMENTS, connectTo, takeAccepts } from '../../../src/dataplane/tcp/raw-handles.ts';

import { exchange, randomPayload, sha256, startEchoBackend } from '../../support/net/backends.ts';
import { freePort } from '../../support/net/free-ports.ts';
import { silentLog } from '../../support/dataplane/test-plane.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';

const addresses = loopbackRange(import.meta.url);

const HOST = addresses.ip(1);

describe('the Node internals of the TCP fast path', () => {
  for (const requirement of RAW_TCP_REQUIREMENTS) {
    test(`Node ${process.version} has ${requirement.name}`, () => {
      assert.equal(
        requirement.present,
        true,
        `${requirement.name} is gone: every TCP listener falls back to the net.Socket path`,
      );
    });
  }

  test("a listening net.Server hands its accepts to its handle's onconnection, which takeAccepts takes", async () => {
    const server = net.createServer();
    server.listen({ host: HOST, port: 0 });
    await once(server, 'listening');
    try {
      let taken = 0;
      assert.equal(
        takeAccepts(server, (handle) => {
          taken++;
          new FastLeg(handle).close(false);
          return true;
        }),
        true,
        "net.Server's _handle.onconnection is gone",
      );
      const client = net.connect({ host: HOST, port: (server.address() as net.AddressInfo).port });
      await once(client, 'close');
      assert.equal(taken, 1);
    } finally {
      server.close();
    }
  });
});

describe('which listeners take the fast path', () => {
  test('a plain listener takes its connections on the fast path, on net.Socket with --no-tcp-fast-path', async () => {
    const echo = await startEchoBackend(HOST);
    const idleReadBuffers = new IdleReadBuffers(60_000);
    try {
      for (const tcpFastPath of [true, false]) {
        const port = await freePort(HOST);
        const config = validateConfig(
          {
            listeners: [
              {
                name: 'web',
                listen: `${HOST}:${port}`,
                backends: [{ name: 'echo', host: HOST, port: echo.port, weight: 1 }],
              },
            ],
          },
          'test config',
        );
        const snapshot = buildSnapshot(config.listeners[0]!, new ListenerStats(), () => ({
          health: new BackendHealth(),
          stats: new BackendStats(),
        }));
        const descriptors = new DescriptorBudget({ capacity: 100, maxReservePerListener: 10 }).open();
        const listener = new TcpListener(snapshot, {
          log: silentLog,
          reusePort: false,
          tcpFastPath,
          descriptors,
          onLocalRefusal: () => {},
          idleReadBuffers,
        });
        await listener.listen();
        try {
          assert.equal(listener.fastPath, tcpFastPath);
          const { data } = await exchange(port, 'hello', { host: HOST });
          assert.equal(data.toString(), 'hello');
          assert.equal(snapshot.backends[0]!.stats.bytesToBackend, 5);
        } finally {
          await listener.drain(0);
        }
      }
    } finally {
      idleReadBuffers.stop();
      await echo.close();
    }
  });

  const listener = (extra: Record<string, unknown>, host = '127.0.0.1') => {
    const config = validateConfig(
      {
        listeners: [
          {
            name: 'web',
            listen: '127.0.0.1:8080',
            backends: [
              { name: 'stable', host, port: 9001, weight: 9 },
              { name: 'canary', host: '::1', port: 9002, weight: 1 },
            ],
            ...extra,
          },
        ],
      },
      'test config',
    ).listeners[0]!;
    return buildSnapshot(config, new ListenerStats(), () => ({
      health: new BackendHealth(),
      stats: new BackendStats(),
    }));
  };

  const cases: [string, ReturnType<typeof listener>, boolean][] = [
    ['a plain listener (IPv4 and IPv6 backends)', listener({}), true],
    [
      'with client affinity and limits',
      listener({ affinity: 'clientIP', maxConnections: 10, idleTimeoutMs: 1000, maxConnectionAgeMs: 5000 }),
      true,
    ],
    ['mirroring TCP', listener({ mirror: { to: 'canary', percent: 10 } }), false],
    ['with failOnReset', listener({ failOnReset: true }), false],
    ['with firstByteTimeoutMs', listener({ firstByteTimeoutMs: 500 }), false],
    ['a backend named by host name', listener({}, 'stable.example'), false],
  ];
  for (const [what, snapshot, fast] of cases) {
    test(`${what}: ${fast ? 'fast path' : 'net.Socket path'}`, () => assert.equal(fitsFastPath(snapshot), fast));
  }
});

/** Waits for `condition` by turns of the event loop (setTimeout is mocked in these tests); bounded. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = performance.now() + 5_000;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setImmediate(resolve));
  }
}

interface RawConnection {
  /** The test's client socket and the backend's socket, on the far sides of the proxy. */
  readonly client: net.Socket;
  readonly backendSocket: net.Socket;
  readonly flow: FastTcpConnection;
  close(): void;
}

/** A client, the fast pipe, and a backend, all on loopback. */
async function rawConnection(): Promise<RawConnection> {
  const proxy = net.createServer();
  const backend = net.createServer({ allowHalfOpen: true });
  proxy.listen({ host: HOST, port: 0 });
  backend.listen({ host: HOST, port: 0 });
  await Promise.all([once(proxy, 'listening'), once(backend, 'listening')]);
  const accepted = new Promise<FastLeg>((resolve) =>
    takeAccepts(proxy, (handle) => {
      resolve(new FastLeg(handle));
      return true;
    }),
  );
  const backendSocket = once(backend, 'connection');
  const client = net.connect({ host: HOST, port: (proxy.address() as net.AddressInfo).port, allowHalfOpen: true });
  const clientLeg = await accepted;
  const upstream = await new Promise<FastLeg>((resolve, reject) =>
    connectTo(HOST, (backend.address() as net.AddressInfo).port, (code, handle) =>
      code === null ? resolve(new FastLeg(handle)) : reject(new Error(code)),
    ),
  );
  const runtime: BackendRuntime = {
    config: { name: 'b', host: HOST, port: 1, weight: 1 },
    health: new BackendHealth(),
    stats: new BackendStats(),
  };
  const flow = new FastTcpConnection(runtime, 0, { client: clientLeg, upstream }, -1, () => {});
  const [socket] = (await backendSocket) as [net.Socket];
  return {
    client,
    backendSocket: socket,
    flow,
    close: () => {
      flow.destroy();
      client.destroy();
      socket.destroy();
      proxy.close();
      backend.close();
    },
  };
}

describe('backpressure on the fast path', { timeout: 20_000 }, () => {
  test('while the client reads nothing the proxy stops reading the backend, and every byte arrives in order after', async () => {
    const { client, backendSocket, flow, close } = await rawConnection();
    try {
      const reply = randomPayload(64 * 1024 * 1024);
      client.pause();
      backendSocket.end(reply);
      await until(() => flow.client.pendingWrites > 0, 'the reply to back up at the client');
      await new Promise((resolve) => setTimeout(resolve, 300));
      // What the kernel buffers hold on loopback (a few MiB), not the 64 MiB offered.
      assert.ok(
        flow.upstream.bytesRead < 16 * 1024 * 1024,
        `the proxy read ${flow.upstream.bytesRead} bytes of the backend meanwhile`,
      );
      const chunks: Buffer[] = [];
      client.on('data', (chunk: Buffer) => chunks.push(chunk));
      client.resume();
      await once(client, 'end');
      assert.equal(sha256(Buffer.concat(chunks)), sha256(reply));
    } finally {
      close();
    }
  });
});

describe('the end of a graceful end on the fast path', { timeout: 20_000 }, () => {
  afterEach(() => mock.timers.reset());

  test('the linger starts once the client has the whole reply and the FIN, not when the backend sent them', async () => {
    const { client, backendSocket, flow, close } = await rawConnection();
    try {
      client.pause(); // reads nothing: the reply stays queued in the proxy
      backendSocket.write(Buffer.alloc(16 * 1024 * 1024));
      await until(() => flow.client.pendingWrites > 0, 'the reply to back up at the client');
      mock.timers.enable({ apis: ['setTimeout'] });
      flow.end('max_age');
      backendSocket.end(); // its FIN waits behind the reply
      mock.timers.tick(6_000);
      assert.equal(flow.client.closed, false, "cut 5 s after the backend's FIN, the queued reply would be lost");
      let received = 0;
      client.on('data', (chunk: Buffer) => (received += chunk.length));
      client.resume();
      await once(client, 'end');
      assert.equal(received, 16 * 1024 * 1024);
      await until(() => flow.client.writeShut, "the client's FIN to be sent");
      mock.timers.tick(4_999);
      assert.equal(flow.client.closed, false, 'the client gets 5 s from having it all to send its FIN');
      mock.timers.tick(1);
      assert.equal(flow.client.closed, true);
    } finally {
      close();
    }
  });

  test('a backend that never closes its side: both sockets go 30 s after the end began', async () => {
    const { flow, close } = await rawConnection();
    try {
      mock.timers.enable({ apis: ['setTimeout'] });
      flow.end('max_age');
      mock.timers.tick(29_999);
      assert.equal(flow.client.closed || flow.upstream.closed, false, 'it may still be answering');
      mock.timers.tick(1);
      assert.deepEqual([flow.client.closed, flow.upstream.closed], [true, true]);
    } finally {
      close();
    }
  });
});
