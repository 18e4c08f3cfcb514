// Managed canary workloads end to end (issue 12): the fake's Deployment simulation makes
// ReplicaSets and pods, pod servers answer with their pod's image, the kube-proxy simulation routes
// the Services' cluster IPs, and clients keep connecting to the Service while the release makes
// the canary Deployment, splits traffic, follows a patch change, adopts (the stable Deployment
// rolls to the new image, then takes the Service back), and — a second release — deprecates
// itself when the stable Deployment is changed underneath it.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Deployment } from '@kubernetes/client-node';
import { LABEL_TEMPLATE_HASH, LABEL_TRACK } from '../../../src/api/names.ts';

import { startPodServers, type PodServers } from '../../support/cluster/pod-servers.ts';
import {
  createRelease,
  NAMESPACE,
  patchRelease,
  rbacUsed,
  roleGrants,
  serving,
  startProxy,
  waitForRelease,
  waitForService,
  WORKLOAD_ONLY_GRANTS,
  type InProcessProxy,
} from '../../support/cluster/release-cluster.ts';
import { startTestbed, startTraffic, type Testbed } from '../../support/cluster/testbed.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { sleep, waitFor } from '../../support/wait.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);
const simulatedPodNet = loopbackRange(import.meta.url, 2);

const PORT_BASE = await freePortBlock(20);
const IMAGE = (version: number) => `example/web:${version}`;

const stableManifests = [
  {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web' },
    spec: {
      replicas: 2,
      selector: { matchLabels: { app: 'web' } },
      template: {
        metadata: { labels: { app: 'web' } },
        spec: { containers: [{ name: 'web', image: IMAGE(1), ports: [{ containerPort: 8000 }] }] },
      },
    },
  },
  {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web' },
    spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 9000, targetPort: 8000 }] },
  },
];

const release = (image: string, weight: number) => ({
  workloads: [
    { kind: 'Deployment', name: 'web', replicas: 1, patch: { spec: { containers: [{ name: 'web', image }] } } },
  ],
  services: [{ service: 'web', ports: [{ port: 9000, protocol: 'TCP' as const, config: { weight } }] }],
});

describe('managed canary workloads, with the Deployment simulation', { timeout: 120_000 }, () => {
  let bed: Testbed;
  let servers: PodServers;
  let proxy: InProcessProxy | undefined;
  let web = '';

  const deployment = async (name: string): Promise<V1Deployment | undefined> => {
    try {
      return await bed.cluster.apps.readNamespacedDeployment({ name, namespace: NAMESPACE });
    } catch {
      return undefined;
    }
  };
  const imageOf = (item: V1Deployment | undefined) => item?.spec?.template?.spec?.containers[0]?.image;

  before(async () => {
    bed = await startTestbed(serviceNet.cidr, podNet.prefix, {
      simulateDeployments: { podReadyDelayMs: 700, podCidr: simulatedPodNet.cidr },
    });
    servers = await startPodServers({
      kubeConfig: bed.cluster.api.kubeConfig,
      namespace: NAMESPACE,
      labelSelector: 'app=web',
    });
    await bed.kubectl('apply', '-f', await bed.kubectl.manifest('web.yaml', ...stableManifests));
    await bed.kubectl('rollout', 'status', 'deploy/web', '--timeout=30s');
    web = await bed.clusterIp('web');
    await bed.startProxyPod('web-v2');
  });

  after(async () => {
    await proxy?.stop();
    await servers.stop();
    await bed.stop();
  });

  it('makes web-canary from the stable template and the patch; the canary gets no traffic until it has a Ready pod', async () => {
    const traffic = startTraffic(() => web, 9000, 'TCP');
    await createRelease(bed.cluster, 'web-v2', release(IMAGE(2), 50));
    proxy = await startProxy(bed.cluster, 'web-v2', PORT_BASE, { handBackGraceMs: 300 });
    const held = await waitForRelease(
      bed.cluster,
      'web-v2',
      'the weight held while the canary pod is not Ready',
      (found) => found?.status?.weights === 'web:9000=0% (asks 50%)',
    );
    assert.equal(held?.status?.workloads?.[0]?.canary, 'web-canary');
    const canary = await deployment('web-canary');
    assert.equal(imageOf(canary), IMAGE(2));
    assert.equal(canary?.spec?.template?.metadata?.labels?.[LABEL_TRACK], 'canary');
    assert.equal(canary?.metadata?.ownerReferences?.[0]?.kind, 'CanaryRelease');
    // When the canary's pod turned Ready, as the apiserver saw it.
    let readyAt = Infinity;
    await waitFor(
      async () =>
        ((await deployment('web-canary'))?.status?.availableReplicas ?? 0) >= 1 && (readyAt = traffic.now()) > 0,
      'an available canary pod',
      20_000,
    );
    await waitForRelease(
      bed.cluster,
      'web-v2',
      'serving at 50 %',
      (found) => serving(found) && found?.status?.weights === 'web:9000=50%',
      20_000,
    );
    const servedAt = traffic.now();
    await sleep(800);
    await traffic.stop();
    assert.deepEqual(traffic.failures(), [], 'no connection failed');
    const early = traffic.attempts.filter((attempt) => attempt.answer === IMAGE(2) && attempt.end < readyAt - 100);
    assert.deepEqual(early, [], 'no connection reached the canary before its pod was Ready');
    const counts = traffic.counts(servedAt);
    assert.ok(
      (counts[IMAGE(1)] ?? 0) > 0 && (counts[IMAGE(2)] ?? 0) > 0,
      `both versions answer at 50 %: ${JSON.stringify(counts)}`,
    );
  });

  it('pins the stable side to the stable pods: through the forked copy no canary pod ever answers', async () => {
    const forked = await waitForService(
      bed.cluster,
      'web-forked',
      'pinned',
      (found) => found?.spec?.selector?.[LABEL_TEMPLATE_HASH] !== undefined,
    );
    const traffic = startTraffic(() => forked!.spec!.clusterIP!, 9000, 'TCP', { maxAttempts: 30 });
    await waitFor(() => traffic.attempts.length >= 30, '30 connections');
    await traffic.stop();
    assert.deepEqual(traffic.counts(), { [IMAGE(1)]: 30 });
  });

  it('a changed patch rolls the canary Deployment; traffic follows the new canary image', async () => {
    await patchRelease(bed.cluster, 'web-v2', { spec: { workloads: release(IMAGE(3), 50).workloads } });
    await waitFor(async () => imageOf(await deployment('web-canary')) === IMAGE(3), 'the canary Deployment updated');
    const traffic = startTraffic(() => web, 9000, 'TCP');
    await waitFor(() => (traffic.counts()[IMAGE(3)] ?? 0) >= 5, 'the new canary image answering', 20_000);
    await traffic.stop();
  });

  it('Adopted: the stable Deployment rolls to the patch, the Service is handed back to it, the canary goes; no connection fails', async (t) => {
    const traffic = startTraffic(() => web, 9000, 'TCP');
    await patchRelease(bed.cluster, 'web-v2', { spec: { transition: 'Adopted' } });
    await waitFor(async () => imageOf(await deployment('web')) === IMAGE(3), 'the stable Deployment patched', 20_000);
    await bed.kubectl('rollout', 'status', 'deploy/web', '--timeout=60s');
    const done = await waitForRelease(
      bed.cluster,
      'web-v2',
      'Adopted',
      (found) => found?.status?.phase === 'Adopted',
      30_000,
    );
    const adoptedAt = traffic.now();
    await sleep(500);
    await traffic.stop();
    t.diagnostic(JSON.stringify(traffic.counts()));
    assert.deepEqual(traffic.failures(), [], 'no connection failed through the adoption');
    assert.deepEqual(
      Object.keys(traffic.counts(adoptedAt + 100)),
      [IMAGE(3)],
      'afterwards only the new version answers',
    );
    assert.equal(done?.status?.workloads?.[0]?.stablePatched, true);
    const service = await waitForService(
      bed.cluster,
      'web',
      'its own selector back',
      (found) => found?.spec?.selector?.app === 'web',
    );
    assert.deepEqual(service?.spec?.selector, { app: 'web' });
    await waitFor(async () => (await deployment('web-canary')) === undefined, 'the canary Deployment removed');
    assert.deepEqual(
      (await deployment('web'))?.spec?.template?.metadata?.labels,
      { app: 'web' },
      'the stable labels untouched',
    );
    await proxy?.stop();
    proxy = undefined;
  });

  it('a stable rollout underneath a release deprecates it (StableChanged): the canary goes first, then the Service is restored', async (t) => {
    await bed.startProxyPod('web-v4');
    await createRelease(bed.cluster, 'web-v4', release(IMAGE(4), 50));
    proxy = await startProxy(bed.cluster, 'web-v4', PORT_BASE + 10, { handBackGraceMs: 300 });
    await waitForRelease(
      bed.cluster,
      'web-v4',
      'serving at 50 %',
      (found) => serving(found) && found?.status?.weights === 'web:9000=50%',
      20_000,
    );
    const traffic = startTraffic(() => web, 9000, 'TCP');
    await sleep(300);
    await bed.kubectl('set', 'image', 'deploy/web', `web=${IMAGE(5)}`);
    const deprecated = await waitForRelease(
      bed.cluster,
      'web-v4',
      'Deprecated',
      (found) => found?.status?.phase === 'Deprecated',
      30_000,
    );
    const doneAt = traffic.now();
    await sleep(500);
    await traffic.stop();
    t.diagnostic(JSON.stringify(traffic.counts()));
    assert.equal(deprecated?.status?.transition?.reason, 'StableChanged');
    assert.match(
      deprecated?.status?.transition?.message ?? '',
      /the stable Deployment web was changed during the release/,
    );
    assert.deepEqual(traffic.failures(), [], 'no connection failed');
    assert.equal(
      traffic.counts(doneAt + 100)[IMAGE(4)],
      undefined,
      'the rolled-back canary answers nothing afterwards',
    );
    assert.equal(await deployment('web-canary'), undefined);
    assert.deepEqual(
      (await bed.cluster.core.readNamespacedService({ name: 'web', namespace: NAMESPACE })).spec?.selector,
      { app: 'web' },
    );
    await proxy?.stop();
    proxy = undefined;
  });

  it('used the grants of the proxy ClusterRole that only spec.workloads needs, and nothing it does not grant', () => {
    const used = rbacUsed(bed.cluster);
    for (const grant of WORKLOAD_ONLY_GRANTS) assert.ok(used.includes(grant), `${grant} used`);
    const granted = roleGrants('proxy-rbac.yaml', 'ClusterRole', 'canary-l4-proxy');
    assert.deepEqual(
      used.filter((grant) => !granted.includes(grant)),
      [],
      'nothing beyond the ClusterRole',
    );
  });
});
