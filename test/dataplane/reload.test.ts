// Reloads: weights change and a listener comes and goes under steady load with no failed
// connection; live connections survive weight changes; a removed listener drains its live
// connections up to the grace period; a config that cannot bind is refused whole, counted, and the
// old one keeps serving.
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { validateConfig } from '../../src/config/validate.ts';
import { BindError } from '../../src/errors.ts';
import { Runtime } from '../../src/runtime/runtime.ts';
import {
  askName,
  countBy,
  echoOnce,
  exchange,
  startEchoBackend,
  startNamedBackend,
  startTcpBackend,
  type EchoBackend,
  type TcpBackend,
} from '../support/net/backends.ts';
import { freePort } from '../support/net/free-ports.ts';
import { applyOnFreePort, createPlane, metricValue, type TestPlane } from '../support/dataplane/test-plane.ts';
import { sleep, waitFor } from '../support/wait.ts';

describe('reload under load', { timeout: 30_000 }, () => {
  let plane: TestPlane;
  let stable: TcpBackend;
  let canary: TcpBackend;
  let echo: EchoBackend;

  before(async () => {
    plane = createPlane(3000);
    stable = await startNamedBackend('stable');
    canary = await startNamedBackend('canary');
    echo = await startEchoBackend();
  });
  after(async () => {
    await plane.close();
    await Promise.all([stable.close(), canary.close(), echo.close()]);
  });

  test('weights change and a listener is added then removed while 16 clients connect nonstop: 0 failures', async () => {
    const [webPort, extraPort, echoPort] = [await freePort(), await freePort(), await freePort()];
    const web = (stableWeight: number, canaryWeight: number) => ({
      name: 'web',
      listen: `127.0.0.1:${webPort}`,
      backends: [
        { name: 'stable', host: '127.0.0.1', port: stable.port, weight: stableWeight },
        { name: 'canary', host: '127.0.0.1', port: canary.port, weight: canaryWeight },
      ],
    });
    const echoListener = {
      name: 'echo',
      listen: `127.0.0.1:${echoPort}`,
      backends: [{ name: 'echo', host: '127.0.0.1', port: echo.port, weight: 1 }],
    };
    const extra = {
      name: 'extra',
      listen: `127.0.0.1:${extraPort}`,
      backends: [{ name: 'canary', host: '127.0.0.1', port: canary.port, weight: 1 }],
    };
    await plane.apply({ listeners: [web(90, 10), echoListener] });

    // A long-lived connection that must survive every weight change.
    const longLived = net.connect({ host: '127.0.0.1', port: echoPort });
    await once(longLived, 'connect');
    assert.equal(await echoOnce(longLived, 'before'), 'before');

    let running = true;
    let succeeded = 0;
    const failures: string[] = [];
    const workers = Array.from({ length: 16 }, async () => {
      const deadline = Date.now() + 20_000; // bounded even if the test body throws
      while (running && Date.now() < deadline) {
        try {
          const name = await askName(webPort);
          if (name === 'stable' || name === 'canary') succeeded++;
          else failures.push(`unexpected answer ${JSON.stringify(name)}`);
        } catch (err) {
          failures.push((err as Error).message);
        }
      }
    });

    const reloads: [string, unknown][] = [
      ['50/50', { listeners: [web(50, 50), echoListener] }],
      ['add a listener', { listeners: [web(50, 50), echoListener, extra] }],
      ['0/100', { listeners: [web(0, 100), echoListener, extra] }],
      ['remove the listener', { listeners: [web(0, 100), echoListener] }],
      ['100/0', { listeners: [web(100, 0), echoListener] }],
      ['30/70', { listeners: [web(30, 70), echoListener] }],
    ];
    try {
      await sleep(200);
      for (const [label, config] of reloads) {
        await plane.apply(config);
        if (label === 'add a listener')
          assert.equal(await askName(extraPort), 'canary', 'the added listener serves at once');
        if (label === 'remove the listener') {
          const refused = await exchange(extraPort, 'x').then((r) => r.error?.code);
          assert.equal(refused, 'ECONNREFUSED', 'the removed listener stopped accepting');
        }
        if (label === '0/100' || label === '100/0') {
          // New connections follow the new weights as soon as apply() resolves.
          const expected = label === '0/100' ? 'canary' : 'stable';
          const names: string[] = [];
          for (let i = 0; i < 10; i++) names.push(await askName(webPort));
          assert.deepEqual(countBy(names), { [expected]: 10 }, `after ${label}`);
        }
        assert.equal(
          await echoOnce(longLived, `after ${label}`),
          `after ${label}`,
          `the long-lived connection after ${label}`,
        );
        await sleep(150);
      }
    } finally {
      running = false;
      await Promise.all(workers);
      longLived.destroy();
    }
    assert.deepEqual(failures.slice(0, 5), [], `${failures.length} failed connections`);
    assert.ok(succeeded >= 100, `only ${succeeded} connections completed under load`);
    assert.equal(plane.listener('web').refused.no_backend, 0);
  });
});

describe('reloads keep the split', { timeout: 30_000 }, () => {
  let plane: TestPlane;
  let stable: TcpBackend;
  let canary: TcpBackend;

  before(async () => {
    plane = createPlane();
    stable = await startNamedBackend('stable');
    canary = await startNamedBackend('canary');
  });
  after(async () => {
    await plane.close();
    await Promise.all([stable.close(), canary.close()]);
  });

  /** 200 connections one after the other, and before every 5th a reload to the next weights of `schedule`. */
  async function splitWithReloads(
    name: string,
    schedule: [number, number][],
  ): Promise<{ counts: Record<string, number>; applied: boolean[] }> {
    const config = (port: number, [stableWeight, canaryWeight]: [number, number]) => ({
      listeners: [
        {
          name,
          listen: `127.0.0.1:${port}`,
          backends: [
            { name: 'stable', host: '127.0.0.1', port: stable.port, weight: stableWeight },
            { name: 'canary', host: '127.0.0.1', port: canary.port, weight: canaryWeight },
          ],
        },
      ],
    });
    const port = await applyOnFreePort(plane, (p) => config(p, schedule[0]!));
    const names: string[] = [];
    const applied: boolean[] = [];
    for (let i = 0; i < 200; i++) {
      if (i > 0 && i % 5 === 0) applied.push(await plane.apply(config(port, schedule[(i / 5) % schedule.length]!)));
      names.push(await askName(port));
    }
    return { counts: countBy(names), applied };
  }

  test('a reload every 5 connections that changes nothing is skipped, and 90/10 stays exact: 180/20 of 200', async () => {
    const { counts, applied } = await splitWithReloads('noop-reloads', [[90, 10]]);
    assert.deepEqual(counts, { stable: 180, canary: 20 });
    assert.deepEqual(new Set(applied), new Set([false]), 'a config equal to the running one was applied');
  });

  test('a reload every 5 connections alternating 90/10 and 80/20 carries the rotation over: their average, 170/30 of 200', async () => {
    const { counts } = await splitWithReloads('changing-reloads', [
      [90, 10],
      [80, 20],
    ]);
    assert.deepEqual(counts, { stable: 170, canary: 30 });
  });
});

describe('removed listener', { timeout: 15_000 }, () => {
  test('its live connections keep working within the grace period, then are cut', async () => {
    const plane = createPlane(800);
    const echo = await startEchoBackend();
    try {
      const port = await freePort();
      await plane.apply({
        listeners: [
          {
            name: 'gone',
            listen: `127.0.0.1:${port}`,
            backends: [{ name: 'echo', host: '127.0.0.1', port: echo.port, weight: 1 }],
          },
        ],
      });
      const live = net.connect({ host: '127.0.0.1', port });
      live.on('error', () => {});
      await once(live, 'connect');
      assert.equal(await echoOnce(live, 'one'), 'one');
      await plane.apply({ listeners: [] });
      const removedAt = Date.now();
      assert.equal(plane.dataplane.activeConnections, 1, 'the draining connection is still counted as active');
      assert.equal(await echoOnce(live, 'two'), 'two', 'a live connection on a removed listener was cut at once');
      assert.equal((await exchange(port, 'x')).error?.code, 'ECONNREFUSED');
      await once(live, 'close');
      const lasted = Date.now() - removedAt;
      assert.ok(lasted >= 600 && lasted < 5000, `cut ${lasted} ms after removal with an 800 ms grace`);
    } finally {
      await plane.close();
      await echo.close();
    }
  });

  test('the grace deadline ends the backend side too: the backend sees its connection end and active drops to 0', async () => {
    const plane = createPlane(200);
    const backendEnded: string[] = [];
    const backend = await startTcpBackend((socket) => {
      socket.resume();
      socket.on('end', () => backendEnded.push('end'));
    });
    const port = await freePort();
    await plane.apply({
      listeners: [
        {
          name: 'cut',
          listen: `127.0.0.1:${port}`,
          backends: [{ name: 'b', host: '127.0.0.1', port: backend.port, weight: 1 }],
        },
      ],
    });
    const live = net.connect({ host: '127.0.0.1', port });
    live.on('error', () => {});
    try {
      await once(live, 'connect');
      await waitFor(() => plane.backend('cut', 'b').active === 1, 'the connection to be proxied');
      await plane.apply({ listeners: [] });
      await once(live, 'close');
      await waitFor(() => backendEnded.length === 1, 'the backend to see its connection end', 2000);
      assert.equal(plane.backend('cut', 'b').active, 0);
    } finally {
      live.destroy();
      await plane.close();
      await backend.close();
    }
  });
});

// `--drain-timeout 5` with `--listener-grace 300` must not hold a SIGTERM for 5 minutes: shutdown
// bounds the drains that reloads started too.
describe('shutdown after a listener was removed', { timeout: 15_000 }, () => {
  test('shutdown(0) ends the connections of a listener still draining from a reload, at once', async () => {
    const plane = createPlane(4000);
    const echo = await startEchoBackend();
    const port = await freePort();
    await plane.apply({
      listeners: [
        {
          name: 'old',
          listen: `127.0.0.1:${port}`,
          backends: [{ name: 'echo', host: '127.0.0.1', port: echo.port, weight: 1 }],
        },
      ],
    });
    const live = net.connect({ host: '127.0.0.1', port });
    live.on('error', () => {});
    try {
      await once(live, 'connect');
      await plane.apply({ listeners: [] });
      const started = Date.now();
      await plane.close(0);
      const took = Date.now() - started;
      assert.ok(took < 1000, `shutdown(0) took ${took} ms: it waited for the 4000 ms listener grace`);
    } finally {
      live.destroy();
      await echo.close();
    }
  });
});

describe('a config that cannot bind', { timeout: 15_000 }, () => {
  let runtime: Runtime;
  let holder: net.Server;
  let stable: TcpBackend;
  let canary: TcpBackend;

  before(async () => {
    runtime = await Runtime.start({
      log: pino({ level: 'silent' }),
      adminHost: '127.0.0.1',
      adminPort: 0,
      listenerGraceMs: 200,
    });
    stable = await startNamedBackend('stable');
    canary = await startNamedBackend('canary');
    holder = net.createServer();
    holder.listen({ host: '127.0.0.1', port: 0 });
    await once(holder, 'listening');
  });
  after(async () => {
    await runtime.stop(0);
    holder.close();
    await Promise.all([stable.close(), canary.close()]);
  });

  test('is refused whole, counted as a failed reload, the listeners it did bind are released, and the old config keeps serving', async () => {
    const webPort = await freePort();
    const freshPort = await freePort();
    const heldPort = (holder.address() as net.AddressInfo).port;
    const web = (stableWeight: number) => ({
      name: 'web',
      listen: `127.0.0.1:${webPort}`,
      backends: [
        { name: 'stable', host: '127.0.0.1', port: stable.port, weight: stableWeight },
        { name: 'canary', host: '127.0.0.1', port: canary.port, weight: 100 - stableWeight },
      ],
    });
    const good = validateConfig({ listeners: [web(100)] }, 'good');
    await runtime.applyConfig(good);

    // Changes the weights, adds a listener that binds, then one on a port another socket holds.
    const added = (name: string, port: number) => ({
      name,
      listen: `127.0.0.1:${port}`,
      backends: [{ name: 'x', host: '127.0.0.1', port: stable.port, weight: 1 }],
    });
    const bad = validateConfig({ listeners: [web(0), added('fresh', freshPort), added('held', heldPort)] }, 'bad');
    await assert.rejects(runtime.applyConfig(bad), (err: Error) => {
      assert.match(err.message, /listener "held" cannot listen on tcp 127\.0\.0\.1:\d+: the address is in use/);
      assert.match(err.message, /EADDRINUSE/);
      assert.ok(err instanceof BindError);
      assert.equal(err.listener, 'held', 'the listener that cannot bind, by name');
      assert.equal(
        err.field,
        `listeners[${bad.listeners.findIndex((listener) => listener.name === 'held')}].listen`,
        'the path of the field to fix',
      );
      return true;
    });
    assert.equal(runtime.dataplane.config, good, 'the running config is still the old one');
    const probe = net.createServer();
    probe.listen({ host: '127.0.0.1', port: freshPort });
    await assert.doesNotReject(
      once(probe, 'listening'),
      `port ${freshPort}, bound by the refused reload, is still held`,
    );
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    const names: string[] = [];
    for (let i = 0; i < 10; i++) names.push(await askName(webPort));
    assert.deepEqual(countBy(names), { stable: 10 }, 'the old weights are still in force');

    const metrics = await (await fetch(`http://127.0.0.1:${runtime.adminPort}/metrics`)).text();
    assert.equal(metricValue(metrics, 'canary_l4_config_reloads_total', { result: 'failure' }), 1);
    assert.equal(metricValue(metrics, 'canary_l4_config_reloads_total', { result: 'success' }), 0, 'the first load');
    assert.equal(metricValue(metrics, 'canary_l4_backend_weight', { listener: 'web', backend: 'stable' }), 100);
    // The refused listener leaves no series behind: it never served.
    assert.equal(metricValue(metrics, 'canary_l4_listener_connections_total', { listener: 'held' }), undefined);
    assert.equal(
      metricValue(metrics, 'canary_l4_backend_connections_total', { listener: 'held', backend: 'x' }),
      undefined,
    );
    assert.equal(
      metricValue(metrics, 'canary_l4_connections_refused_total', { listener: 'held', reason: 'no_backend' }),
      undefined,
    );

    // Once the port is free the same config applies.
    await new Promise<void>((resolve) => holder.close(() => resolve()));
    await runtime.applyConfig(bad);
    await waitFor(async () => (await askName(webPort)) === 'canary', 'the new weights');
  });
});
