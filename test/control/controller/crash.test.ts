// Crash at every step: `canary-l4 proxy` runs as a child process and is SIGKILLed right after each
// write it makes (the fake tells us synchronously, as it answers), then restarted, through a run,
// an adoption, a deprecation and a deletion. After every kill no original Service selects nothing,
// and each phase ends exactly where an uninterrupted proxy would have ended it.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { ANNOTATION_ORIGINAL, LABEL_ROLE } from '../../../src/api/names.ts';
import type { CanaryRelease } from '../../../src/api/release-types.ts';

import { MAIN } from '../../support/process/serve-child.ts';
import {
  createRelease,
  createService,
  getRelease,
  getService,
  NAMESPACE,
  patchRelease,
  PROXY_USER,
  serviceEntry,
  serving,
  startCluster,
  writeProxyKubeconfig,
  type Cluster,
  takenOver,
} from '../../support/cluster/release-cluster.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { sleep } from '../../support/wait.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);

const PORT_BASE = await freePortBlock(10);
const SERVICE_PORT = 8800;
const MUTATING = new Set(['create', 'update', 'patch', 'delete']);
/** A proxy that made no write for this long after the phase looked done has converged. */
const QUIET_MS = 1_000;
const MAX_RESTARTS_PER_PHASE = 20;
const PHASE_TIMEOUT_MS = 15_000;

function owned(service: V1Service | undefined): unknown {
  const { resourceVersion: _rv, generation: _generation, ...metadata } = service?.metadata ?? {};
  return { metadata, spec: service?.spec };
}

describe('crash at every step', { timeout: 240_000 }, () => {
  let cluster: Cluster;
  let dir: string;
  let kubeconfig: string;
  let child: ChildProcess | undefined;

  before(async () => {
    cluster = await startCluster(serviceNet.cidr, {
      simulateDeployments: { podReadyDelayMs: 100, podCidr: podNet.cidr },
    });
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-crash-'));
    kubeconfig = join(dir, 'kubeconfig');
    writeProxyKubeconfig(cluster, kubeconfig);
    await createService(cluster, 'crash', [{ name: 'http', port: SERVICE_PORT, targetPort: 9800 }], {
      type: 'NodePort',
    });
  });

  after(async () => {
    child?.kill('SIGKILL');
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** After every kill: each original Service selects something, and one on the proxy can be restored. */
  async function assertNothingSelectsNothing(): Promise<void> {
    const { items } = await cluster.core.listNamespacedService({ namespace: NAMESPACE });
    for (const service of items.filter((item) => item.metadata?.labels?.[LABEL_ROLE] === undefined)) {
      const name = service.metadata?.name;
      assert.ok(Object.keys(service.spec?.selector ?? {}).length > 0, `Service ${name} selects nothing`);
      if (Object.values(service.spec?.selector ?? {}).some((value) => value.startsWith('canary-l4.')))
        assert.ok(
          service.metadata?.annotations?.[ANNOTATION_ORIGINAL],
          `Service ${name} selects the proxy with no saved original`,
        );
    }
  }

  /**
   * Runs the proxy for `release`, killing it after each of its writes and starting it again, until
   * `done` holds and a proxy stays quiet for QUIET_MS. Resolves with the number of kills.
   */
  async function runUntil(release: string, done: (found: CanaryRelease | undefined) => boolean): Promise<number> {
    for (let kills = 0; kills < MAX_RESTARTS_PER_PHASE; kills++) {
      let killed = false;
      const proxy = spawn(
        process.execPath,
        [
          MAIN,
          'proxy',
          '--kubeconfig',
          kubeconfig,
          '-n',
          NAMESPACE,
          '--canary-release',
          release,
          '--port-base',
          String(PORT_BASE),
          '--admin-port',
          '0',
          '--admin-host',
          '127.0.0.1',
          '--log-level',
          'warn',
          // One writer per run here: a Lease held by the killed incarnation would only add its expiry to every restart.
          '--no-leader-elect',
          '--hand-back-grace',
          '1',
        ],
        { stdio: 'ignore' },
      );
      child = proxy;
      const exited = new Promise((resolve) => proxy.once('exit', resolve));
      const unsubscribe = cluster.fake.onRequest((request) => {
        // Events are reports, not state: a kill after one tests nothing and would never let a phase end.
        if (
          killed ||
          request.user !== PROXY_USER ||
          !MUTATING.has(request.verb) ||
          request.code >= 300 ||
          request.resource === 'events'
        )
          return;
        killed = true;
        proxy.kill('SIGKILL');
      });
      try {
        let quietSince: number | undefined;
        const deadline = Date.now() + PHASE_TIMEOUT_MS;
        while (!killed) {
          const found = await getRelease(cluster, release);
          assert.ok(
            Date.now() < deadline,
            `${release}: neither a write nor convergence within ${PHASE_TIMEOUT_MS} ms; status ${JSON.stringify(found?.status)}`,
          );
          const converged = done(found);
          quietSince = converged ? (quietSince ?? Date.now()) : undefined;
          if (quietSince !== undefined && Date.now() - quietSince >= QUIET_MS) {
            proxy.kill('SIGKILL');
            await exited;
            return kills;
          }
          await sleep(50);
        }
        await exited;
        await assertNothingSelectsNothing();
      } finally {
        unsubscribe();
        proxy.kill('SIGKILL');
      }
    }
    assert.fail(`${release}: not converged after ${MAX_RESTARTS_PER_PHASE} restarts`);
  }

  const archived = (phase: string) => (found: CanaryRelease | undefined) =>
    found?.status?.phase === phase && !found.metadata.finalizers?.length;

  it('run, then Adopted', async (t) => {
    const original = await getService(cluster, 'crash');
    await createRelease(cluster, 'crash-v2', {
      services: [serviceEntry('crash', [{ port: SERVICE_PORT, weight: 20 }])],
    });
    const runKills = await runUntil('crash-v2', serving);
    assert.ok(runKills >= 5, `every write of the rollout was interrupted (${runKills} kills)`);
    const retargeted = await getService(cluster, 'crash');
    assert.deepEqual(retargeted?.spec?.selector, takenOver('crash-v2'));
    assert.equal(retargeted?.spec?.ports?.[0]?.targetPort, PORT_BASE);
    assert.deepEqual(
      (await getRelease(cluster, 'crash-v2'))?.status?.ports?.map((port) => port.proxyPort),
      [PORT_BASE],
      'one proxy port, allocated once',
    );

    await patchRelease(cluster, 'crash-v2', { spec: { transition: 'Adopted' } });
    const adoptKills = await runUntil('crash-v2', archived('Adopted'));
    assert.ok(adoptKills >= 4, `every write of the adoption was interrupted (${adoptKills} kills)`);
    t.diagnostic(`kills: ${runKills} during the run, ${adoptKills} during the adoption`);
    const adopted = await getService(cluster, 'crash');
    assert.deepEqual(adopted?.spec?.selector, { app: 'crash', version: 'v2' });
    assert.deepEqual(adopted?.spec?.ports, original?.spec?.ports);
    assert.equal(adopted?.metadata?.annotations?.[ANNOTATION_ORIGINAL], undefined);
    assert.equal(await getService(cluster, 'crash-forked'), undefined);
    assert.equal(await getService(cluster, 'crash-canary'), undefined);
  });

  it('run, then Deprecated: the Service exactly as before', async (t) => {
    const original = await getService(cluster, 'crash');
    await createRelease(cluster, 'crash-v3', {
      services: [serviceEntry('crash', [{ port: SERVICE_PORT, weight: 10 }], 'v3')],
    });
    await runUntil('crash-v3', serving);
    await patchRelease(cluster, 'crash-v3', { spec: { transition: 'Deprecated' } });
    const kills = await runUntil('crash-v3', archived('Deprecated'));
    assert.ok(kills >= 4, `every write of the deprecation was interrupted (${kills} kills)`);
    t.diagnostic(`kills: ${kills} during the deprecation`);
    assert.deepEqual(owned(await getService(cluster, 'crash')), owned(original));
    assert.equal(await getService(cluster, 'crash-forked'), undefined);
    assert.equal(await getService(cluster, 'crash-canary'), undefined);
  });

  it('run, then the CanaryRelease deleted: the Service restored first, then the release goes', async (t) => {
    const original = await getService(cluster, 'crash');
    await createRelease(cluster, 'crash-v4', {
      services: [serviceEntry('crash', [{ port: SERVICE_PORT, weight: 10 }], 'v4')],
    });
    await runUntil('crash-v4', serving);
    await cluster.custom.deleteNamespacedCustomObject({
      group: 'canary-l4.io',
      version: 'v1alpha1',
      namespace: NAMESPACE,
      plural: 'canaryreleases',
      name: 'crash-v4',
    });
    const kills = await runUntil('crash-v4', (found) => found === undefined);
    assert.ok(kills >= 3, `every write of the deletion was interrupted (${kills} kills)`);
    t.diagnostic(`kills: ${kills} during the deletion`);
    assert.deepEqual(owned(await getService(cluster, 'crash')), owned(original));
    assert.equal(await getService(cluster, 'crash-forked'), undefined);
    assert.equal(await getService(cluster, 'crash-canary'), undefined);
  });

  describe('with a managed canary workload (spec.workloads)', () => {
    const stable = (image: string) => ({
      metadata: { name: 'crashw' },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: 'crashw' } },
        template: { metadata: { labels: { app: 'crashw' } }, spec: { containers: [{ name: 'main', image }] } },
      },
    });
    const workloadRelease = (image: string) => ({
      workloads: [{ name: 'crashw', patch: { spec: { containers: [{ name: 'main', image }] } } }],
      services: [
        { service: 'crashw', ports: [{ port: SERVICE_PORT, protocol: 'TCP' as const, config: { weight: 30 } }] },
      ],
    });
    const imageOf = async () =>
      (await cluster.apps.readNamespacedDeployment({ name: 'crashw', namespace: NAMESPACE })).spec?.template?.spec
        ?.containers[0]?.image;
    const canaryGone = async () =>
      cluster.apps.readNamespacedDeployment({ name: 'crashw-canary', namespace: NAMESPACE }).then(
        () => false,
        () => true,
      );

    before(async () => {
      await cluster.apps.createNamespacedDeployment({ namespace: NAMESPACE, body: stable('example/crashw:1') });
      await createService(cluster, 'crashw', [{ name: 'http', port: SERVICE_PORT, targetPort: 9800 }], {
        selector: { app: 'crashw' },
      });
    });

    it('run, then Adopted: the stable Deployment takes the patch, the Service its own selector, the canary goes', async (t) => {
      await createRelease(cluster, 'crashw-v2', workloadRelease('example/crashw:2'));
      const runKills = await runUntil(
        'crashw-v2',
        (found) => serving(found) && found?.status?.workloads?.[0]?.canaryReady === '1/1',
      );
      await patchRelease(cluster, 'crashw-v2', { spec: { transition: 'Adopted' } });
      const adoptKills = await runUntil('crashw-v2', archived('Adopted'));
      t.diagnostic(`kills: ${runKills} during the run, ${adoptKills} during the adoption`);
      assert.ok(adoptKills >= 5, `every write of the adoption was interrupted (${adoptKills} kills)`);
      assert.equal(await imageOf(), 'example/crashw:2');
      assert.deepEqual((await getService(cluster, 'crashw'))?.spec?.selector, { app: 'crashw' });
      assert.equal(await canaryGone(), true);
    });

    it('run, then Deprecated: the canary goes, the Service and the stable Deployment as they were', async (t) => {
      const original = await getService(cluster, 'crashw');
      await createRelease(cluster, 'crashw-v3', workloadRelease('example/crashw:3'));
      await runUntil('crashw-v3', serving);
      await patchRelease(cluster, 'crashw-v3', { spec: { transition: 'Deprecated' } });
      const kills = await runUntil('crashw-v3', archived('Deprecated'));
      t.diagnostic(`kills: ${kills} during the deprecation`);
      assert.ok(kills >= 4, `every write of the deprecation was interrupted (${kills} kills)`);
      assert.deepEqual(owned(await getService(cluster, 'crashw')), owned(original));
      assert.equal(await imageOf(), 'example/crashw:2', 'the stable Deployment is left as the last adoption made it');
      assert.equal(await canaryGone(), true);
    });
  });
});
