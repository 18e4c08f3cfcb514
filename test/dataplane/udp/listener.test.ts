// UDP through a listener: the split is per session (client address and port), a session sticks to
// its backend, idle sessions expire, `responses: N` ends a session after N replies, `maxSessions`
// caps them, and IPv6 works.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { countBy, runConcurrently, startUdpEcho, udpAsk, type UdpBackend } from '../../support/net/backends.ts';
import { freePort } from '../../support/net/free-ports.ts';
import { applyOnFreePort, createPlane, metricValue, type TestPlane } from '../../support/dataplane/test-plane.ts';
import { sleep, waitFor } from '../../support/wait.ts';

async function clientSocket(type: 'udp4' | 'udp6' = 'udp4'): Promise<dgram.Socket> {
  const socket = dgram.createSocket(type);
  socket.bind({ address: type === 'udp4' ? '127.0.0.1' : '::1', port: 0 });
  await once(socket, 'listening');
  return socket;
}

const nameOf = (reply: string | undefined) => reply?.split(':')[0] ?? 'no reply';

describe('UDP data plane', { timeout: 20_000 }, () => {
  let plane: TestPlane;
  let stable: UdpBackend;
  let canary: UdpBackend;
  let triple: UdpBackend;
  const sockets: dgram.Socket[] = [];
  const extra: UdpBackend[] = [];

  before(async () => {
    plane = createPlane();
    stable = await startUdpEcho('stable');
    canary = await startUdpEcho('canary');
    triple = await startUdpEcho('triple', '127.0.0.1', 3); // three replies to every datagram
  });
  after(async () => {
    await plane.close();
    for (const socket of sockets) socket.close();
    await Promise.all([stable, canary, triple, ...extra].map((backend) => backend.close()));
  });

  const udpListener = (
    name: string,
    port: number,
    backends: [string, number, number][],
    extraFields: Record<string, unknown> = {},
  ) => ({
    name,
    protocol: 'udp',
    listen: `127.0.0.1:${port}`,
    backends: backends.map(([backendName, backendPort, weight]) => ({
      name: backendName,
      host: '127.0.0.1',
      port: backendPort,
      weight,
    })),
    ...extraFields,
  });

  test('wrr 90/10 splits sessions exactly: 100 clients, 90 to stable and 10 to canary', async () => {
    const port = await applyOnFreePort(
      plane,
      (p) => ({
        listeners: [
          udpListener('split', p, [
            ['stable', stable.port, 90],
            ['canary', canary.port, 10],
          ]),
        ],
      }),
      '127.0.0.1',
      'udp',
    );
    // 100 distinct client ports, all kept open: a closed socket's port could be reused by the next
    // client and land in the still-live session of the previous one.
    const clients = await Promise.all(Array.from({ length: 100 }, () => clientSocket()));
    sockets.push(...clients);
    const replies = await runConcurrently(100, 10, async (i) =>
      nameOf((await udpAsk(port, `hello ${i}`, { socket: clients[i]! }))[0]),
    );
    assert.deepEqual(countBy(replies), { stable: 90, canary: 10 });
    assert.equal(plane.backend('split', 'stable').connections, 90);
    assert.equal(plane.backend('split', 'canary').connections, 10);
  });

  test('a session sticks to its backend and its upstream socket: 20 datagrams from one client, one backend, one sender', async () => {
    const port = await applyOnFreePort(
      plane,
      (p) => ({
        listeners: [
          udpListener('sticky', p, [
            ['stable', stable.port, 50],
            ['canary', canary.port, 50],
          ]),
        ],
      }),
      '127.0.0.1',
      'udp',
    );
    const socket = await clientSocket();
    sockets.push(socket);
    const stableSenders = new Set(stable.senders.keys());
    const canarySenders = new Set(canary.senders.keys());
    const names: string[] = [];
    for (let i = 0; i < 20; i++) {
      const [reply] = await udpAsk(port, `datagram ${i}`, { socket });
      assert.equal(reply?.slice(reply.indexOf(':') + 1), `datagram ${i}`, 'the reply is the answer to this datagram');
      names.push(nameOf(reply));
    }
    assert.equal(new Set(names).size, 1, `one session went to ${[...new Set(names)].join(' and ')}`);
    const newSenders = [
      ...[...stable.senders.keys()].filter((s) => !stableSenders.has(s)),
      ...[...canary.senders.keys()].filter((s) => !canarySenders.has(s)),
    ];
    assert.equal(newSenders.length, 1, 'the backends saw the session from one upstream address');
    assert.equal(plane.listener('sticky').accepted, 1);
    // The reply came from the address the client sent to (the listening socket).
    const from = await new Promise<dgram.RemoteInfo>((resolve) => {
      socket.once('message', (_msg, rinfo) => resolve(rinfo));
      socket.send('where from', port, '127.0.0.1');
    });
    assert.deepEqual([from.address, from.port], ['127.0.0.1', port]);
  });

  test('an idle session expires after idleTimeoutMs; the next datagram opens a new one', async () => {
    const port = await applyOnFreePort(
      plane,
      (p) => ({ listeners: [udpListener('idle', p, [['stable', stable.port, 1]], { idleTimeoutMs: 200 })] }),
      '127.0.0.1',
      'udp',
    );
    const socket = await clientSocket();
    sockets.push(socket);
    const stats = plane.backend('idle', 'stable');
    assert.equal(nameOf((await udpAsk(port, 'one', { socket }))[0]), 'stable');
    assert.equal(stats.active, 1);
    // Kept alive while traffic flows: 6 datagrams 100 ms apart, one session.
    for (let i = 0; i < 6; i++) {
      await sleep(100);
      assert.equal((await udpAsk(port, `keep ${i}`, { socket })).length, 1);
    }
    assert.equal(stats.connections, 1, 'a session with traffic every 100 ms expired (idle timeout 200 ms)');
    await waitFor(() => stats.active === 0, 'the idle session to expire', 3000);
    assert.equal(nameOf((await udpAsk(port, 'two', { socket }))[0]), 'stable');
    assert.equal(stats.connections, 2, 'a new session after expiry');
  });

  test('responses: 1 ends the session after one reply: later replies are not forwarded', async () => {
    const port = await applyOnFreePort(
      plane,
      (p) => ({ listeners: [udpListener('one-reply', p, [['triple', triple.port, 1]], { udp: { responses: 1 } })] }),
      '127.0.0.1',
      'udp',
    );
    const socket = await clientSocket();
    sockets.push(socket);
    const replies = await udpAsk(port, 'q1', { socket, expected: 3, timeoutMs: 500 });
    assert.deepEqual(replies, ['triple:q1']);
    const stats = plane.backend('one-reply', 'triple');
    assert.equal(stats.active, 0, 'the session ended with its reply');
    // The same client asking again gets a new session, and again one reply.
    assert.deepEqual(await udpAsk(port, 'q2', { socket, expected: 3, timeoutMs: 500 }), ['triple:q2']);
    assert.equal(stats.connections, 2);
  });

  test('responses: 0 (the default) forwards every reply', async () => {
    const port = await applyOnFreePort(
      plane,
      (p) => ({ listeners: [udpListener('all-replies', p, [['triple', triple.port, 1]])] }),
      '127.0.0.1',
      'udp',
    );
    assert.deepEqual(await udpAsk(port, 'q', { expected: 3 }), ['triple:q', 'triple:q', 'triple:q']);
  });

  test('maxSessions caps live sessions: the client over the cap gets nothing and is counted; a freed slot is reused', async () => {
    const port = await applyOnFreePort(
      plane,
      (p) => ({
        listeners: [
          udpListener('capped', p, [['stable', stable.port, 1]], { udp: { maxSessions: 3 }, idleTimeoutMs: 300 }),
        ],
      }),
      '127.0.0.1',
      'udp',
    );
    const clients = await Promise.all([0, 1, 2, 3].map(() => clientSocket()));
    sockets.push(...clients);
    for (const socket of clients.slice(0, 3)) assert.equal((await udpAsk(port, 'in', { socket })).length, 1);
    assert.deepEqual(await udpAsk(port, 'over', { socket: clients[3]!, timeoutMs: 300 }), []);
    assert.equal(plane.listener('capped').udpDropped.max_sessions, 1);
    assert.equal(
      metricValue(await plane.metrics(), 'canary_l4_udp_dropped_datagrams_total', {
        listener: 'capped',
        reason: 'max_sessions',
      }),
      1,
    );
    // Once the sessions idle out, the fourth client is served.
    await waitFor(() => plane.backend('capped', 'stable').active === 0, 'sessions to expire', 3000);
    assert.equal((await udpAsk(port, 'now', { socket: clients[3]! })).length, 1);
  });

  test('all weights 0: datagrams are dropped and counted as no_backend', async () => {
    const port = await applyOnFreePort(
      plane,
      (p) => ({ listeners: [udpListener('udp-zero', p, [['stable', stable.port, 0]])] }),
      '127.0.0.1',
      'udp',
    );
    const received = stable.received;
    assert.deepEqual(await udpAsk(port, 'x', { timeoutMs: 300 }), []);
    assert.equal(stable.received, received);
    assert.equal(plane.listener('udp-zero').udpDropped.no_backend, 1);
  });

  test('a backend whose name does not resolve: the session ends and is counted as unreachable, the process keeps serving', async () => {
    const port = await applyOnFreePort(
      plane,
      (p) => ({
        listeners: [
          {
            name: 'udp-unresolvable',
            protocol: 'udp',
            listen: `127.0.0.1:${p}`,
            backends: [{ name: 'nowhere', host: 'no-such-host.invalid', port: 9, weight: 1 }],
          },
        ],
      }),
      '127.0.0.1',
      'udp',
    );
    const socket = await clientSocket();
    sockets.push(socket);
    assert.deepEqual(await udpAsk(port, 'first', { socket, timeoutMs: 300 }), []);
    await waitFor(
      () => plane.backend('udp-unresolvable', 'nowhere').connectErrors.unreachable === 1,
      'the failed connect to be counted',
    );
    assert.equal(plane.backend('udp-unresolvable', 'nowhere').active, 0);
    assert.deepEqual(await udpAsk(port, 'second', { socket, timeoutMs: 300 }), []);
    await waitFor(
      () => plane.backend('udp-unresolvable', 'nowhere').connectErrors.unreachable === 2,
      'the second session to fail too',
    );
  });

  test('IPv6: a [::1] UDP listener with a ::1 backend', async () => {
    const echo6 = await startUdpEcho('v6', '::1');
    extra.push(echo6);
    const port = await freePort('::1', 'udp');
    await plane.apply({
      listeners: [
        {
          name: 'udp6',
          protocol: 'udp',
          listen: `[::1]:${port}`,
          backends: [{ name: 'v6', host: '::1', port: echo6.port, weight: 1 }],
        },
      ],
    });
    assert.deepEqual(await udpAsk(port, 'six', { host: '::1' }), ['v6:six']);
  });
});
