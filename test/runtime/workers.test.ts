// `serve --workers 2`: two processes on the same ports (SO_REUSEPORT) behind one admin server. Both
// serve the split; a reload reaches both; a worker that dies is replaced and given the running
// config; a reload the workers refuse leaves every worker on the previous config; SIGTERM
// drains them all and exits 0.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { askName, countBy, runConcurrently, startNamedBackend, type TcpBackend } from '../support/net/backends.ts';
import { freePort } from '../support/net/free-ports.ts';
import { metricValue } from '../support/dataplane/test-plane.ts';
import { startServe, type ServeChild } from '../support/process/serve-child.ts';
import { afterDelivery } from '../support/process/signal-delivery.ts';
import { waitFor } from '../support/wait.ts';

function web(port: number, stablePort: number, canaryPort: number, canaryWeight: number) {
  return {
    name: 'web',
    listen: `127.0.0.1:${port}`,
    backends: [
      { name: 'stable', host: '127.0.0.1', port: stablePort, weight: 100 - canaryWeight },
      { name: 'canary', host: '127.0.0.1', port: canaryPort, weight: canaryWeight },
    ],
  };
}

/** The worker processes: the primary's children, from /proc. */
function workerPids(primary: number): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        // Field 4 of /proc/<pid>/stat is the parent pid (the command in field 2 has no spaces here).
        return Number(readFileSync(`/proc/${pid}/stat`, 'utf8').split(' ')[3]) === primary;
      } catch {
        return false;
      }
    })
    .map(Number);
}

async function split(port: number, n: number): Promise<Record<string, number>> {
  return countBy(await runConcurrently(n, 10, () => askName(port)));
}

describe('serve --workers 2', { timeout: 90_000 }, () => {
  let stable: TcpBackend;
  let canary: TcpBackend;
  let serve: ServeChild;
  let port: number;

  before(async () => {
    stable = await startNamedBackend('stable');
    canary = await startNamedBackend('canary');
    port = await freePort();
    serve = await startServe({ listeners: [web(port, stable.port, canary.port, 20)] }, [
      '--workers',
      '2',
      '--no-watch',
    ]);
  });

  after(async () => {
    await serve?.stop();
    await stable.close();
    await canary.close();
  });

  test('both workers serve the split, and the admin server sums their metrics', async () => {
    assert.equal(workerPids(serve.pid).length, 2);
    const counts = await split(port, 200);
    // Each worker runs its own smooth WRR: the sum is 80/20 give or take one per worker.
    assert.ok(Math.abs((counts.canary ?? 0) - 40) <= 2, JSON.stringify(counts));
    const metrics = (await serve.get('/metrics')).body;
    assert.equal(
      metricValue(metrics, 'canary_l4_listener_connections_total', { listener: 'web' }),
      200,
      'summed over both workers',
    );
    assert.equal(
      metricValue(metrics, 'canary_l4_backend_weight', { listener: 'web', backend: 'canary' }),
      20,
      'a weight is not summed',
    );
    // A process's own metrics stay per worker: CPU seconds of two processes cannot be summed across a restart.
    for (const worker of ['0', '1'])
      assert.ok(
        (metricValue(metrics, 'canary_l4_process_cpu_user_seconds_total', { worker }) ?? 0) > 0,
        `worker ${worker}`,
      );
  });

  test('a SIGHUP reload reaches both workers', async () => {
    serve.writeConfig({ listeners: [web(port, stable.port, canary.port, 0)] });
    serve.child.kill('SIGHUP');
    await waitFor(
      async () => (await split(port, 20)).canary === undefined,
      'no connection to the canary on either worker',
      10_000,
    );
  });

  test('a SIGHUP sent to the workers (a hang-up reaches the whole process group) leaves them serving', async () => {
    const workers = workerPids(serve.pid);
    for (const pid of workers) process.kill(pid, 'SIGHUP');
    for (const pid of workers) {
      assert.equal(await afterDelivery(pid, 'SIGHUP'), 'alive', `worker ${pid} died of SIGHUP`);
    }
    assert.deepEqual(workerPids(serve.pid).sort(), [...workers].sort(), 'a worker died of SIGHUP and was replaced');
    assert.equal(serve.logs().filter((line) => line.msg === 'worker died; starting a replacement').length, 0);
    assert.deepEqual(await split(port, 20), { stable: 20 });
  });

  test('a dead worker is replaced and serves the running config; the summed counters do not go backwards', async () => {
    const counted = async () => {
      const metrics = (await serve.get('/metrics')).body;
      const value = (name: string, labels: Record<string, string>) =>
        metricValue(metrics, `canary_l4_${name}`, labels) ?? Number.NaN;
      return {
        accepted: value('listener_connections_total', { listener: 'web' }),
        stable: value('backend_connections_total', { listener: 'web', backend: 'stable' }),
        bytes: value('bytes_total', { listener: 'web', backend: 'stable', direction: 'to_client' }),
      };
    };
    const before = await counted();
    const [victim] = workerPids(serve.pid);
    process.kill(victim!, 'SIGKILL');
    await waitFor(
      () => {
        const pids = workerPids(serve.pid);
        return pids.length === 2 && !pids.includes(victim!);
      },
      'a replacement worker',
      10_000,
    );
    const after = await counted();
    for (const key of ['accepted', 'stable', 'bytes'] as const) {
      assert.ok(after[key] >= before[key], `${key} went from ${before[key]} to ${after[key]} when a worker died`);
    }
    // Enough connections that the kernel gives the new worker some: all must avoid the canary.
    await waitFor(
      async () => (await split(port, 40)).canary === undefined && (await split(port, 40)).stable === 40,
      'every connection to stable',
      10_000,
    );
  });

  test('a reload the workers cannot apply (a port held elsewhere) leaves them on the previous config', async () => {
    const holder = net.createServer();
    const held = await freePort();
    await new Promise<void>((resolve) => holder.listen({ host: '127.0.0.1', port: held }, resolve));
    try {
      serve.writeConfig({
        listeners: [
          web(port, stable.port, canary.port, 50),
          { ...web(held, stable.port, canary.port, 0), name: 'clash' },
        ],
      });
      serve.child.kill('SIGHUP');
      await waitFor(
        () => serve.logs().some((line) => line.msg === 'config reload refused; the previous config keeps serving'),
        'the reload to be refused',
        10_000,
      );
      const refusal = serve
        .logs()
        .find((line) => line.msg === 'config reload refused; the previous config keeps serving')!;
      assert.match(String(refusal.error), /lb\.yaml: listeners\[1\]\.listen: listener "clash" cannot listen/);
      const counts = await split(port, 40);
      assert.deepEqual(counts, { stable: 40 }, 'the previous weights (canary 0) on every worker');
      const config = JSON.parse((await serve.get('/config')).body) as { listeners: { name: string }[] };
      assert.deepEqual(
        config.listeners.map((listener) => listener.name),
        ['web'],
      );
    } finally {
      holder.close();
    }
  });

  test('SIGTERM drains every worker and exits 0', async () => {
    const workers = workerPids(serve.pid);
    serve.child.kill('SIGTERM');
    const exit = await serve.exited;
    assert.equal(exit.code, 0);
    for (const pid of workers) assert.throws(() => process.kill(pid, 0), 'the worker exited too');
  });
});
