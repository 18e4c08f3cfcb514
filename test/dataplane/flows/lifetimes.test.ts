// Long-lived connections follow the weight (src/dataplane/flows/lifetimes.ts): maxConnectionAgeMs moves a
// pool of 20 connections to a new split within the age plus its jitter with no byte lost, a
// rebalance ends exactly the surplus, a removed backend is drained after drainTimeoutMs, UDP
// sessions follow too, and by default nothing is ever cut. Addresses in the file's loopback range.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  randomPayload,
  startEchoBackend,
  startUdpEcho,
  type EchoBackend,
  type UdpBackend,
} from '../../support/net/backends.ts';
import { applyOnFreePort, createPlane, metricValue, type TestPlane } from '../../support/dataplane/test-plane.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { sleep, waitFor } from '../../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const PROXY_HOST = addresses.ip(1);
const CHUNK_BYTES = 1024;

/**
 * One logical stream of a client's pool: 1 KiB requests, each echoed back whole before the next.
 * When the proxy ends its connection, a request left unanswered is sent again on a new connection,
 * as a pool client retries; a partly answered one is a cut mid-write, and recorded as such.
 */
class PooledStream {
  readonly #port: number;
  readonly #sent = createHash('sha256');
  readonly #received = createHash('sha256');
  /** sha256 of what came back on each connection, to compare with what the backends received. */
  readonly connectionHashes: string[] = [];
  readonly cuts: string[] = [];
  connections = 0;
  #running = true;
  #socket: net.Socket | undefined;
  readonly done: Promise<void>;

  constructor(port: number) {
    this.#port = port;
    this.done = this.#run();
  }

  get digests(): { sent: string; received: string } {
    return { sent: this.#sent.copy().digest('hex'), received: this.#received.copy().digest('hex') };
  }

  stop(): Promise<void> {
    this.#running = false;
    this.#socket?.end();
    return this.done;
  }

  async #run(): Promise<void> {
    let request: Buffer | undefined;
    while (this.#running) {
      const socket = net.connect({ host: PROXY_HOST, port: this.#port });
      this.#socket = socket;
      this.connections++;
      const connectionHash = createHash('sha256');
      let pending = Buffer.alloc(0);
      let wake: (() => void) | undefined;
      let closed = false;
      socket.on('data', (chunk: Buffer) => {
        pending = Buffer.concat([pending, chunk]);
        connectionHash.update(chunk);
        wake?.();
      });
      socket.on('error', () => {});
      socket.on('close', () => {
        closed = true;
        wake?.();
      });
      await once(socket, 'connect').catch(() => {});
      while (this.#running && !closed) {
        request ??= randomPayload(CHUNK_BYTES);
        socket.write(request);
        while (pending.length < request.length && !closed) await new Promise<void>((resolve) => (wake = resolve));
        if (pending.length >= request.length) {
          assert.ok(pending.subarray(0, request.length).equals(request), 'the echo differs from the request');
          this.#sent.update(request);
          this.#received.update(pending.subarray(0, request.length));
          pending = pending.subarray(request.length);
          request = undefined;
          // Back-to-back requests, so that a connection ended at any moment has one in flight.
          await new Promise(setImmediate);
        } else if (pending.length > 0) {
          this.cuts.push(`${pending.length} of ${request.length} bytes came back`);
        }
      }
      if (!closed) await once(socket, 'close');
      this.connectionHashes.push(connectionHash.digest('hex'));
    }
  }
}

interface Pool {
  readonly streams: PooledStream[];
  readonly backends: readonly EchoBackend[];
  /** How many connections each backend had seen end before the pool opened. */
  readonly endedBefore: readonly number[];
}

/** Every stream opened, so that a failed test leaves none running. */
const openStreams = new Set<PooledStream>();

async function openPool(port: number, size: number, backends: readonly EchoBackend[]): Promise<Pool> {
  const endedBefore = backends.map((backend) => backend.receivedHashes.length);
  const streams = Array.from({ length: size }, () => new PooledStream(port));
  for (const stream of streams) openStreams.add(stream);
  await waitFor(
    () => streams.every((stream) => stream.digests.sent !== createHash('sha256').digest('hex')),
    'every stream to get an answer',
  );
  return { streams, backends, endedBefore };
}

const connectionsOf = (pool: Pool) => pool.streams.reduce((n, stream) => n + stream.connections, 0);

/** Stops the pool; the bytes each backend connection received must be exactly what came back. */
async function closePoolAndCompare({ streams: pool, backends, endedBefore }: Pool): Promise<void> {
  await Promise.all(pool.map((stream) => stream.stop()));
  for (const stream of pool) openStreams.delete(stream);
  const fromClients = pool.flatMap((stream) => stream.connectionHashes).sort();
  const atBackends = () => backends.flatMap((backend, i) => backend.receivedHashes.slice(endedBefore[i])).sort();
  await waitFor(() => atBackends().length >= fromClients.length, 'the backends to see every connection end');
  assert.deepEqual(
    atBackends(),
    fromClients,
    'what each backend connection received differs from what came back through the proxy',
  );
  for (const stream of pool) {
    assert.deepEqual(stream.cuts, [], 'a connection was cut mid-write');
    const { sent, received } = stream.digests;
    assert.equal(received, sent);
  }
}

describe('long-lived connections follow the weight', { timeout: 30_000 }, () => {
  let plane: TestPlane;
  let stable: EchoBackend;
  let canary: EchoBackend;

  before(async () => {
    plane = createPlane();
    [stable, canary] = await Promise.all([startEchoBackend(), startEchoBackend()]);
  });
  after(async () => {
    await Promise.all([...openStreams].map((stream) => stream.stop()));
    await plane.close();
    await Promise.all([stable.close(), canary.close()]);
  });

  const listener = (port: number, weights: [number, number], extra: Record<string, unknown> = {}, name = 'pool') => ({
    listeners: [
      {
        name,
        listen: `${PROXY_HOST}:${port}`,
        backends: [
          { name: 'stable', host: '127.0.0.1', port: stable.port, weight: weights[0] },
          { name: 'canary', host: '127.0.0.1', port: canary.port, weight: weights[1] },
        ].filter((backend) => backend.weight >= 0),
        ...extra,
      },
    ],
  });
  const active = (name: string) => [plane.backend(name, 'stable').active, plane.backend(name, 'canary').active];
  const ended = (name: string, backend: string) => ({ ...plane.backend(name, backend).ended });

  test('maxConnectionAgeMs: a pool of 20 reaches a new split within the age plus jitter, no byte lost', async () => {
    const maxAgeMs = 1_500;
    const policy = { maxConnectionAgeMs: maxAgeMs };
    const port = await applyOnFreePort(plane, (p) => listener(p, [100, 0], policy, 'aged'), PROXY_HOST);
    const pool = await openPool(port, 20, [stable, canary]);
    assert.deepEqual(active('aged'), [20, 0]);
    await plane.apply(listener(port, [50, 50], policy, 'aged'));
    const reloadedAt = performance.now();
    // The age, its 10 % jitter, one sweep (age / 20) and a reconnect.
    await waitFor(
      () => active('aged')[0] === 10 && active('aged')[1] === 10,
      'a 10/10 split',
      maxAgeMs * 1.1 + maxAgeMs / 20 + 500,
    );
    assert.ok(performance.now() - reloadedAt <= maxAgeMs * 1.1 + maxAgeMs / 20 + 500);
    assert.ok(ended('aged', 'stable').max_age >= 20, `${ended('aged', 'stable').max_age} ended for their age`);
    await closePoolAndCompare(pool);
    const metrics = await plane.metrics();
    assert.ok(
      (metricValue(metrics, 'canary_l4_connections_ended_total', {
        listener: 'aged',
        backend: 'stable',
        reason: 'max_age',
      }) ?? 0) >= 20,
    );
  });

  test("rebalanceWindowMs: 10/10 live at 50/50 → 80/20 ends exactly the canary's 6 extra, and the split lands on 16/4", async () => {
    const policy = { rebalanceWindowMs: 400 };
    const port = await applyOnFreePort(plane, (p) => listener(p, [50, 50], policy, 'rebalanced'), PROXY_HOST);
    const pool = await openPool(port, 20, [stable, canary]);
    assert.deepEqual(active('rebalanced'), [10, 10]);
    await plane.apply(listener(port, [80, 20], policy, 'rebalanced'));
    await sleep(150);
    const early = ended('rebalanced', 'canary').rebalance;
    assert.ok(early < 6, `the ends are spread over the window: ${early} of 6 after 150 of 400 ms`);
    await waitFor(() => active('rebalanced')[0] === 16 && active('rebalanced')[1] === 4, 'a 16/4 split', 2_000);
    await sleep(300);
    assert.deepEqual(active('rebalanced'), [16, 4]);
    assert.deepEqual(ended('rebalanced', 'canary'), { max_age: 0, rebalance: 6, drain: 0 });
    assert.deepEqual(ended('rebalanced', 'stable'), { max_age: 0, rebalance: 0, drain: 0 });
    assert.equal(connectionsOf(pool), 26, 'six reconnections, no more');
    await closePoolAndCompare(pool);
  });

  test('by default a weight change cuts nothing: the pool stays where it was', async () => {
    const port = await applyOnFreePort(plane, (p) => listener(p, [50, 50], {}, 'kept'), PROXY_HOST);
    const pool = await openPool(port, 20, [stable, canary]);
    await plane.apply(listener(port, [100, 0], {}, 'kept'));
    await sleep(600);
    assert.deepEqual(active('kept'), [10, 10]);
    assert.equal(connectionsOf(pool), 20);
    await closePoolAndCompare(pool);
  });

  test('drainTimeoutMs: the connections of a removed backend end that long after, not before', async () => {
    const policy = { drainTimeoutMs: 400 };
    const port = await applyOnFreePort(plane, (p) => listener(p, [50, 50], policy, 'drained'), PROXY_HOST);
    const pool = await openPool(port, 20, [stable, canary]);
    await plane.apply(listener(port, [100, -1], policy, 'drained'));
    await sleep(200);
    assert.equal(plane.backend('drained', 'canary').active, 10, 'still there before drainTimeoutMs');
    await waitFor(() => plane.backend('drained', 'stable').active === 20, 'every connection on stable', 2_000);
    assert.deepEqual(ended('drained', 'canary'), { max_age: 0, rebalance: 0, drain: 10 });
    await closePoolAndCompare(pool);
  });

  test("drainTimeoutMs: 0 never cuts: a removed backend's live connections go on serving until they end by themselves", async () => {
    const policy = { drainTimeoutMs: 0 };
    const port = await applyOnFreePort(plane, (p) => listener(p, [50, 50], policy, 'never-cut'), PROXY_HOST);
    const pool = await openPool(port, 20, [stable, canary]);
    await plane.apply(listener(port, [100, -1], policy, 'never-cut'));
    // Several sweeps' worth: nothing may end them.
    await sleep(1_000);
    assert.equal(plane.backend('never-cut', 'canary').active, 10, 'the removed backend keeps every live connection');
    assert.deepEqual(ended('never-cut', 'canary'), { max_age: 0, rebalance: 0, drain: 0 });
    assert.equal(connectionsOf(pool), 20, 'no client had to reconnect');
    await closePoolAndCompare(pool);
    await waitFor(
      () => plane.backend('never-cut', 'canary').active === 0,
      'the connections to end once their clients close them',
      2_000,
    );
  });
});

describe('UDP sessions follow the weight', { timeout: 20_000 }, () => {
  let plane: TestPlane;
  let stable: UdpBackend;
  let canary: UdpBackend;
  const sockets: dgram.Socket[] = [];

  before(async () => {
    plane = createPlane();
    [stable, canary] = await Promise.all([startUdpEcho('stable'), startUdpEcho('canary')]);
  });
  after(async () => {
    for (const socket of sockets) socket.close();
    await plane.close();
    await Promise.all([stable.close(), canary.close()]);
  });

  const listener = (name: string, port: number, weights: [number, number], extra: Record<string, unknown>) => ({
    listeners: [
      {
        name,
        protocol: 'udp',
        listen: `${PROXY_HOST}:${port}`,
        backends: [
          { name: 'stable', host: '127.0.0.1', port: stable.port, weight: weights[0] },
          { name: 'canary', host: '127.0.0.1', port: canary.port, weight: weights[1] },
        ],
        ...extra,
      },
    ],
  });

  /** Client flows that send every 20 ms and remember who answered last. */
  async function flows(port: number, count: number): Promise<{ last: string[]; stop(): void }> {
    const last: string[] = Array.from({ length: count }, () => '');
    const clients = await Promise.all(
      Array.from({ length: count }, async (_, i) => {
        const socket = dgram.createSocket('udp4');
        sockets.push(socket);
        socket.on('message', (reply) => (last[i] = reply.toString().split(':')[0]!));
        socket.bind({ address: '127.0.0.1', port: 0 });
        await once(socket, 'listening');
        return socket;
      }),
    );
    const timer = setInterval(() => {
      clients.forEach((socket, i) => {
        socket.send(`flow ${i}`, port, PROXY_HOST);
      });
    }, 20);
    await waitFor(() => last.every((name) => name !== ''), 'every flow answered');
    return { last, stop: () => clearInterval(timer) };
  }

  test('maxConnectionAgeMs: a busy flow moves to the new weight once its session is that old', async () => {
    const policy = { maxConnectionAgeMs: 300 };
    const port = await applyOnFreePort(plane, (p) => listener('udp-aged', p, [100, 0], policy), PROXY_HOST, 'udp');
    const flow = await flows(port, 1);
    assert.deepEqual(flow.last, ['stable']);
    await plane.apply(listener('udp-aged', port, [0, 100], policy));
    await waitFor(() => flow.last[0] === 'canary', 'the flow on canary', 300 * 1.1 + 500);
    flow.stop();
    assert.ok(plane.backend('udp-aged', 'stable').ended.max_age >= 1);
  });

  test('rebalanceWindowMs: 20 flows at 50/50 → 80/20 move exactly 6 sessions', async () => {
    const policy = { rebalanceWindowMs: 200 };
    const port = await applyOnFreePort(
      plane,
      (p) => listener('udp-rebalanced', p, [50, 50], policy),
      PROXY_HOST,
      'udp',
    );
    const flow = await flows(port, 20);
    const onCanary = () => flow.last.filter((name) => name === 'canary').length;
    assert.equal(onCanary(), 10);
    await plane.apply(listener('udp-rebalanced', port, [80, 20], policy));
    await waitFor(() => onCanary() === 4, '4 flows on canary', 2_000);
    await sleep(300);
    flow.stop();
    assert.equal(onCanary(), 4);
    assert.equal(plane.backend('udp-rebalanced', 'canary').ended.rebalance, 6);
    assert.equal(plane.backend('udp-rebalanced', 'stable').ended.rebalance, 0);
  });
});
