// The proxy under apiserver faults, with real traffic: conflict storms and 500s during the
// rollout, dropped watches, watches from a compacted resourceVersion (410 → relist), failing
// watches, and a 30 s outage during which traffic keeps flowing on the last config.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { metricValue } from '../../support/dataplane/test-plane.ts';
import {
  conditionOf,
  createRelease,
  createService,
  PROXY_USER,
  serviceEntry,
  serving,
  setWeight,
  split,
  startBackends,
  startCluster,
  startProxy,
  waitForRelease,
  type Backends,
  type Cluster,
  type InProcessProxy,
} from '../../support/cluster/release-cluster.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { sleep, waitFor } from '../../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const PORT_BASE = await freePortBlock(10);
const SERVICE_PORT = 8600;
const OUTAGE_MS = 30_000;

describe('apiserver faults', { timeout: 130_000 }, () => {
  let cluster: Cluster;
  let proxy: InProcessProxy;
  let backends: Backends;

  before(async () => {
    cluster = await startCluster(addresses.cidr);
    await createService(cluster, 'api', [{ name: 'http', port: SERVICE_PORT }]);
  });

  after(async () => {
    await proxy?.stop();
    await backends?.close();
    await cluster.stop();
  });

  const weightServed = async (weight: number) => {
    await waitFor(
      async () => metricValue(await proxy.metrics(), 'canary_l4_canary_weight', { service: 'api' }) === weight,
      `weight ${weight} served`,
      15_000,
    );
  };

  it('409 storms and 500s during the rollout: retried with backoff until it converges', async () => {
    cluster.fake.faults.failNext({ verb: 'patch', resource: 'services', code: 409, count: 3 });
    cluster.fake.faults.failNext({ verb: 'create', resource: 'services', code: 500, count: 1 });
    cluster.fake.faults.failNext({ verb: 'patch', resource: 'canaryreleases/status', code: 500, count: 1 });
    await createRelease(cluster, 'api-v2', { services: [serviceEntry('api', [{ port: SERVICE_PORT, weight: 20 }])] });
    proxy = await startProxy(cluster, 'api-v2', PORT_BASE);
    backends = await startBackends(cluster, 'api', [{ port: SERVICE_PORT }]);
    await waitForRelease(cluster, 'api-v2', 'serving', serving, 20_000);
    const failed = cluster.fake.requests.filter((request) => request.user === PROXY_USER && request.code >= 409);
    assert.deepEqual(
      failed.map((request) => request.code).sort(),
      [409, 409, 409, 500, 500],
      'every injected fault was met',
    );
    assert.equal(metricValue(await proxy.metrics(), 'canary_l4_reconcile_total', { result: 'error' }), 5);
    assert.deepEqual(await split(PORT_BASE, 100), { stable: 80, canary: 20 });
    const warnings = proxy.logs().filter((line) => line.msg === 'reconcile failed; retrying');
    assert.ok(warnings.length >= 2 && warnings.length <= 5, 'failures are logged when they change, not per retry');
  });

  it('dropped watches and a compacted history (410, relist): later changes still arrive', async () => {
    cluster.fake.faults.dropWatches({ abrupt: true });
    cluster.fake.faults.compact();
    await setWeight(cluster, 'api-v2', 0, 0, 50);
    await weightServed(50);
    assert.deepEqual(await split(PORT_BASE, 100), { stable: 50, canary: 50 });
  });

  it('failing watches (500) are restarted with backoff', async () => {
    const since = cluster.fake.requests.length;
    cluster.fake.faults.failNext({ verb: 'watch', code: 500, count: 6 });
    cluster.fake.faults.dropWatches();
    // The patch lands while the watches are being refused, not before they broke.
    const refused = () =>
      cluster.fake.requests.slice(since).some((request) => request.verb === 'watch' && request.code === 500);
    await waitFor(refused, 'a refused watch');
    await setWeight(cluster, 'api-v2', 0, 0, 30);
    await weightServed(30);
    assert.deepEqual(await split(PORT_BASE, 10), { stable: 7, canary: 3 });
  });

  it(`an API outage of ${OUTAGE_MS / 1000} s: traffic flows on the last config; changes made after it are applied`, async () => {
    const outage = cluster.fake.faults.refuseConnections(OUTAGE_MS);
    const deadline = Date.now() + OUTAGE_MS - 2_000;
    let checks = 0;
    while (Date.now() < deadline) {
      assert.deepEqual(await split(PORT_BASE, 10), { stable: 7, canary: 3 }, 'traffic during the outage');
      checks += 1;
      await sleep(2_000);
    }
    assert.ok(checks >= 10);
    await outage;
    await setWeight(cluster, 'api-v2', 0, 0, 0);
    await weightServed(0);
    assert.deepEqual(await split(PORT_BASE, 10), { stable: 10 });
    const release = await waitForRelease(
      cluster,
      'api-v2',
      'status shows 0',
      (found) => found?.status?.ports?.[0]?.weight === 0,
    );
    assert.equal(conditionOf(release, 'Failure')?.status, 'False');
  });
});
