// High availability: two `canary-l4 proxy` replicas (child processes sharing the proxy ports with
// SO_REUSEPORT, as two pods behind the retargeted Service would each have them) serve the same
// split; one Lease-elected leader writes. The leader is killed mid-lifecycle and the follower
// takes over and finishes the adoption. What the replicas asked of the API is the ClusterRole in
// deploy/proxy-rbac.yaml, exactly.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';

import { suiteTimeout } from '../../support/cluster/api-under-test.ts';
import {
  createRelease,
  createService,
  getService,
  patchRelease,
  proxyGrantsWithoutWorkloads,
  rbacUsed,
  serviceEntry,
  serving,
  setWeight,
  split,
  startBackends,
  startCluster,
  waitForRelease,
  writeProxyKubeconfig,
  type Backends,
  type Cluster,
} from '../../support/cluster/release-cluster.ts';
import { isLeader, metric, startReplica as spawnReplica, type Replica } from './replicas.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { sleep, waitFor } from '../../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const PORT_BASE = await freePortBlock(10);
const SERVICE_PORT = 8600;
const LEASE_SECONDS = 2;

const startReplica = (kubeconfig: string) =>
  spawnReplica(kubeconfig, { release: 'web-ha', portBase: PORT_BASE, leaseSeconds: LEASE_SECONDS });
const connectionsServed = (replica: Replica) =>
  metric(replica, /^canary_l4_listener_connections_total\{listener="web-ha-svc-8600-tcp"\} (\d+)$/m);

describe('two replicas, one leader', { timeout: suiteTimeout(90_000) }, () => {
  let cluster: Cluster;
  let dir: string;
  let backends: Backends | undefined;
  const replicas: Replica[] = [];

  before(async () => {
    cluster = await startCluster(addresses.cidr);
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-ha-'));
  });

  /** A failure naming `err` and the end of what each replica wrote (`err` as its cause). */
  const saidByReplicas = (err: Error) =>
    new Error(
      `${err.message}; the replicas said:\n${replicas.map((replica) => replica.output().slice(-3000)).join('\n---\n')}`,
      { cause: err },
    );

  after(async () => {
    for (const replica of replicas) replica.child.kill('SIGKILL');
    await backends?.close();
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('both replicas serve the split; the follower finishes the release when the leader dies', async () => {
    // A failure says what the replicas logged: on a loaded CI machine that is the only account of why.
    try {
      const kubeconfig = join(dir, 'kubeconfig');
      writeProxyKubeconfig(cluster, kubeconfig);
      await createService(cluster, 'web-ha-svc', [{ name: 'http', port: SERVICE_PORT, targetPort: 9600 }], {
        selector: { app: 'web', version: 'v1' },
      });
      await createRelease(cluster, 'web-ha', {
        services: [
          {
            ...serviceEntry('web-ha-svc', [{ port: SERVICE_PORT, weight: 20 }]),
            canaryServiceOperations: { add: { version: 'v2' } },
          },
        ],
      });
      replicas.push(startReplica(kubeconfig), startReplica(kubeconfig));
      backends = await startBackends(cluster, 'web-ha-svc', [{ port: SERVICE_PORT }]);
      await waitForRelease(cluster, 'web-ha', 'serving', serving, 20_000);
      await waitFor(
        () => replicas.every((replica) => Number.isFinite(replica.adminPort())),
        'both admin servers to say where they listen',
        10_000,
      );
      await waitFor(
        async () => (await Promise.all(replicas.map(isLeader))).filter(Boolean).length === 1,
        'exactly one leader',
        10_000,
      );

      // Each replica runs its own smooth WRR: the sum over both is 80/20 give or take one per replica.
      const counts = await split(PORT_BASE, 200);
      assert.ok(Math.abs((counts.canary ?? 0) - 40) <= 2, `canary got ${counts.canary} of 200 at weight 20`);
      for (const replica of replicas)
        assert.ok((await connectionsServed(replica)) > 0, 'every replica serves connections');

      // The weight change reaches both data planes, though only the leader writes.
      await setWeight(cluster, 'web-ha', 0, 0, 50);
      await waitFor(
        async () => {
          const now = await split(PORT_BASE, 20);
          return Math.abs((now.canary ?? 0) - 10) <= 2;
        },
        'the 50/50 split on both replicas',
        10_000,
      );

      const leaders = await Promise.all(replicas.map(isLeader));
      const leader = replicas[leaders.indexOf(true)]!;
      const follower = replicas[leaders.indexOf(false)]!;
      leader.child.kill('SIGKILL');
      await leader.exited;
      const killedAt = Date.now();
      await patchRelease(cluster, 'web-ha', { spec: { transition: 'Adopted' } });

      // The survivor keeps serving while it waits out the dead leader's lease.
      const during = await split(PORT_BASE, 10);
      assert.equal((during.stable ?? 0) + (during.canary ?? 0), 10, 'connections answered while the lease expires');
      await waitFor(() => isLeader(follower), 'the follower to take the lease', 15_000);
      assert.ok(
        Date.now() - killedAt >= (LEASE_SECONDS - 0.5) * 1000,
        "no takeover before the dead leader's lease expired",
      );
      await waitForRelease(cluster, 'web-ha', 'Adopted', (release) => release?.status?.phase === 'Adopted', 20_000);
      const original = await getService(cluster, 'web-ha-svc');
      assert.deepEqual(
        original?.spec?.selector,
        { app: 'web', version: 'v2' },
        'the original selects the canary pods, not the proxy',
      );
      assert.equal(await getService(cluster, 'web-ha-svc-forked'), undefined);
      assert.equal(await getService(cluster, 'web-ha-svc-canary'), undefined);

      // A graceful stop hands the lease over (released, not left to expire).
      follower.child.kill('SIGTERM');
      assert.equal(
        await Promise.race([follower.exited, sleep(20_000).then(() => 'still running 20 s after SIGTERM')]),
        0,
      );
      await sleep(100);

      assert.deepEqual(
        rbacUsed(cluster),
        proxyGrantsWithoutWorkloads(),
        'the ClusterRole in deploy/proxy-rbac.yaml, but for what only spec.workloads uses, is exactly what the proxy used',
      );
    } catch (err) {
      throw saidByReplicas(err as Error);
    }
  });
});
