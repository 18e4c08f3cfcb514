/**
 * Graceful pod deletion with the Deployment simulation on: a deleted pod is terminating
 * (deletionTimestamp, not Ready, still Running and still served) for min(grace, podTerminationMs),
 * then gone, with its replacement already there; gracePeriodSeconds 0 (kubectl --grace-period=0
 * --force) removes it at once; a repeated DELETE does not restart the clock; finalizers hold it
 * past the grace; the garbage collector's deletions are graceful too; without the simulation
 * deletion stays immediate. And end to end: a rolling update under continuous connections through
 * the kube-proxy simulation loses none, and kube-proxy routes nothing to a terminating pod, even a
 * Ready one.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import { type FakeApiServer, type FakeApiServerOptions, startFakeApiServer } from '../support/fake-apiserver/index.ts';
import { type KubeProxy, startKubeProxy } from '../support/cluster/kube-proxy.ts';
import { type PodServers, startPodServers } from '../support/cluster/pod-servers.ts';
import { Pods } from '../support/cluster/pods.ts';
import { requireTool } from '../support/process/required-tool.ts';
import { kubectlFor, refused, tcpAnswer, watchPods } from '../support/cluster/api-fixtures.ts';
import { freePortBlock } from '../support/net/free-ports.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);
const heldServiceNet = loopbackRange(import.meta.url, 2);
const heldPodNet = loopbackRange(import.meta.url, 3);

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const TERMINATION_MS = 800;
/** The pods' container port: free on every address, as the pods share this host. */
const PORT = await freePortBlock(1);
const NS = 'default';

const condition = (pod: V1Pod | undefined, type: string) =>
  pod?.status?.conditions?.find((c) => c.type === type)?.status;
const isReady = (pod: V1Pod) => condition(pod, 'Ready') === 'True';
const terminating = (pod: V1Pod) => pod.metadata?.deletionTimestamp != null;

function deployment(name: string, image: string, replicas: number, podSpec: Record<string, unknown> = {}) {
  const labels = { app: name };
  return {
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: 'web', image, ports: [{ containerPort: PORT }] }], ...podSpec },
      },
    },
  };
}

/** A fake apiserver for a describe block, and the simulations its tests start; all stopped after it. */
function fakeCluster(options: FakeApiServerOptions) {
  const c = {} as { api: FakeApiServer; apps: AppsV1Api; core: CoreV1Api; servers?: PodServers; proxy?: KubeProxy };
  before(async () => {
    c.api = await startFakeApiServer(options);
    c.apps = c.api.kubeConfig.makeApiClient(AppsV1Api);
    c.core = c.api.kubeConfig.makeApiClient(CoreV1Api);
  });
  after(async () => {
    await c.proxy?.stop();
    await c.servers?.stop();
    await c.api?.stop();
  });
  return c;
}

describe('graceful pod termination (simulateDeployments)', () => {
  const c = fakeCluster({
    serviceCidr: serviceNet.cidr,
    simulateDeployments: { podReadyDelayMs: 100, podCidr: podNet.cidr, podTerminationMs: TERMINATION_MS },
  });

  /** The pod, or undefined once it is gone. */
  const read = async (name: string): Promise<V1Pod | undefined> => {
    try {
      return await c.core.readNamespacedPod({ name, namespace: NS });
    } catch (e) {
      if (e instanceof ApiException && e.code === 404) return undefined;
      throw e;
    }
  };
  const podsOf = async (app: string) =>
    (await c.core.listNamespacedPod({ namespace: NS, labelSelector: `app=${app}` })).items;
  /** `n` Ready pods of `app`, none terminating, each served by the pod servers. */
  const servedPods = async (app: string, n: number): Promise<V1Pod[]> =>
    (await waitFor(async () => {
      const pods = await podsOf(app);
      const ok =
        pods.length === n &&
        pods.every(
          (pod) =>
            isReady(pod) && !terminating(pod) && c.servers?.listening().includes(`${pod.status?.podIP}:${PORT}/TCP`),
        );
      return ok ? pods : undefined;
    }, `${n} served Ready ${app} pods`))!;
  /** Polls until the pod is gone; how long after `since` that was. */
  const goneAfter = async (name: string, since: number): Promise<number> => {
    await waitFor(async () => (await read(name)) === undefined, `${name} gone`);
    return performance.now() - since;
  };
  const startServers = async (app: string) => {
    await c.servers?.stop();
    c.servers = await startPodServers({ kubeConfig: c.api.kubeConfig, namespace: NS, labelSelector: `app=${app}` });
  };

  it('a deleted pod is terminating: deletionTimestamp, not Ready, still Running and served, replaced at once; gone after the grace', async () => {
    await startServers('grace');
    await c.apps.createNamespacedDeployment({ namespace: NS, body: deployment('grace', 'example/grace:1', 2) });
    const [victim] = await servedPods('grace', 2);
    const name = victim!.metadata!.name!;
    const ip = victim!.status!.podIP!;

    const since = performance.now();
    const answered = await c.core.deleteNamespacedPod({ name, namespace: NS });
    // The apiserver's answer: the pod, marked, with spec.terminationGracePeriodSeconds (defaulted to 30).
    assert.equal(answered.metadata?.deletionGracePeriodSeconds, 30);
    const due = new Date(answered.metadata!.deletionTimestamp!).getTime();
    assert.ok(
      Math.abs(due - (Date.now() + 30_000)) <= 2000,
      `deletionTimestamp ${answered.metadata?.deletionTimestamp} is about now + 30 s`,
    );

    const marked = await waitFor(
      async () => {
        const pod = await read(name);
        return pod && condition(pod, 'Ready') === 'False' && condition(pod, 'ContainersReady') === 'False'
          ? pod
          : undefined;
      },
      'the terminating pod reported not Ready',
      TERMINATION_MS / 2,
    );
    assert.equal(marked?.status?.phase, 'Running');
    assert.equal(marked?.status?.podIP, ip);
    assert.deepEqual(
      marked?.status?.containerStatuses?.map((c) => c.ready),
      [false],
    );
    assert.equal(
      new Date(marked!.metadata!.deletionTimestamp!).getTime(),
      due,
      'the status write leaves the deletion as it was',
    );

    // The ReplicaSet counts it out and has its replacement while it still terminates.
    const [rs] = (await c.apps.listNamespacedReplicaSet({ namespace: NS, labelSelector: 'app=grace' })).items;
    await waitFor(
      async () => {
        const live = (await podsOf('grace')).filter((pod) => !terminating(pod));
        return live.length === 2 && !live.some((pod) => pod.metadata?.name === name);
      },
      'a replacement pod',
      TERMINATION_MS / 2,
    );
    const counted = await c.apps.readNamespacedReplicaSetStatus({ name: rs!.metadata!.name!, namespace: NS });
    assert.equal(counted.status?.replicas, 2, "the terminating pod is not among the ReplicaSet's replicas");
    assert.ok(await read(name), 'still there meanwhile');
    assert.equal(await tcpAnswer(ip, PORT), 'example/grace:1', 'its server still answers during the grace');

    const gone = await goneAfter(name, since);
    assert.ok(
      gone >= TERMINATION_MS - 100 && gone < TERMINATION_MS + 2000,
      `gone ${Math.round(gone)} ms after the DELETE (podTerminationMs ${TERMINATION_MS})`,
    );
    await waitFor(() => refused(ip, PORT), 'its server closed once it was gone');
  });

  it('gracePeriodSeconds 0 (and kubectl delete --grace-period=0 --force) removes a pod at once; so does a template grace of 0', async () => {
    const [first, second] = await servedPods('grace', 2);
    const answered = await c.core.deleteNamespacedPod({
      name: first!.metadata!.name!,
      namespace: NS,
      gracePeriodSeconds: 0,
    });
    assert.equal(answered.metadata?.name, first!.metadata!.name);
    assert.equal(await read(first!.metadata!.name!), undefined, 'gone as the DELETE returned');
    await waitFor(() => refused(first!.status!.podIP!, PORT), 'its server closed');

    if ((await requireTool('kubectl')).skip === false) {
      const k = await kubectlFor(c.api);
      try {
        await k('delete', 'pod', second!.metadata!.name!, '--grace-period=0', '--force', '--wait=false');
      } finally {
        await k.cleanup();
      }
      assert.equal(await read(second!.metadata!.name!), undefined, 'kubectl --grace-period=0 --force: gone at once');
    }

    await c.apps.createNamespacedDeployment({
      namespace: NS,
      body: deployment('nograce', 'example/nograce:1', 1, { terminationGracePeriodSeconds: 0 }),
    });
    const [pod] =
      (await waitFor(async () => {
        const pods = await podsOf('nograce');
        return pods.length === 1 && isReady(pods[0]!) ? pods : undefined;
      }, 'a Ready nograce pod')) ?? [];
    await c.core.deleteNamespacedPod({ name: pod!.metadata!.name!, namespace: NS });
    assert.equal(await read(pod!.metadata!.name!), undefined, 'spec.terminationGracePeriodSeconds 0: gone at once');
    await c.apps.deleteNamespacedDeployment({ name: 'nograce', namespace: NS });
  });

  it('a repeated DELETE does not restart the clock; only an explicitly shorter grace period shortens it', async () => {
    const [first, second] = await servedPods('grace', 2);
    const name = first!.metadata!.name!;
    const since = performance.now();
    const marked = await c.core.deleteNamespacedPod({ name, namespace: NS });
    await sleep(TERMINATION_MS / 2);
    const again = await c.core.deleteNamespacedPod({ name, namespace: NS });
    assert.equal(again.metadata?.deletionTimestamp?.toISOString(), marked.metadata?.deletionTimestamp?.toISOString());
    assert.equal(again.metadata?.deletionGracePeriodSeconds, 30);
    const longer = await c.core.deleteNamespacedPod({ name, namespace: NS, gracePeriodSeconds: 60 });
    assert.equal(longer.metadata?.deletionGracePeriodSeconds, 30, 'a longer grace period changes nothing');
    const gone = await goneAfter(name, since);
    // Restarted by the second DELETE, it would have gone TERMINATION_MS after that one.
    assert.ok(gone < TERMINATION_MS * 1.5 - 100, `gone ${Math.round(gone)} ms after the first DELETE`);

    const other = second!.metadata!.name!;
    const started = await c.core.deleteNamespacedPod({ name: other, namespace: NS });
    const shorter = await c.core.deleteNamespacedPod({ name: other, namespace: NS, gracePeriodSeconds: 5 });
    assert.equal(shorter.metadata?.deletionGracePeriodSeconds, 5);
    const moved = started.metadata!.deletionTimestamp!.getTime() - shorter.metadata!.deletionTimestamp!.getTime();
    assert.ok(
      Math.abs(moved - 25_000) <= 1000,
      `the deletionTimestamp moved ${moved} ms earlier: 5 s from the first DELETE`,
    );
    await c.core.deleteNamespacedPod({ name: other, namespace: NS, gracePeriodSeconds: 0 });
    assert.equal(await read(other), undefined, 'a grace period cut to 0 removes it now');
  });

  it('finalizers hold a terminating pod past its grace (deletionGracePeriodSeconds 0 then); removing them during the grace does not cut it short', async () => {
    const [held, early] = await servedPods('grace', 2);
    for (const pod of [held!, early!]) {
      await c.core.patchNamespacedPod(
        { name: pod.metadata!.name!, namespace: NS, body: { metadata: { finalizers: ['example.com/hold'] } } },
        mergePatch,
      );
    }
    const since = performance.now();
    await c.core.deleteNamespacedPod({ name: held!.metadata!.name!, namespace: NS });
    await c.core.deleteNamespacedPod({ name: early!.metadata!.name!, namespace: NS });
    await c.core.patchNamespacedPod(
      { name: early!.metadata!.name!, namespace: NS, body: { metadata: { finalizers: null } } },
      mergePatch,
    );
    assert.ok(await read(early!.metadata!.name!), 'still terminating once its finalizer is gone');
    const earlyGone = await goneAfter(early!.metadata!.name!, since);
    assert.ok(
      earlyGone >= TERMINATION_MS - 100,
      `gone ${Math.round(earlyGone)} ms after the DELETE, at the end of the grace`,
    );

    const after = await waitFor(async () => {
      const pod = await read(held!.metadata!.name!);
      return pod?.metadata?.deletionGracePeriodSeconds === 0 ? pod : undefined;
    }, 'the grace over, the finalizer holding the pod');
    assert.deepEqual(after?.metadata?.finalizers, ['example.com/hold']);
    // Its containers have exited (a deleted pod ends in a terminal phase), so nothing answers for it.
    assert.equal(after?.status?.phase, 'Succeeded');
    assert.deepEqual(
      after?.status?.containerStatuses?.map((c) => c.state?.terminated?.exitCode),
      [0],
    );
    await waitFor(() => refused(held!.status!.podIP!, PORT), 'its server closed with its containers');
    await c.core.patchNamespacedPod(
      { name: held!.metadata!.name!, namespace: NS, body: { metadata: { finalizers: null } } },
      mergePatch,
    );
    assert.equal(await read(held!.metadata!.name!), undefined, 'gone with its last finalizer');
  });

  it("the garbage collector deletes a deleted Deployment's pods gracefully: terminating and served, then gone", async () => {
    const pods = await servedPods('grace', 2);
    await c.apps.deleteNamespacedDeployment({ name: 'grace', namespace: NS });
    const marked = (await waitFor(async () => {
      const now = await podsOf('grace');
      return now.length === 2 && now.every(terminating) ? now : undefined;
    }, 'both pods terminating'))!;
    assert.deepEqual(marked.map((pod) => pod.metadata?.uid).sort(), pods.map((pod) => pod.metadata?.uid).sort());
    for (const pod of pods) assert.equal(await tcpAnswer(pod.status!.podIP!, PORT), 'example/grace:1');
    await waitFor(async () => (await podsOf('grace')).length === 0, 'the pods gone');
    assert.deepEqual((await c.apps.listNamespacedReplicaSet({ namespace: NS, labelSelector: 'app=grace' })).items, []);
  });

  it('a pod never bound to a node goes at once', async () => {
    await c.core.createNamespacedPod({
      namespace: NS,
      body: { metadata: { name: 'unbound' }, spec: { containers: [{ name: 'c', image: 'x' }] } },
    });
    await c.core.deleteNamespacedPod({ name: 'unbound', namespace: NS, gracePeriodSeconds: 30 });
    assert.equal(await read('unbound'), undefined);
  });

  it("a rolling update under continuous connections through the Service's cluster IP: none fails; each old pod terminates, still answering", async (t) => {
    const REPLICAS = 6;
    const [OLD, NEW] = ['example/traffic:1', 'example/traffic:2'];
    await startServers('traffic');
    c.proxy = await startKubeProxy({ kubeConfig: c.api.kubeConfig, namespace: NS });
    await c.apps.createNamespacedDeployment({ namespace: NS, body: deployment('traffic', OLD, REPLICAS) });
    const service = await c.core.createNamespacedService({
      namespace: NS,
      body: {
        metadata: { name: 'traffic' },
        spec: { selector: { app: 'traffic' }, ports: [{ port: 80, targetPort: PORT }] },
      },
    });
    const ip = service.spec!.clusterIP!;
    await servedPods('traffic', REPLICAS);
    await waitFor(() => c.proxy!.listeners().includes(`${ip}:80/TCP`), "the Service's listener");

    // Each old pod, as the watch sees it: when it turned terminating, whether its own server still
    // answered then, when it was gone. Whether a connection happens to race a removal is luck; this
    // is what makes it safe, so it is checked for every pod.
    const old = new Map<string, { terminatingAt?: number; answered?: Promise<string>; deletedAt?: number }>();
    const watch = watchPods(c.api, 'traffic', (_pods, { type, pod, at }) => {
      if (pod.spec?.containers[0]?.image !== OLD) return;
      const seen = old.get(pod.metadata!.name!) ?? {};
      old.set(pod.metadata!.name!, seen);
      if (type === 'DELETED') seen.deletedAt = at;
      else if (terminating(pod) && seen.terminatingAt === undefined) {
        seen.terminatingAt = at;
        seen.answered = tcpAnswer(pod.status!.podIP!, PORT).catch(
          (e: NodeJS.ErrnoException) => `failed: ${e.code ?? e.message}`,
        );
      }
    });
    await watch.started;

    const answers = new Map<string, number>();
    const failures: string[] = [];
    let attempts = 0;
    let stopping = false;
    const MAX_ATTEMPTS = 1500;
    // Many clients, each one connection at a time with a pause: a few hundred connections over the
    // rollout, with some always on their way when a pod leaves.
    const clients = Array.from({ length: 16 }, async () => {
      while (!stopping && attempts < MAX_ATTEMPTS) {
        attempts++;
        try {
          const answer = await tcpAnswer(ip, 80);
          if (answer === '') failures.push('closed without an answer');
          else answers.set(answer, (answers.get(answer) ?? 0) + 1);
        } catch (e) {
          failures.push((e as NodeJS.ErrnoException).code ?? (e as Error).message);
        }
        await sleep(30);
      }
    });
    await waitFor(() => attempts >= 50, '50 connections before the rollout');
    const before = attempts;
    await c.apps.patchNamespacedDeployment(
      {
        name: 'traffic',
        namespace: NS,
        body: { spec: { template: { spec: { containers: [{ name: 'web', image: NEW }] } } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    await waitFor(
      async () => {
        const pods = await podsOf('traffic');
        return pods.length === REPLICAS && pods.every((pod) => isReady(pod) && pod.spec?.containers[0]?.image === NEW);
      },
      'the rollout done and the old pods gone',
      10_000,
    );
    const during = attempts - before;
    await waitFor(() => attempts >= before + during + 50, '50 connections after it');
    stopping = true;
    await Promise.all(clients);
    watch.end();

    t.diagnostic(
      `${attempts} connections, ${during} during the rollout: ${JSON.stringify(Object.fromEntries(answers))}, failed: ${JSON.stringify(failures)}`,
    );
    assert.ok(attempts < MAX_ATTEMPTS, `the rollout finished within ${MAX_ATTEMPTS} connections`);
    assert.ok(during >= 100, `${during} connections during the rollout`);
    assert.deepEqual(failures, [], 'no connection failed');
    assert.ok((answers.get(OLD) ?? 0) > 0 && (answers.get(NEW) ?? 0) > 0, 'both versions answered');
    assert.deepEqual(c.proxy.counters('traffic', 80), {
      accepted: attempts,
      rejectedNoEndpoints: 0,
      upstreamFailed: 0,
    });
    assert.equal(old.size, REPLICAS);
    for (const [name, seen] of old) {
      assert.ok(
        seen.terminatingAt !== undefined && seen.deletedAt !== undefined,
        `${name} seen terminating, then deleted`,
      );
      assert.equal(await seen.answered, OLD, `${name} answered on its pod IP once terminating`);
      assert.ok(
        seen.deletedAt - seen.terminatingAt >= TERMINATION_MS - 150,
        `${name} terminating for ${Math.round(seen.deletedAt - seen.terminatingAt)} ms`,
      );
    }
  });
});

describe('without simulateDeployments', () => {
  const c = fakeCluster({ serviceCidr: heldServiceNet.cidr });

  it('a pod goes at once, even bound to a node and asked for a grace period', async () => {
    await c.core.createNamespacedPod({
      namespace: NS,
      body: { metadata: { name: 'bound' }, spec: { nodeName: 'node-1', containers: [{ name: 'c', image: 'x' }] } },
    });
    await new Pods(c.api.kubeConfig, NS).markReady('bound', heldPodNet.ip(200));
    await c.core.deleteNamespacedPod({ name: 'bound', namespace: NS, gracePeriodSeconds: 30 });
    await assert.rejects(
      c.core.readNamespacedPod({ name: 'bound', namespace: NS }),
      (e: unknown) => e instanceof ApiException && e.code === 404,
    );
  });

  it('kube-proxy sends a terminating pod no new connection even while it is Ready; its pod server still answers', async () => {
    // No kubelet here: the finalizer keeps the deleted pod, Running and Ready as the test left it.
    await c.core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'held', labels: { app: 'held' }, finalizers: ['example.com/hold'] },
        spec: {
          nodeName: 'node-1',
          containers: [{ name: 'web', image: 'example/held:1', ports: [{ containerPort: PORT }] }],
        },
      },
    });
    await new Pods(c.api.kubeConfig, NS).markReady('held', heldPodNet.ip(1));
    const service = await c.core.createNamespacedService({
      namespace: NS,
      body: {
        metadata: { name: 'held' },
        spec: { selector: { app: 'held' }, ports: [{ port: 80, targetPort: PORT }] },
      },
    });
    const ip = service.spec!.clusterIP!;
    c.servers = await startPodServers({ kubeConfig: c.api.kubeConfig, namespace: NS, labelSelector: 'app=held' });
    c.proxy = await startKubeProxy({ kubeConfig: c.api.kubeConfig, namespace: NS });
    await waitFor(
      () =>
        tcpAnswer(ip, 80).then(
          (answer) => answer === 'example/held:1',
          () => false,
        ),
      'an answer through the Service',
    );

    await c.core.deleteNamespacedPod({ name: 'held', namespace: NS });
    const pod = await c.core.readNamespacedPod({ name: 'held', namespace: NS });
    assert.ok(terminating(pod) && isReady(pod), 'terminating and still Ready');
    await waitFor(
      () =>
        tcpAnswer(ip, 80).then(
          () => false,
          (e: NodeJS.ErrnoException) => e.code === 'ECONNRESET',
        ),
      'connections to the Service reset: no endpoint',
    );
    assert.ok(c.proxy.counters('held', 80).rejectedNoEndpoints > 0);
    assert.equal(await tcpAnswer(heldPodNet.ip(1), PORT), 'example/held:1', 'the pod itself still answers');
  });
});
