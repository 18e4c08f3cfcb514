// The proxy when the API does not answer (issue 9, outages 4 and 5), with clients reaching the
// Service through the kube-proxy simulation:
// - a proxy restarted while the apiserver is unreachable serves its --state-dir config at once;
// - a weight change reaches the data plane at once while every status write fails.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

import { freePort, freePortBlock } from '../../support/net/free-ports.ts';
import { metricValue } from '../../support/dataplane/test-plane.ts';
import { MAIN } from '../../support/process/serve-child.ts';
import {
  conditionOf,
  createRelease,
  NAMESPACE,
  PROXY_USER,
  serviceEntry,
  serving,
  setWeight,
  startProxy,
  waitForRelease,
  writeProxyKubeconfig,
  type InProcessProxy,
} from '../../support/cluster/release-cluster.ts';
import { startTestbed, startTraffic, type Testbed } from '../../support/cluster/testbed.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { sleep, waitFor } from '../../support/wait.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);

const CHILD_BASE = await freePortBlock(10, { udp: true });
const IN_PROCESS_BASE = await freePortBlock(10, { udp: true });
const OUTAGE_MS = 6_000;

const service = (name: string, port: number) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name },
  spec: { selector: { app: name, version: 'v1' }, ports: [{ name: 'tcp', port, targetPort: 8000, protocol: 'TCP' }] },
});

async function readyz(adminPort: number): Promise<number> {
  try {
    return (await fetch(`http://127.0.0.1:${adminPort}/readyz`, { signal: AbortSignal.timeout(500) })).status;
  } catch {
    return 0;
  }
}

describe('when the API does not answer', { timeout: 120_000 }, () => {
  let bed: Testbed;
  let dir: string;
  let kubeconfig: string;

  before(async () => {
    bed = await startTestbed(serviceNet.cidr, podNet.prefix);
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-outages-'));
    kubeconfig = join(dir, 'kubeconfig');
    writeProxyKubeconfig(bed.cluster, kubeconfig);
    await bed.kubectl(
      'apply',
      '-f',
      await bed.kubectl.manifest('services.yaml', service('db', 9000), service('dns', 9100)),
    );
    for (const app of ['db', 'dns']) {
      await bed.startPod(`${app}-v1`, { app, version: 'v1' }, [{ port: 8000 }], 'stable');
      await bed.startPod(`${app}-v2`, { app, version: 'v2' }, [{ port: 8000 }], 'canary');
    }
  });

  after(async () => {
    await bed.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a proxy restarted while the apiserver is unreachable serves its --state-dir config at once: no connection fails', async (t) => {
    await bed.startProxyPod('db-v2', { keys: ['app', 'version'] });
    await createRelease(bed.cluster, 'db-v2', { services: [serviceEntry('db', [{ port: 9000, weight: 20 }])] });
    const adminPort = await freePort();
    const stateDir = join(dir, 'state');
    let child: ChildProcess | undefined;
    const start = () => {
      child = spawn(
        process.execPath,
        [
          MAIN,
          'proxy',
          '--kubeconfig',
          kubeconfig,
          '-n',
          NAMESPACE,
          '--canary-release',
          'db-v2',
          '--port-base',
          String(CHILD_BASE),
          '--admin-port',
          String(adminPort),
          '--admin-host',
          '127.0.0.1',
          '--state-dir',
          stateDir,
          '--no-leader-elect',
          '--log-level',
          'warn',
        ],
        { stdio: 'ignore' },
      );
      return child;
    };
    try {
      start();
      await waitForRelease(bed.cluster, 'db-v2', 'serving', serving, 15_000);
      await waitFor(() => existsSync(join(stateDir, 'served-config.json')), 'the served config saved');
      const ip = await bed.clusterIp('db');
      const traffic = startTraffic(() => ip, 9000, 'TCP');
      await sleep(300);
      const killed = child!;
      killed.kill('SIGKILL');
      await once(killed, 'exit');
      const apiBack = bed.cluster.fake.faults.refuseConnections(OUTAGE_MS);
      const restartedAt = traffic.now();
      start();
      await waitFor(async () => (await readyz(adminPort)) === 200, 'ready before the API answers', OUTAGE_MS - 500);
      const readyAt = traffic.now();
      await apiBack;
      await waitForRelease(bed.cluster, 'db-v2', 'serving again', serving, 15_000);
      await sleep(300);
      await traffic.stop();
      t.diagnostic(
        `ready ${readyAt - restartedAt} ms after the restart (API down for ${OUTAGE_MS} ms); ${JSON.stringify(traffic.counts())}`,
      );
      assert.ok(readyAt - restartedAt < OUTAGE_MS, 'ready while the API was still down');
      assert.deepEqual(traffic.failures(readyAt), [], 'once ready, every connection is served: none waits for the API');
      const served = traffic.counts(readyAt);
      assert.ok(
        (served.stable ?? 0) > 0 && (served.canary ?? 0) > 0,
        `both versions served on the saved config: ${JSON.stringify(served)}`,
      );
    } finally {
      child?.kill('SIGKILL');
    }
  });

  it('a weight change reaches the data plane at once while every status write fails, and status catches up after; an API error that persists is said in status', async (t) => {
    await bed.startProxyPod('dns-v2', { keys: ['app', 'version'] });
    await createRelease(bed.cluster, 'dns-v2', { services: [serviceEntry('dns', [{ port: 9100, weight: 50 }])] });
    let proxy: InProcessProxy | undefined;
    try {
      proxy = await startProxy(bed.cluster, 'dns-v2', IN_PROCESS_BASE);
      await waitForRelease(bed.cluster, 'dns-v2', 'serving', serving, 15_000);
      const canaryWeight = () =>
        proxy!.runtime.dataplane.config.listeners[0]?.backends.find((backend) => backend.name === 'canary')?.weight;
      bed.cluster.fake.faults.failNext({
        verb: 'patch',
        resource: 'canaryreleases',
        subresource: 'status',
        code: 500,
        count: 100_000,
      });
      for (const weight of [10, 0]) {
        await sleep(1_500); // the work loop is backing off from the failing status writes
        const asked = Date.now();
        await setWeight(bed.cluster, 'dns-v2', 0, 0, weight);
        await waitFor(() => canaryWeight() === weight, `weight ${weight} served`, 5_000);
        const tookMs = Date.now() - asked;
        t.diagnostic(`weight ${weight} served ${tookMs} ms after the patch, status writes failing`);
        // The issue asks for 100 ms; this bound leaves room for a loaded CI machine. Before the fix it took 3–21 s.
        assert.ok(tookMs < 1_000, `weight ${weight} served after ${tookMs} ms`);
      }
      const ip = await bed.clusterIp('dns');
      const traffic = startTraffic(() => ip, 9100, 'TCP', { maxAttempts: 20 });
      await waitFor(() => traffic.attempts.length >= 20, '20 connections');
      await traffic.stop();
      assert.deepEqual(traffic.counts(), { stable: 20 }, 'the rollback to 0 % holds for every new connection');
      assert.ok(
        (metricValue(await proxy.metrics(), 'canary_l4_reconcile_total', { result: 'error' }) ?? 0) > 0,
        'the failing writes are counted',
      );
      bed.cluster.fake.faults.reset();
      const release = await waitForRelease(
        bed.cluster,
        'dns-v2',
        'status shows 0 %',
        (found) => found?.status?.ports?.[0]?.weight === 0,
        15_000,
      );
      assert.equal(release?.status?.weights, 'dns:9100=0%');

      // A write that keeps failing before the status write (the drift repair, refused): said in status.
      bed.cluster.fake.faults.failNext({
        user: PROXY_USER,
        verb: 'patch',
        resource: 'services',
        code: 403,
        count: 100_000,
        message: 'services "dns" is forbidden: no patch for you',
      });
      await bed.kubectl('apply', '-f', join(bed.kubectl.home, 'services.yaml'));
      const failing = await waitForRelease(
        bed.cluster,
        'dns-v2',
        'the API error in status',
        (found) => conditionOf(found, 'Failure')?.reason === 'APIError',
        15_000,
      );
      assert.match(
        conditionOf(failing, 'Failure')?.message ?? '',
        /repair dns: 403 Forbidden: services "dns" is forbidden: no patch for you/,
      );
      assert.equal(conditionOf(failing, 'Ready')?.status, 'False');
      bed.cluster.fake.faults.reset();
      const repaired = await waitForRelease(
        bed.cluster,
        'dns-v2',
        'repaired, the failure cleared',
        (found) => conditionOf(found, 'Failure')?.status === 'False',
        15_000,
      );
      assert.equal(conditionOf(repaired, 'Ready')?.status, 'True');
    } finally {
      bed.cluster.fake.faults.reset();
      await proxy?.stop();
    }
  });

  it('after an API outage a weight patch applies within seconds: watches retry at least every 3 s and the work loop resumes with them', async (t) => {
    let proxy: InProcessProxy | undefined;
    try {
      proxy = await startProxy(bed.cluster, 'dns-v2', IN_PROCESS_BASE);
      await waitForRelease(bed.cluster, 'dns-v2', 'serving', serving, 15_000);
      const canaryWeight = () =>
        proxy!.runtime.dataplane.config.listeners[0]?.backends.find((backend) => backend.name === 'canary')?.weight;
      await bed.cluster.fake.faults.refuseConnections(20_000);
      const back = Date.now();
      await setWeight(bed.cluster, 'dns-v2', 0, 0, 40);
      await waitFor(() => canaryWeight() === 40, 'weight 40 served', 15_000);
      const tookMs = Date.now() - back;
      t.diagnostic(`weight served ${tookMs} ms after the API came back from a 20 s outage`);
      // With the backoff doubling to 30 s, as before, the watches came back 11.5 s after the API here.
      assert.ok(tookMs < 6_000, `served ${tookMs} ms after the API came back`);
      await waitForRelease(
        bed.cluster,
        'dns-v2',
        'status follows',
        (found) => found?.status?.ports?.[0]?.served === 40,
        15_000,
      );
    } finally {
      await proxy?.stop();
    }
  });
});
