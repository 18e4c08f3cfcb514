// A backend with `refuse: true` on a TCP listener (Gateway API: an invalid backendRef's share of
// connections is refused, not given to the others): on both accept paths its share of new
// connections is reset at once, counted on the listener (backend_refused) and on the backend; a
// failover may land on it and is refused too; passive health never takes it out, and while every
// serving backend is held out it does not take their shares, and a rebalance ends no live
// connection to hand it to the refusing backend.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { validateConfig } from '../../../src/config/validate.ts';
import { BackendHealth } from '../../../src/dataplane/choice/passive-health.ts';
import { IdleReadBuffers } from '../../../src/dataplane/resources/idle-read-buffers.ts';
import { DescriptorBudget } from '../../../src/dataplane/resources/descriptor-budget.ts';
import { buildSnapshot, type ListenerSnapshot } from '../../../src/dataplane/routing/routing.ts';
import { snapshotCounters } from '../../../src/dataplane/stats/counters.ts';
import { BackendStats, ListenerStats } from '../../../src/dataplane/stats/stats.ts';
import { TcpListener } from '../../../src/dataplane/tcp/listener.ts';
import net from 'node:net';
import { once } from 'node:events';
import {
  echoOnce,
  exchange,
  startEchoBackend,
  startNamedBackend,
  type Received,
  type TcpBackend,
} from '../../support/net/backends.ts';
import { freePort } from '../../support/net/free-ports.ts';
import { applyOnFreePort, createPlane, metricValue, silentLog } from '../../support/dataplane/test-plane.ts';
import { sleep } from '../../support/wait.ts';

const HOST = '127.0.0.1';

/** What one connection through the proxy got: the backend's name, or how it ended without a byte. */
async function outcome(port: number): Promise<string> {
  // Kept open: a FIN from the proxy would close it cleanly, only a reset ends it with ECONNRESET.
  const { data, error }: Received = await exchange(port, '', { host: HOST, keepOpen: true, timeoutMs: 5000 });
  if (data.length > 0) return data.toString();
  return error?.code ?? 'closed with no byte';
}

async function outcomes(port: number, count: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  // Sequential, so that the counts are wrr's exact split.
  for (let i = 0; i < count; i++) {
    const got = await outcome(port);
    counts[got] = (counts[got] ?? 0) + 1;
  }
  return counts;
}

interface Served {
  readonly listener: TcpListener;
  readonly snapshot: ListenerSnapshot;
  readonly port: number;
}

describe('a backend with refuse: true on a TCP listener', { timeout: 60_000 }, () => {
  let a: TcpBackend;
  const idleReadBuffers = new IdleReadBuffers(60_000);
  const listeners: TcpListener[] = [];

  before(async () => {
    a = await startNamedBackend('A', HOST);
  });
  after(async () => {
    for (const listener of listeners) await listener.drain(0);
    idleReadBuffers.stop();
    await a.close();
  });

  /** A listener of its own on a free port, on the path asked for (it checks the one it took). */
  async function serve(tcpFastPath: boolean, fields: Record<string, unknown>): Promise<Served> {
    const port = await freePort(HOST);
    const config = validateConfig({ listeners: [{ name: 'web', listen: `${HOST}:${port}`, ...fields }] }, 'test');
    const snapshot = buildSnapshot(config.listeners[0]!, new ListenerStats(), () => ({
      health: new BackendHealth(),
      stats: new BackendStats(),
    }));
    const listener = new TcpListener(snapshot, {
      log: silentLog,
      reusePort: false,
      tcpFastPath,
      descriptors: new DescriptorBudget({ capacity: 1000, maxReservePerListener: 10 }).open(),
      onLocalRefusal: () => {},
      idleReadBuffers,
    });
    listeners.push(listener);
    await listener.listen();
    assert.equal(listener.fastPath, tcpFastPath, `the listener takes the ${tcpFastPath ? 'fast' : 'net.Socket'} path`);
    return { listener, snapshot, port };
  }

  const backendStats = (snapshot: ListenerSnapshot, name: string) =>
    snapshot.backends.find((backend) => backend.config.name === name)!.stats;

  for (const [path, tcpFastPath] of [
    ['fast path', true],
    ['net.Socket path', false],
  ] as const) {
    test(`${path}: weights 80/20, 100 connections: exactly 80 reach A, 20 are reset at once`, async () => {
      const acceptedBefore = a.accepted;
      const { snapshot, port } = await serve(tcpFastPath, {
        backends: [
          { name: 'A', host: HOST, port: a.port, weight: 80 },
          { name: 'missing', weight: 20, refuse: true },
        ],
      });
      assert.deepEqual(await outcomes(port, 100), { A: 80, ECONNRESET: 20 });
      assert.equal(a.accepted - acceptedBefore, 80, 'A saw only its own share');
      assert.equal(snapshot.stats.refused.backend_refused, 20);
      assert.equal(snapshot.stats.refused.no_backend, 0);
      assert.equal(snapshot.stats.accepted, 100);
      const missing = backendStats(snapshot, 'missing');
      assert.equal(missing.refused, 20);
      assert.equal(missing.connections, 0);
      assert.equal(missing.markedDown, 0, 'passive health never takes a refusing backend out');
      assert.equal(backendStats(snapshot, 'A').connections, 80);
      assert.equal(backendStats(snapshot, 'A').refused, 0);
    });

    test(`${path}: a failover after a failed connect that lands on the refusing backend is refused`, async () => {
      const deadPort = await freePort(HOST);
      const { snapshot, port } = await serve(tcpFastPath, {
        // maxFails high: the dead backend stays in rotation, so each of its picks fails over.
        maxFails: 1000,
        backends: [
          { name: 'dead', host: HOST, port: deadPort, weight: 50 },
          { name: 'missing', weight: 50, refuse: true },
        ],
      });
      assert.deepEqual(await outcomes(port, 10), { ECONNRESET: 10 });
      const dead = backendStats(snapshot, 'dead');
      const missing = backendStats(snapshot, 'missing');
      assert.equal(dead.connectErrors.refused, 5, "the dead backend's share was tried");
      assert.equal(missing.refused, 10, 'its own share and every failover from the dead one');
      assert.equal(snapshot.stats.refused.backend_refused, 10);
      assert.equal(missing.markedDown, 0);
    });
  }

  test('while every serving backend is held out, the refusing one keeps its share only', async () => {
    // A is taken out by its first failed connect (maxFails 1, for a minute), then comes up: the
    // weights alone place connections (as when all are out), so A's share finds it serving.
    const port = await freePort(HOST);
    const { snapshot, port: proxyPort } = await serve(true, {
      maxFails: 1,
      failTimeoutMs: 60_000,
      backends: [
        { name: 'A', host: HOST, port, weight: 80 },
        { name: 'missing', weight: 20, refuse: true },
      ],
    });
    assert.equal(await outcome(proxyPort), 'ECONNRESET', 'A refused the connect, the failover was refused');
    assert.equal(backendStats(snapshot, 'A').markedDown, 1);
    const revived = await startNamedBackend('A', HOST, port);
    try {
      const counts = await outcomes(proxyPort, 10);
      assert.ok((counts.A ?? 0) >= 7, `A's share reaches A, got ${JSON.stringify(counts)}`);
    } finally {
      await revived.close();
    }
  });

  test('a rebalance to 80/20 with a refusing backend ends no live connection (its share is of new ones)', async () => {
    const echo = await startEchoBackend(HOST);
    const plane = createPlane();
    const clients: net.Socket[] = [];
    try {
      const config = (p: number, refusing: boolean) => ({
        listeners: [
          {
            name: 'web',
            listen: `${HOST}:${p}`,
            rebalanceWindowMs: 200,
            backends: [
              { name: 'A', host: HOST, port: echo.port, weight: refusing ? 80 : 100 },
              ...(refusing ? [{ name: 'missing', weight: 20, refuse: true }] : []),
            ],
          },
        ],
      });
      const port = await applyOnFreePort(plane, (p) => config(p, false));
      for (let i = 0; i < 10; i++) {
        const client = net.connect({ host: HOST, port });
        client.on('error', () => {});
        clients.push(client);
        await once(client, 'connect');
        assert.equal(await echoOnce(client, `hello ${i}`), `hello ${i}`);
      }
      await plane.apply(config(port, true));
      // Nothing to wait for: what is checked is that nothing happens within the window and after it.
      await sleep(600);
      assert.deepEqual(plane.backend('web', 'A').ended, { max_age: 0, rebalance: 0, drain: 0 });
      assert.equal(plane.backend('web', 'A').active, 10);
      for (const [i, client] of clients.entries()) assert.equal(await echoOnce(client, `still ${i}`), `still ${i}`);
    } finally {
      for (const client of clients) client.destroy();
      await plane.close();
      await echo.close();
    }
  });

  test('the refusals are in /metrics and /stats, by listener and by backend', async () => {
    const plane = createPlane();
    try {
      const port = await applyOnFreePort(plane, (p) => ({
        listeners: [
          {
            name: 'web',
            listen: `${HOST}:${p}`,
            backends: [
              { name: 'A', host: HOST, port: a.port, weight: 80 },
              { name: 'missing', weight: 20, refuse: true },
            ],
          },
        ],
      }));
      assert.deepEqual(await outcomes(port, 10), { A: 8, ECONNRESET: 2 });
      const metrics = await plane.metrics();
      const refused = (reason: string) =>
        metricValue(metrics, 'canary_l4_connections_refused_total', { listener: 'web', reason });
      assert.equal(refused('backend_refused'), 2);
      assert.equal(refused('no_backend'), 0);
      assert.equal(metricValue(metrics, 'canary_l4_backend_refused_total', { listener: 'web', backend: 'missing' }), 2);
      assert.equal(metricValue(metrics, 'canary_l4_backend_refused_total', { listener: 'web', backend: 'A' }), 0);
      const stats = snapshotCounters(plane.stats, plane.dataplane.config).listeners.web!;
      assert.equal(stats.missing!.refused, 2);
      assert.equal(stats.A!.refused, 0);
      assert.equal(stats.A!.connections, 8);
    } finally {
      await plane.close();
    }
  });
});
