// Client-IP affinity (src/dataplane/choice/affinity.ts), pure: 1 000 simulated clients keep their backend
// while the weights hold, a canary raise moves only stable clients and about the raise's share of
// them, more backends move clients only towards one that gained relative to theirs, and another
// process gives the same answers (no shared state: replicas and restarts agree); and through the
// proxy, TCP and UDP, IPv4 and IPv6 (clients from one loopback range of the file, the proxy on another).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ClientAffinity, clientAddressHash } from '../../../src/dataplane/choice/affinity.ts';
import { startNamedBackend, startUdpEcho, udpAsk } from '../../support/net/backends.ts';
import { applyOnFreePort, createPlane, metricValue, type TestPlane } from '../../support/dataplane/test-plane.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';

const clientNet = loopbackRange(import.meta.url);
const proxyNet = loopbackRange(import.meta.url, 1);

/** 1 000 client addresses: 600 IPv4, 400 IPv6, spread like real ones. */
const CLIENTS: readonly string[] = Array.from({ length: 1000 }, (_, i) =>
  i < 600
    ? `10.${(i * 7) % 256}.${(i * 13) % 256}.${i % 251}`
    : `2001:db8:${(i * 31).toString(16)}::${(i * 17).toString(16)}`,
);

const everyone = () => true;

function assign(names: readonly string[], weights: readonly number[], clients: readonly string[] = CLIENTS): number[] {
  const affinity = new ClientAffinity(weights, names);
  return clients.map((client) => affinity.pick(everyone, clientAddressHash(client)));
}

function count(assignments: readonly number[], backends: number): number[] {
  const counts = Array.from({ length: backends }, () => 0);
  for (const index of assignments) counts[index]!++;
  return counts;
}

describe('client affinity (rendezvous hashing)', () => {
  test('at a fixed weight every client keeps its backend, and the split follows the weights', () => {
    const first = assign(['stable', 'canary'], [90, 10]);
    assert.deepEqual(assign(['stable', 'canary'], [90, 10]), first);
    const [stable, canary] = count(first, 2);
    // Binomial(1000, 0.1): σ ≈ 9.5; 4σ either way.
    assert.ok(canary! >= 62 && canary! <= 138, `canary got ${canary} of 1000 at 10 %`);
    assert.equal(stable! + canary!, 1000);
  });

  test('the order of the backends in the config does not matter, their names do', () => {
    const forward = assign(['stable', 'canary'], [80, 20]);
    const reversed = assign(['canary', 'stable'], [20, 80]).map((index) => 1 - index);
    assert.deepEqual(reversed, forward);
  });

  const raises: readonly [number, number][] = [
    [0, 10],
    [10, 30],
    [30, 50],
    [50, 100],
    [5, 6],
  ];
  for (const [from, to] of raises) {
    test(`canary ${from} % → ${to} %: only stable clients move, to the canary, about ${to - from} % of all`, () => {
      const before = assign(['stable', 'canary'], [100 - from, from]);
      const after = assign(['stable', 'canary'], [100 - to, to]);
      let moved = 0;
      for (let i = 0; i < CLIENTS.length; i++) {
        if (before[i] === after[i]) continue;
        assert.deepEqual([before[i], after[i]], [0, 1], `${CLIENTS[i]} moved canary → stable`);
        moved++;
      }
      const expected = (CLIENTS.length * (to - from)) / 100;
      const sigma = Math.sqrt(CLIENTS.length * ((to - from) / 100) * (1 - (to - from) / 100));
      assert.ok(Math.abs(moved - expected) <= 4 * sigma + 1, `${moved} moved, expected about ${expected}`);
      // And back down: exactly the same clients return.
      assert.deepEqual(assign(['stable', 'canary'], [100 - from, from]), before);
    });
  }

  test('three backends: one that gains takes clients only to itself; the others keep theirs', () => {
    const before = assign(['a', 'b', 'c'], [50, 40, 10]);
    const after = assign(['a', 'b', 'c'], [50, 40, 30]);
    for (let i = 0; i < CLIENTS.length; i++)
      if (before[i] !== after[i]) assert.equal(after[i], 2, `${CLIENTS[i]} moved ${before[i]} → ${after[i]}`);
    const moved = before.filter((index, i) => index !== after[i]).length;
    // c's share goes from 10/100 to 30/120 = 25 %: about 150 clients.
    assert.ok(moved >= 100 && moved <= 200, `${moved} moved`);
  });

  test('three backends: a client moves from i to j only when j gained weight relative to i', () => {
    const weights = [50, 40, 10];
    const changed = [50, 30, 20]; // b gives 10 to c
    const before = assign(['a', 'b', 'c'], weights);
    const after = assign(['a', 'b', 'c'], changed);
    for (let i = 0; i < CLIENTS.length; i++) {
      const [from, to] = [before[i]!, after[i]!];
      if (from === to) continue;
      assert.ok(changed[to]! / changed[from]! > weights[to]! / weights[from]!, `${CLIENTS[i]} moved ${from} → ${to}`);
    }
  });

  test('weight 0 gets nobody; an unusable backend hands its clients to their next choice only', () => {
    assert.deepEqual(count(assign(['stable', 'canary'], [100, 0]), 2), [1000, 0]);
    const affinity = new ClientAffinity([40, 30, 30], ['a', 'b', 'c']);
    for (const client of CLIENTS.slice(0, 200)) {
      const hash = clientAddressHash(client);
      const first = affinity.pick(everyone, hash);
      const second = affinity.pick((i) => i !== first, hash);
      const third = affinity.pick((i) => i !== first && i !== second, hash);
      assert.deepEqual(new Set([first, second, third]), new Set([0, 1, 2]));
    }
  });

  test('an IPv4 client is the same client on a dual-stack socket (::ffff:a.b.c.d)', () => {
    assert.equal(clientAddressHash('::ffff:10.1.2.3'), clientAddressHash('10.1.2.3'));
    assert.notEqual(clientAddressHash('::1'), clientAddressHash('1'));
  });

  test('another process gives the same answers (a second replica, a restart)', () => {
    const code = `
      const { ClientAffinity, clientAddressHash } = await import(${JSON.stringify(new URL('../../../src/dataplane/choice/affinity.ts', import.meta.url).href)});
      const clients = JSON.parse(process.argv[1]);
      const affinity = new ClientAffinity([70, 30], ['stable', 'canary']);
      console.log(JSON.stringify(clients.map((c) => affinity.pick(() => true, clientAddressHash(c)))));`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', code, JSON.stringify(CLIENTS)], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(child.status, 0, child.stderr);
    assert.deepEqual(JSON.parse(child.stdout) as number[], assign(['stable', 'canary'], [70, 30]));
  });
});

describe('client affinity through the proxy', { timeout: 20_000 }, () => {
  // Clients from .1–.30 of a range: loopback accepts any 127/8 source address.
  const SOURCES = Array.from({ length: 30 }, (_, i) => `${clientNet.prefix}.${i + 1}`);
  const PROXY_HOST = proxyNet.ip(1);
  let plane: TestPlane;
  const backends: { close(): Promise<void>; port: number }[] = [];
  const sockets: dgram.Socket[] = [];

  before(() => {
    plane = createPlane();
  });
  after(async () => {
    for (const socket of sockets) socket.close();
    await plane.close();
    await Promise.all(backends.map((backend) => backend.close()));
  });

  const config = (name: string, protocol: 'tcp' | 'udp', listen: string, ports: [number, number], canary: number) => ({
    listeners: [
      {
        name,
        protocol,
        listen,
        affinity: 'clientIP',
        backends: [
          { name: 'stable', host: '127.0.0.1', port: ports[0], weight: 100 - canary },
          { name: 'canary', host: '127.0.0.1', port: ports[1], weight: canary },
        ],
      },
    ],
  });
  const predicted = (address: string, canary: number) =>
    new ClientAffinity([100 - canary, canary], ['stable', 'canary']).pick(everyone, clientAddressHash(address)) === 0
      ? 'stable'
      : 'canary';

  function askTcp(port: number, host: string, localAddress?: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port, localAddress });
      let reply = '';
      socket.on('data', (chunk: Buffer) => (reply += chunk.toString()));
      socket.on('end', () => resolve(reply));
      socket.on('error', reject);
    });
  }

  test('TCP, IPv4: every connection of a client lands on its side, and a raise moves only stable clients', async () => {
    const [stable, canary] = await Promise.all([startNamedBackend('stable'), startNamedBackend('canary')]);
    backends.push(stable, canary);
    const ports: [number, number] = [stable.port, canary.port];
    const port = await applyOnFreePort(
      plane,
      (p) => config('tcp-affinity', 'tcp', `${PROXY_HOST}:${p}`, ports, 20),
      PROXY_HOST,
    );
    const sides = async () =>
      Promise.all(
        SOURCES.map(async (source) => [
          await askTcp(port, PROXY_HOST, source),
          await askTcp(port, PROXY_HOST, source),
          await askTcp(port, PROXY_HOST, source),
        ]),
      );
    const at20 = await sides();
    at20.forEach((replies, i) => {
      assert.deepEqual(replies, Array(3).fill(predicted(SOURCES[i]!, 20)), `client ${SOURCES[i]}`);
    });
    await plane.apply(config('tcp-affinity', 'tcp', `${PROXY_HOST}:${port}`, ports, 60));
    const at60 = await sides();
    at60.forEach((replies, i) => {
      assert.deepEqual(replies, Array(3).fill(predicted(SOURCES[i]!, 60)), `client ${SOURCES[i]}`);
      if (at20[i]![0] === 'canary') assert.equal(replies[0], 'canary', `${SOURCES[i]} went back to stable`);
    });
    const metrics = await plane.metrics();
    assert.equal(metricValue(metrics, 'canary_l4_client_affinity', { listener: 'tcp-affinity' }), 1);
    assert.equal(plane.dataplane.config.listeners[0]!.affinity, 'clientIP', '/config shows it');
  });

  test('TCP, IPv6: the client ::1 lands where the hash says', async () => {
    const [stable, canary] = await Promise.all([startNamedBackend('stable'), startNamedBackend('canary')]);
    backends.push(stable, canary);
    const port = await applyOnFreePort(
      plane,
      (p) => config('tcp6-affinity', 'tcp', `[::1]:${p}`, [stable.port, canary.port], 50),
      '::1',
    );
    const replies = await Promise.all([askTcp(port, '::1'), askTcp(port, '::1'), askTcp(port, '::1')]);
    assert.deepEqual(replies, Array(3).fill(predicted('::1', 50)));
  });

  test('UDP: a client address keeps its side whatever its source port', async () => {
    const [stable, canary] = await Promise.all([startUdpEcho('stable'), startUdpEcho('canary')]);
    backends.push(stable, canary);
    const port = await applyOnFreePort(
      plane,
      (p) => config('udp-affinity', 'udp', `${PROXY_HOST}:${p}`, [stable.port, canary.port], 30),
      PROXY_HOST,
      'udp',
    );
    for (const source of SOURCES.slice(0, 15)) {
      for (let flow = 0; flow < 2; flow++) {
        const socket = dgram.createSocket('udp4');
        sockets.push(socket);
        socket.bind({ address: source, port: 0 });
        await once(socket, 'listening');
        const [reply] = await udpAsk(port, 'hello', { host: PROXY_HOST, socket });
        assert.equal(reply?.split(':')[0], predicted(source, 30), `client ${source}, flow ${flow}`);
      }
    }
  });
});
