// Faults on the TCP path: a backend that refuses (failover, passive health and its recovery), a
// backend that accepts nothing (connect timeout), a reset mid-stream either side (only the backend's
// counted as its reset), and a slow reader whose proxy (a `serve` child) must not buffer what the
// backend pushes.
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import {
  askName,
  countBy,
  exchange,
  randomPayload,
  startEchoBackend,
  startNamedBackend,
  startTcpBackend,
  type EchoBackend,
  type TcpBackend,
} from '../../support/net/backends.ts';
import { startBlackhole } from '../../support/net/blackhole.ts';
import { freePort } from '../../support/net/free-ports.ts';
import { applyOnFreePort, createPlane, metricValue, type TestPlane } from '../../support/dataplane/test-plane.ts';
import { rssBytes, startServe, type ServeChild } from '../../support/process/serve-child.ts';
import { snapshotCounters } from '../../../src/dataplane/stats/counters.ts';
import { sleep, waitFor } from '../../support/wait.ts';

const MiB = 1024 * 1024;

function backendsOf(entries: [string, number, number][]) {
  return entries.map(([name, port, weight]) => ({ name, host: '127.0.0.1', port, weight }));
}

describe('TCP faults', { timeout: 30_000 }, () => {
  let plane: TestPlane;
  let echo: EchoBackend;
  const closers: (() => Promise<void>)[] = [];

  before(async () => {
    plane = createPlane();
    echo = await startEchoBackend();
  });
  after(async () => {
    await plane.close();
    await echo.close();
    for (const close of closers) await close();
  });

  /** A backend's resets as /stats serves them to the canary analysis (resetRate). */
  const countedResets = (listener: string, backend: string) =>
    snapshotCounters(plane.stats, plane.dataplane.config).listeners[listener]?.[backend]?.resets;

  test('a refusing backend: every connection fails over to the other, and the refusal is counted', async () => {
    const deadPort = await freePort();
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [
        {
          name: 'refuse',
          listen: `127.0.0.1:${p}`,
          backends: backendsOf([
            ['dead', deadPort, 50],
            ['echo', echo.port, 50],
          ]),
        },
      ],
    }));
    for (let i = 0; i < 20; i++) {
      const { data, error } = await exchange(port, `msg ${i}`);
      assert.equal(error, undefined);
      assert.equal(data.toString(), `msg ${i}`);
    }
    const dead = plane.backend('refuse', 'dead');
    assert.equal(dead.connectErrors.refused, 1, 'the failed backend is skipped after its first refusal (maxFails 1)');
    assert.equal(dead.connections, 0);
    assert.equal(plane.backend('refuse', 'echo').connections, 20);
    const metrics = await plane.metrics();
    assert.equal(
      metricValue(metrics, 'canary_l4_connect_errors_total', {
        listener: 'refuse',
        backend: 'dead',
        reason: 'refused',
      }),
      1,
    );
    assert.equal(metricValue(metrics, 'canary_l4_backend_healthy', { listener: 'refuse', backend: 'dead' }), 0);
    assert.equal(metricValue(metrics, 'canary_l4_backend_healthy', { listener: 'refuse', backend: 'echo' }), 1);
  });

  test('passive health: a failed backend is skipped for failTimeoutMs and takes traffic again after', async () => {
    const failTimeoutMs = 2000;
    const live = await startNamedBackend('live');
    closers.push(() => live.close());
    const laterPort = await freePort();
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [
        {
          name: 'health',
          listen: `127.0.0.1:${p}`,
          failTimeoutMs,
          backends: backendsOf([
            ['later', laterPort, 50],
            ['live', live.port, 50],
          ]),
        },
      ],
    }));
    assert.equal(await askName(port), 'live'); // "later" refused, failover
    const markedAt = Date.now();
    // "later" comes up, but it is still marked failed: no traffic until failTimeoutMs has passed.
    const later = await startNamedBackend('later', '127.0.0.1', laterPort);
    closers.push(() => later.close());
    const during: string[] = [];
    for (let i = 0; i < 10; i++) during.push(await askName(port));
    assert.ok(Date.now() - markedAt < failTimeoutMs, 'the machine was too slow to check the failed window');
    assert.deepEqual(countBy(during), { live: 10 });
    assert.equal(later.accepted, 0);
    assert.equal(plane.backend('health', 'later').connectErrors.refused, 1);

    await sleep(failTimeoutMs - (Date.now() - markedAt) + 50);
    const afterRecovery: string[] = [];
    for (let i = 0; i < 20; i++) afterRecovery.push(await askName(port));
    const counts = countBy(afterRecovery);
    assert.ok(
      (counts.later ?? 0) >= 9 && (counts.live ?? 0) >= 9,
      `50/50 after recovery, got ${JSON.stringify(counts)}`,
    );
    assert.equal([...plane.dataplane.backendStates()].find((b) => b.backend === 'later')?.healthy, true);
  });

  test('every backend refusing: the client is reset and the refusal counted as no_backend', async () => {
    const [a, b] = [await freePort(), await freePort()];
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [
        {
          name: 'all-dead',
          listen: `127.0.0.1:${p}`,
          backends: backendsOf([
            ['a', a, 1],
            ['b', b, 1],
          ]),
        },
      ],
    }));
    const { data, error } = await exchange(port, 'hello');
    assert.equal(data.length, 0);
    assert.equal(error?.code, 'ECONNRESET');
    assert.equal(
      plane.backend('all-dead', 'a').connectErrors.refused + plane.backend('all-dead', 'b').connectErrors.refused,
      2,
      'both were tried',
    );
    assert.equal(plane.listener('all-dead').refused.no_backend, 1);
  });

  test('a backend that accepts nothing: connect times out after connectTimeoutMs and fails over', async () => {
    const blackhole = await startBlackhole();
    closers.push(() => blackhole.close());
    // The precondition: a plain connect to it really hangs.
    const probe = net.connect({ host: '127.0.0.1', port: blackhole.port });
    probe.on('error', () => {});
    const probeConnected = await Promise.race([once(probe, 'connect').then(() => true), sleep(500).then(() => false)]);
    probe.destroy();
    assert.equal(
      probeConnected,
      false,
      'the blackhole accepted a connection; the test cannot simulate a hanging connect',
    );

    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [
        {
          name: 'hang',
          listen: `127.0.0.1:${p}`,
          connectTimeoutMs: 300,
          backends: backendsOf([
            ['hole', blackhole.port, 50],
            ['echo', echo.port, 50],
          ]),
        },
      ],
    }));
    const started = Date.now();
    const { data, error } = await exchange(port, 'through');
    const took = Date.now() - started;
    assert.equal(error, undefined);
    assert.equal(data.toString(), 'through');
    assert.ok(
      took >= 250,
      `answered after ${took} ms: the first attempt should have waited for the 300 ms connect timeout`,
    );
    assert.equal(plane.backend('hang', 'hole').connectErrors.timeout, 1);
    assert.equal(plane.backend('hang', 'hole').connections, 0);
    // Marked failed: the next connections go straight to the echo.
    for (let i = 0; i < 5; i++) assert.equal((await exchange(port, `n${i}`)).data.toString(), `n${i}`);
    assert.equal(plane.backend('hang', 'hole').connectErrors.timeout, 1);
    assert.match(
      await plane.metrics(),
      /canary_l4_connect_errors_total\{listener="hang",backend="hole",reason="timeout"\} 1/,
    );
  });

  test('only a backend that accepts nothing: the client is reset after the connect timeout', async () => {
    const blackhole = await startBlackhole();
    closers.push(() => blackhole.close());
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [
        {
          name: 'hang-only',
          listen: `127.0.0.1:${p}`,
          connectTimeoutMs: 200,
          backends: backendsOf([['hole', blackhole.port, 1]]),
        },
      ],
    }));
    const { data, error } = await exchange(port, 'x', { timeoutMs: 5000 });
    assert.equal(data.length, 0);
    assert.equal(error?.code, 'ECONNRESET');
    assert.equal(plane.listener('hang-only').refused.no_backend, 1);
  });

  test('connections cut by a drain while the backend connect hangs leave no connect timer behind', async () => {
    const blackhole = await startBlackhole();
    closers.push(() => blackhole.close());
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [
        {
          name: 'cut-connecting',
          listen: `127.0.0.1:${p}`,
          connectTimeoutMs: 60_000,
          backends: backendsOf([['hole', blackhole.port, 1]]),
        },
      ],
    }));
    const timers = () => process.getActiveResourcesInfo().filter((resource) => resource === 'Timeout').length;
    const before = timers();
    const clients = Array.from({ length: 20 }, () => net.connect({ host: '127.0.0.1', port }).on('error', () => {}));
    try {
      await waitFor(() => plane.listener('cut-connecting').accepted === 20, 'the proxy to accept every client');
      await plane.apply({ listeners: [] }); // the 200 ms listener grace ends the connects still hanging
      await waitFor(() => plane.dataplane.activeConnections === 0, 'the drain to cut every connection');
      await waitFor(
        () => timers() < before + 5,
        () => `the cut connects' timers to go (${timers() - before} more timers than before them)`,
        1000,
      );
    } finally {
      for (const client of clients) client.destroy();
    }
  });

  test("a backend that resets mid-stream: the client sees a reset, not a clean end, and it is the backend's reset in /stats", async () => {
    const backend = await startTcpBackend((socket) => {
      socket.write(randomPayload(256 * 1024), () => setTimeout(() => socket.resetAndDestroy(), 50));
    });
    closers.push(() => backend.close());
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [{ name: 'reset-backend', listen: `127.0.0.1:${p}`, backends: backendsOf([['b', backend.port, 1]]) }],
    }));
    const { data, error } = await exchange(port, '', { keepOpen: true });
    assert.equal(
      error?.code,
      'ECONNRESET',
      `the client saw ${error?.code ?? 'a clean end'} after ${data.length} bytes`,
    );
    await waitFor(() => plane.backend('reset-backend', 'b').active === 0, 'the proxied connection to be closed');
    assert.equal(countedResets('reset-backend', 'b'), 1, "the backend's reset is counted against it (resetRate)");
  });

  test("a client that resets mid-upload: the backend sees a reset, the proxy lets go of both sides, and no backend's reset is counted", async () => {
    const seen: string[] = [];
    const backend = await startTcpBackend((socket) => {
      socket.resume();
      socket.on('error', (err: NodeJS.ErrnoException) => seen.push(err.code ?? 'error'));
      socket.on('end', () => seen.push('end'));
    });
    closers.push(() => backend.close());
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [{ name: 'reset-client', listen: `127.0.0.1:${p}`, backends: backendsOf([['b', backend.port, 1]]) }],
    }));
    const client = net.connect({ host: '127.0.0.1', port });
    client.write(randomPayload(MiB));
    await waitFor(() => plane.backend('reset-client', 'b').bytesToBackend > 0, 'bytes to reach the backend');
    client.resetAndDestroy();
    await waitFor(() => seen.length > 0, 'the backend to see the client go');
    assert.deepEqual(seen, ['ECONNRESET']);
    await waitFor(() => plane.dataplane.activeConnections === 0, 'the proxy to close both sides');
    assert.equal(
      countedResets('reset-client', 'b'),
      0,
      "the client's own reset is not held against the backend (resetRate)",
    );
  });
});

describe('opt-in passive health past the connect (failOnReset, firstByteTimeoutMs)', { timeout: 30_000 }, () => {
  let plane: TestPlane;
  let good: TcpBackend;
  const closers: (() => Promise<void>)[] = [];

  before(async () => {
    plane = createPlane();
    good = await startNamedBackend('good');
  });
  after(async () => {
    await plane.close();
    await good.close();
    for (const close of closers) await close();
  });

  /** 20 connections one after the other over a 50/50 split; what each client got ('reset' for a reset). */
  async function twentyConnections(port: number): Promise<Record<string, number>> {
    const outcomes: string[] = [];
    for (let i = 0; i < 20; i++)
      outcomes.push(
        await askName(port).catch((err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? 'reset' : String(err))),
      );
    return countBy(outcomes);
  }

  test('failOnReset: a backend that accepts and resets is taken out after maxFails resets; by default (nginx) it never is', async () => {
    // Resets once the client has said its piece (its end), well after the connect succeeded.
    const resetting = await startTcpBackend((socket) => {
      socket.resume();
      socket.once('end', () => socket.resetAndDestroy());
    });
    closers.push(() => resetting.close());
    const listener = (name: string, p: number, extra: Record<string, unknown>) => ({
      name,
      listen: `127.0.0.1:${p}`,
      maxFails: 2,
      ...extra,
      backends: backendsOf([
        ['resetting', resetting.port, 50],
        ['good', good.port, 50],
      ]),
    });
    const optedIn = await applyOnFreePort(plane, (p) => ({
      listeners: [listener('fail-on-reset', p, { failOnReset: true })],
    }));
    assert.deepEqual(await twentyConnections(optedIn), { reset: 2, good: 18 });
    assert.equal(plane.backend('fail-on-reset', 'resetting').failures.reset, 2);
    const metrics = await plane.metrics();
    assert.equal(
      metricValue(metrics, 'canary_l4_backend_healthy', { listener: 'fail-on-reset', backend: 'resetting' }),
      0,
    );
    assert.equal(
      metricValue(metrics, 'canary_l4_backend_failures_total', {
        listener: 'fail-on-reset',
        backend: 'resetting',
        reason: 'reset',
      }),
      2,
    );

    const byDefault = await applyOnFreePort(plane, (p) => ({ listeners: [listener('nginx-like', p, {})] }));
    assert.deepEqual(await twentyConnections(byDefault), { reset: 10, good: 10 });
  });

  test('firstByteTimeoutMs: a backend that accepts and stays silent is taken out once it has had that long', async () => {
    const silent = await startTcpBackend((socket) => socket.resume());
    closers.push(() => silent.close());
    const port = await applyOnFreePort(plane, (p) => ({
      listeners: [
        {
          name: 'first-byte',
          listen: `127.0.0.1:${p}`,
          maxFails: 1,
          firstByteTimeoutMs: 200,
          backends: backendsOf([
            ['silent', silent.port, 50],
            ['good', good.port, 50],
          ]),
        },
      ],
    }));
    // The first connection goes to the silent backend (ties go to the first) and hangs.
    const hanging = net.connect({ host: '127.0.0.1', port }).on('error', () => {});
    try {
      await waitFor(() => silent.accepted === 1, 'the silent backend to get the first connection');
      await waitFor(
        () => plane.backend('first-byte', 'silent').failures.first_byte_timeout === 1,
        'the first-byte timeout',
      );
      const names: string[] = [];
      for (let i = 0; i < 10; i++) names.push(await askName(port));
      assert.deepEqual(countBy(names), { good: 10 });
      assert.equal(silent.accepted, 1);
      assert.equal(
        [...plane.dataplane.backendStates()].find((b) => b.listener === 'first-byte' && b.backend === 'silent')
          ?.healthy,
        false,
      );
    } finally {
      hanging.destroy();
    }
  });
});

describe('slow reader (a serve child)', { timeout: 30_000 }, () => {
  let serve: ServeChild;
  let firehose: TcpBackend;
  let proxyPort = 0;
  const offeredPerConnection = 64 * MiB;
  const connections = 4;

  before(async () => {
    // Pushes offeredPerConnection bytes to every connection at once, ignoring backpressure: the
    // same 1 MiB buffer queued 64 times, so it costs this process little while it offers the
    // proxy far more than any socket buffer holds.
    const chunk = randomPayload(MiB);
    firehose = await startTcpBackend((socket) => {
      socket.resume();
      for (let sent = 0; sent < offeredPerConnection; sent += chunk.length) socket.write(chunk);
      socket.end();
    });
    proxyPort = await freePort();
    serve = await startServe({
      listeners: [
        {
          name: 'slow',
          listen: `127.0.0.1:${proxyPort}`,
          backends: [{ name: 'firehose', host: '127.0.0.1', port: firehose.port, weight: 1 }],
        },
      ],
    });
  });
  after(async () => {
    await serve?.stop();
    await firehose?.close();
  });

  test('the proxy RSS stays bounded while 256 MiB is offered to clients that do not read, and every byte arrives after', async (t) => {
    const port = proxyPort;
    await sleep(300);
    const baseline = await rssBytes(serve.pid);

    const clients = Array.from({ length: connections }, () => {
      const socket = net.connect({ host: '127.0.0.1', port });
      socket.pause(); // a reader that reads nothing for now
      return socket;
    });
    let peak = baseline;
    for (let i = 0; i < 30; i++) {
      await sleep(100);
      peak = Math.max(peak, await rssBytes(serve.pid));
    }
    const growth = peak - baseline;
    t.diagnostic(`proxy RSS ${(baseline / MiB).toFixed(1)} MiB before, peak growth ${(growth / MiB).toFixed(1)} MiB`);
    assert.ok(
      growth < 64 * MiB,
      `proxy RSS grew by ${(growth / MiB).toFixed(1)} MiB while ${(connections * offeredPerConnection) / MiB} MiB was offered`,
    );

    // Now read: everything offered arrives, nothing was lost while paused.
    const totals = await Promise.all(
      clients.map(
        (socket) =>
          new Promise<number>((resolve, reject) => {
            let total = 0;
            socket.on('data', (data: Buffer) => (total += data.length));
            socket.on('error', reject);
            socket.on('end', () => resolve(total));
            socket.end();
            socket.resume();
          }),
      ),
    );
    assert.deepEqual(
      totals,
      clients.map(() => offeredPerConnection),
    );
  });
});
