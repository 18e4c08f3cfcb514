// What a platform team's ordinary day does to a running release's traffic, on two real nodes (the
// real kube-proxy; npm run test:cluster -- --real-node): a proxy pod evicted through the Eviction
// API (its PodDisruptionBudget respected), one deleted with kubectl, the node holding one drained
// with kubectl drain, and one killed with SIGKILL. Clients in node 1's namespace ask the released
// Service the whole time: new TCP connections (a request and a reply each) and UDP datagrams from
// one fixed source port (one conntrack entry, as a long-lived client's). Each scenario prints what
// it cost; evictions, deletes and drains must fail no new TCP connection. UDP is measured, not yet
// held to a bound: a flow pinned (by conntrack) to the proxy pod that goes is answered through its
// whole termination, then lost for about 3 s after its process exits, until kube-proxy drops the
// pod's endpoint and the flow's entry (seen in 2 runs of 4, when the flow was on the evicted pod).
// Not yet here (issue 45): canary-l4's own upgrade, the manager killed mid-rollout, the API server
// restarted, long-lived TCP streams.

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it, type TestContext } from 'node:test';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { GROUP, VERSION } from '../../src/api/names.ts';
import { REAL_API, REAL_NODE } from '../support/cluster/api-under-test.ts';
import { kubectlFor, type Kubectl } from '../support/cluster/api-fixtures.ts';
import type { Traffic } from '../support/cluster/testbed.ts';
import { startTrafficIn } from '../support/net/netns-traffic.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { sleep, waitFor } from '../support/wait.ts';
import { startRealCluster, type RealCluster } from './cluster.ts';
import { webDeployment, webImage } from './web-app.ts';

const addresses = loopbackRange(import.meta.url);
const NS = 'shop';
const IMAGE = webImage;
const PROXY_PODS = 'canary-l4.io/release=web-v2';
/** The UDP clients' one source port. */
const UDP_SOURCE_PORT = 40_053;

const app = webDeployment(NS, [
  { name: 'http', containerPort: 8080 },
  { name: 'dns', containerPort: 5353, protocol: 'UDP' },
]);
const service = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: NS },
  spec: {
    selector: { app: 'web' },
    ports: [
      { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' },
      { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' },
    ],
  },
};
/** The app's own budget, as a team that drains nodes gives every Deployment. */
const budget = {
  apiVersion: 'policy/v1',
  kind: 'PodDisruptionBudget',
  metadata: { name: 'web', namespace: NS },
  spec: { maxUnavailable: 1, selector: { matchLabels: { app: 'web' } } },
};
const release = {
  apiVersion: `${GROUP}/${VERSION}`,
  kind: 'CanaryRelease',
  metadata: { name: 'web-v2', namespace: NS },
  spec: {
    workloads: [
      { kind: 'Deployment', name: 'web', patch: { spec: { containers: [{ name: 'web', image: IMAGE('2.0') }] } } },
    ],
    services: [
      {
        service: 'web',
        ports: [
          { port: 80, protocol: 'TCP', config: { weight: 20 } },
          { port: 53, protocol: 'UDP', config: { weight: 20 } },
        ],
      },
    ],
  },
};

const ready = (pod: V1Pod) =>
  pod.metadata?.deletionTimestamp == null &&
  pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;

/** The process of a pod's container on this host (the simulated kubelet's child): its environment names the pod. */
function processOf(pod: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('canary-l4')) continue;
      if (
        readFileSync(`/proc/${entry}/environ`, 'utf8')
          .split('\0')
          .some((variable) => variable.endsWith(`=${pod}`))
      )
        return Number(entry);
    } catch {
      // exited meanwhile
    }
  }
  return undefined;
}

describe('disruptions to a running release on two real nodes: evicted, deleted, drained, killed', {
  skip: REAL_API && REAL_NODE ? false : 'needs real nodes: npm run test:cluster -- --real-node',
  timeout: 600_000,
}, () => {
  let cluster: RealCluster;
  let dir: string;
  let kubectl: Kubectl;
  let core: CoreV1Api;
  let tcp: Traffic;
  let udp: Traffic;

  const proxyPods = async () => (await core.listNamespacedPod({ namespace: NS, labelSelector: PROXY_PODS })).items;
  /** Both proxy pods Ready and none terminating: the Deployment has replaced what was taken. */
  const twoReadyProxies = (what: string) =>
    waitFor(
      async () => {
        const pods = await proxyPods();
        return pods.length === 2 && pods.every(ready);
      },
      `two Ready proxy pods again after ${what}`,
      120_000,
    );
  /**
   * Runs `disrupt`, waits for `settled`, then a few seconds more (kube-proxy's syncs, the UDP
   * clients' timeouts), and says what the clients saw meanwhile.
   */
  const measure = async (
    t: TestContext,
    what: string,
    disrupt: () => Promise<void>,
    settled: () => Promise<unknown>,
  ) => {
    const from = { tcp: tcp.now(), udp: udp.now() };
    await disrupt();
    await settled();
    await sleep(3000);
    const failed = { tcp: tcp.failures(from.tcp), udp: udp.failures(from.udp) };
    const total = {
      tcp: tcp.attempts.filter((attempt) => attempt.at >= from.tcp).length,
      udp: udp.attempts.filter((attempt) => attempt.at >= from.udp).length,
    };
    const gap = (attempts: readonly { at: number; end: number }[]) =>
      attempts.length === 0
        ? 0
        : Math.max(...attempts.map((attempt) => attempt.end)) - Math.min(...attempts.map((attempt) => attempt.at));
    const when = (attempts: readonly { at: number; error?: string }[], since: number) =>
      attempts.map((attempt) => `${attempt.at - since} ms ${attempt.error ?? ''}`.trim()).join('; ');
    t.diagnostic(
      `${what}: TCP ${failed.tcp.length} of ${total.tcp} new connections failed (over ${gap(failed.tcp)} ms), ` +
        `UDP ${failed.udp.length} of ${total.udp} datagrams unanswered (over ${gap(failed.udp)} ms); ` +
        `settled ${tcp.now() - 3000 - from.tcp} ms after it began`,
    );
    if (failed.tcp.length + failed.udp.length > 0)
      t.diagnostic(`failed, ms after it began: TCP ${when(failed.tcp, from.tcp)}; UDP ${when(failed.udp, from.udp)}`);
    return { failed, total };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-disruption-'));
    cluster = await startRealCluster({ dir, serviceCidr: addresses.cidr, podSubnet: addresses.octet, realNode: true });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    kubectl = await kubectlFor(cluster.plane);
  });

  after(async () => {
    await tcp?.stop();
    await udp?.stop();
    await kubectl?.cleanup();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a release runs: the manager from deploy/, the app with its budget, the split served through the real kube-proxy', async () => {
    await kubectl('apply', '--server-side', '-k', join(import.meta.dirname, '../../deploy'));
    await kubectl('rollout', 'status', '-n', 'canary-l4-system', 'deployment/canary-l4-manager', '--timeout=120s');
    await kubectl('create', 'namespace', NS);
    await kubectl('apply', '-f', await kubectl.manifest('web.yaml', app, service, budget));
    await kubectl('rollout', 'status', '-n', NS, 'deployment/web', '--timeout=60s');
    await kubectl('apply', '-f', await kubectl.manifest('web-v2.yaml', release));
    await twoReadyProxies('the release started');
    const serviceIp = (await core.readNamespacedService({ name: 'web', namespace: NS })).spec!.clusterIP!;
    await waitFor(
      async () =>
        (await core.readNamespacedService({ name: 'web', namespace: NS })).spec?.selector?.app === 'canary-l4.web-v2',
      'the Service taken over',
      60_000,
    );
    const netns = cluster.nodes![0]!.netns;
    tcp = await startTrafficIn(netns, serviceIp, 80, 'TCP', { pauseMs: 20, maxMs: 540_000 });
    udp = await startTrafficIn(netns, serviceIp, 53, 'UDP', {
      pauseMs: 20,
      maxMs: 540_000,
      udpTimeoutMs: 1000,
      udpSourcePort: UDP_SOURCE_PORT,
    });
    await waitFor(() => (tcp.counts()[IMAGE('2.0')] ?? 0) > 5, 'the canary answering through the proxies', 30_000);
    assert.deepEqual(tcp.failures(), []);
  });

  // A proxy pod taken away as the API lets a platform team: the Deployment replaces it.
  const removals: [string, string, (victim: string) => Promise<unknown>][] = [
    [
      'a proxy pod evicted through the Eviction API (its PodDisruptionBudget allows one)',
      'evicted',
      (victim) =>
        core.createNamespacedPodEviction({
          name: victim,
          namespace: NS,
          body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: victim, namespace: NS } },
        }),
    ],
    [
      'a proxy pod deleted with kubectl delete pod',
      'deleted',
      (victim) => kubectl('delete', 'pod', '-n', NS, victim, '--wait=false'),
    ],
  ];
  for (const [title, done, remove] of removals) {
    it(`${title}: no new TCP connection fails`, async (t) => {
      const victim = (await proxyPods()).find(ready)!.metadata!.name!;
      const { failed } = await measure(
        t,
        `${done} ${victim}`,
        async () => void (await remove(victim)),
        () => twoReadyProxies(`${done} ${victim}`),
      );
      assert.deepEqual(failed.tcp, [], 'no new connection failed');
    });
  }

  it('kubectl drain of the node a proxy pod runs on (the other node takes its pods): no new TCP connection fails', async (t) => {
    const node = (await proxyPods()).find(ready)!.spec!.nodeName!;
    const { failed } = await measure(
      t,
      `drained ${node}`,
      async () => {
        await kubectl.within(200_000, 'drain', node, '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=180s');
      },
      () => twoReadyProxies('a drain'),
    );
    await kubectl('uncordon', node);
    assert.deepEqual(failed.tcp, [], 'no new connection failed');
  });

  it('a proxy pod killed with SIGKILL: what fails is what was in flight on it until its endpoint leaves', async (t) => {
    const victim = (await proxyPods()).find(ready)!;
    const pid = processOf(victim.metadata!.name!);
    const restarts = victim.status?.containerStatuses?.[0]?.restartCount ?? 0;
    assert.ok(pid !== undefined, `the process of ${victim.metadata!.name}`);
    const { failed, total } = await measure(
      t,
      `SIGKILL to ${victim.metadata!.name} (pid ${pid})`,
      async () => {
        process.kill(pid, 'SIGKILL');
      },
      // Its container restarts in the same pod: the pod turns unready, then Ready again.
      () =>
        waitFor(
          async () => {
            const pod = await core.readNamespacedPod({ name: victim.metadata!.name!, namespace: NS });
            return (pod.status?.containerStatuses?.[0]?.restartCount ?? 0) > restarts && ready(pod);
          },
          'the killed container restarted and Ready again',
          120_000,
        ),
    );
    // Bounded, not zero: every connection through the killed process, and those kube-proxy sent it
    // until the pod's endpoint left (its readiness probe: 5 s, twice), then none.
    assert.ok(failed.tcp.length < total.tcp / 2, `most connections succeed: ${failed.tcp.length} of ${total.tcp}`);
  });
});
