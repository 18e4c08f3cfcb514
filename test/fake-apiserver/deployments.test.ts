/**
 * The Deployment simulation (`simulateDeployments`): ReplicaSets named by the pod-template-hash,
 * pods that run and become Ready after the delay, rolling and Recreate updates within their bounds,
 * scaling, replacement, history, pausing, garbage collection, the status kubectl reads (`kubectl
 * rollout status`, `kubectl get`), and nothing of it when the option is off.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import { type FakeApiServer, startFakeApiServer } from '../support/fake-apiserver/index.ts';
import { podTemplateHash } from '../support/fake-apiserver/simulation/template-hash.ts';
import { type Kubectl, kubectlFor, watchPods } from '../support/cluster/api-fixtures.ts';
import { requireTool } from '../support/process/required-tool.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const podNet = loopbackRange(import.meta.url);
const serviceNet = loopbackRange(import.meta.url, 1);
const scaleServiceNet = loopbackRange(import.meta.url, 2);

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const READY_DELAY_MS = 200;

function deployment(
  name: string,
  image: string,
  spec: Record<string, unknown> = {},
): V1Deployment & { apiVersion: string; kind: string } {
  const labels = { app: name };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, labels },
    spec: {
      replicas: 3,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: { containers: [{ name: 'web', image, ports: [{ containerPort: 8080 }] }] },
      },
      ...spec,
    },
  };
}

/** Without client-node's classes, for deepEqual. */
const plain = (value: unknown) => JSON.parse(JSON.stringify(value));
const isReady = (pod: V1Pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

describe('Deployment simulation', await requireTool('kubectl'), () => {
  let api: FakeApiServer;
  let k: Kubectl;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  const read = (name: string) => apps.readNamespacedDeployment({ name, namespace: 'default' });
  const replicaSets = async (app: string) =>
    (await apps.listNamespacedReplicaSet({ namespace: 'default', labelSelector: `app=${app}` })).items;
  const podsOf = async (app: string) =>
    (await core.listNamespacedPod({ namespace: 'default', labelSelector: `app=${app}` })).items;
  /** Pods not being deleted: a finished rollout's old pods may still be terminating (graceful deletion). */
  const livePodsOf = async (app: string) => (await podsOf(app)).filter((pod) => !pod.metadata?.deletionTimestamp);
  const rolloutStatus = (name: string) => k('rollout', 'status', `deploy/${name}`, '--timeout=15s');
  const complete = async (name: string) => {
    const d = await read(name);
    const r = d.spec?.replicas;
    return (
      d.status?.observedGeneration === d.metadata?.generation &&
      d.status?.updatedReplicas === r &&
      d.status?.replicas === r &&
      d.status?.availableReplicas === r
    );
  };

  before(async () => {
    api = await startFakeApiServer({
      serviceCidr: serviceNet.cidr,
      simulateDeployments: { podReadyDelayMs: READY_DELAY_MS, podCidr: podNet.cidr },
    });
    k = await kubectlFor(api);
    apps = api.kubeConfig.makeApiClient(AppsV1Api);
    core = api.kubeConfig.makeApiClient(CoreV1Api);
  });
  after(async () => {
    await api?.stop();
    await k?.cleanup();
  });

  it('a Deployment gets a ReplicaSet named by its template hash and pods Ready after the delay; rollout status completes', async () => {
    const times = new Map<string, { added?: number; running?: number; ready?: number }>();
    const watch = watchPods(api, 'web', (_pods, { pod, at }) => {
      const t = times.get(pod.metadata!.name!) ?? {};
      t.added ??= at;
      if (pod.status?.podIP) t.running ??= at;
      if (isReady(pod)) t.ready ??= at;
      times.set(pod.metadata!.name!, t);
    });
    await watch.started;
    assert.match(
      await k('apply', '-f', await k.manifest('web.yaml', deployment('web', 'example/web:1.0'))),
      /deployment.apps\/web created/,
    );
    assert.match(await rolloutStatus('web'), /deployment "web" successfully rolled out/);
    watch.end();

    const d = await read('web');
    const hash = podTemplateHash(d.spec!.template);
    assert.match(hash, /^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/);
    const [rs, ...more] = await replicaSets('web');
    assert.equal(more.length, 0);
    assert.equal(rs?.metadata?.name, `web-${hash}`);
    assert.deepEqual(rs?.metadata?.labels, { app: 'web', 'pod-template-hash': hash });
    assert.deepEqual(plain(rs?.spec?.selector), { matchLabels: { app: 'web', 'pod-template-hash': hash } });
    assert.deepEqual(rs?.spec?.template?.metadata?.labels, { app: 'web', 'pod-template-hash': hash });
    assert.deepEqual(
      rs?.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid, o.controller]),
      [['Deployment', 'web', d.metadata?.uid, true]],
    );
    assert.equal(rs?.metadata?.annotations?.['deployment.kubernetes.io/revision'], '1');
    assert.equal(rs?.spec?.replicas, 3);
    assert.deepEqual(plain(rs?.status), {
      replicas: 3,
      fullyLabeledReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
      observedGeneration: 1,
    });

    const pods = await podsOf('web');
    assert.equal(pods.length, 3);
    for (const pod of pods) {
      assert.match(pod.metadata!.name!, new RegExp(`^web-${hash}-[a-z0-9]{5}$`));
      assert.deepEqual(pod.metadata?.labels, { app: 'web', 'pod-template-hash': hash });
      assert.deepEqual(
        pod.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid, o.controller]),
        [['ReplicaSet', rs?.metadata?.name, rs?.metadata?.uid, true]],
      );
      assert.equal(pod.spec?.containers[0]?.image, 'example/web:1.0');
      assert.equal(pod.status?.phase, 'Running');
      assert.match(pod.status?.podIP ?? '', podNet.addressPattern);
      assert.deepEqual(pod.status?.conditions?.map((c) => `${c.type}=${c.status}`).sort(), [
        'ContainersReady=True',
        'Initialized=True',
        'PodReadyToStartContainers=True',
        'PodScheduled=True',
        'Ready=True',
      ]);
      const t = times.get(pod.metadata!.name!);
      assert.ok(
        t?.added !== undefined &&
          t.running !== undefined &&
          t.ready !== undefined &&
          t.added < t.running &&
          t.running < t.ready,
        `${pod.metadata?.name} seen Pending, Running, then Ready`,
      );
      // Seen from a client, so with the watch's delivery jitter: the delay, give or take.
      assert.ok(t.ready - t.added >= READY_DELAY_MS * 0.75, `Ready ${t.ready - t.added} ms after it was created`);
    }
    assert.equal(new Set(pods.map((pod) => pod.status?.podIP)).size, 3, 'distinct pod IPs');

    // Status through the status subresource: the generation is the spec's alone.
    assert.equal(d.metadata?.generation, 1);
    assert.equal(d.metadata?.annotations?.['deployment.kubernetes.io/revision'], '1');
    const { conditions, ...counts } = d.status!;
    assert.deepEqual(plain(counts), {
      observedGeneration: 1,
      replicas: 3,
      updatedReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
    });
    assert.deepEqual(
      conditions?.map((c) => [c.type, c.status, c.reason, c.message]),
      [
        ['Available', 'True', 'MinimumReplicasAvailable', 'Deployment has minimum availability.'],
        ['Progressing', 'True', 'NewReplicaSetAvailable', `ReplicaSet "web-${hash}" has successfully progressed.`],
      ],
    );

    // The hash is the template's: the same template elsewhere gets the same one.
    await core.createNamespace({ body: { metadata: { name: 'twin' } } });
    await apps.createNamespacedDeployment({ namespace: 'twin', body: deployment('web', 'example/web:1.0') });
    await waitFor(
      async () =>
        (await apps.listNamespacedReplicaSet({ namespace: 'twin' })).items[0]?.metadata?.name === `web-${hash}`,
      "the twin's ReplicaSet",
    );
  });

  it('kubectl apply of a new image rolls within maxSurge/maxUnavailable (rounded as Kubernetes does); the old ReplicaSet stays at 0', async () => {
    // 3 replicas: a surge of 50 % rounds up to 2, unavailability of 50 % down to 1.
    const manifest = (image: string) =>
      k.manifest(
        'roll.yaml',
        deployment('roll', image, {
          strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '50%', maxUnavailable: '50%' } },
        }),
      );
    await k('apply', '-f', await manifest('example/web:1.0'));
    await rolloutStatus('roll');
    const [old] = await replicaSets('roll');
    let fewestReady = Infinity;
    let mostPods = 0;
    const watch = watchPods(api, 'roll', (pods) => {
      fewestReady = Math.min(fewestReady, pods.filter(isReady).length);
      // maxSurge bounds the pods the ReplicaSets count: terminating ones are not among them.
      mostPods = Math.max(mostPods, pods.filter((pod) => !pod.metadata?.deletionTimestamp).length);
    });
    await watch.started;
    assert.match(await k('apply', '-f', await manifest('example/web:2.0')), /deployment.apps\/roll configured/);
    assert.match(await rolloutStatus('roll'), /successfully rolled out/);
    // rollout status returned only once the rollout was done.
    assert.ok(await complete('roll'));
    const pods = await livePodsOf('roll');
    assert.deepEqual(
      pods.map((pod) => [pod.spec?.containers[0]?.image, isReady(pod)]),
      Array(3).fill(['example/web:2.0', true]),
    );
    watch.end();
    assert.equal(fewestReady, 2, 'never fewer than replicas - maxUnavailable Ready pods, and that budget used');
    assert.equal(mostPods, 5, 'never more than replicas + maxSurge pods, and that budget used');

    const sets = await replicaSets('roll');
    const after = sets.find((rs) => rs.metadata?.uid === old?.metadata?.uid);
    const fresh = sets.find((rs) => rs.metadata?.uid !== old?.metadata?.uid);
    assert.equal(sets.length, 2);
    assert.deepEqual(
      [
        after?.spec?.replicas,
        after?.status?.replicas,
        after?.metadata?.annotations?.['deployment.kubernetes.io/revision'],
      ],
      [0, 0, '1'],
    );
    assert.deepEqual(
      [fresh?.spec?.replicas, fresh?.metadata?.annotations?.['deployment.kubernetes.io/revision']],
      [3, '2'],
    );
    const d = await read('roll');
    assert.equal(d.metadata?.annotations?.['deployment.kubernetes.io/revision'], '2');
    assert.equal(d.metadata?.generation, 2);
    assert.equal(
      d.status?.conditions?.find((c) => c.type === 'Progressing')?.message,
      `ReplicaSet "${fresh?.metadata?.name}" has successfully progressed.`,
    );
  });

  it('kubectl set image rolls too, and kubectl get deploy,rs,pods prints the columns a cluster prints', async () => {
    await k('set', 'image', 'deploy/web', 'web=example/web:3.0');
    assert.match(await rolloutStatus('web'), /successfully rolled out/);
    const sets = await replicaSets('web');
    const current = sets.find((rs) => rs.spec?.replicas === 3);
    assert.equal(current?.spec?.template?.spec?.containers[0]?.image, 'example/web:3.0');
    const hash = current?.metadata?.labels?.['pod-template-hash'];
    await waitFor(async () => (await podsOf('web')).length === 3, 'the old pods done terminating');

    const table = (text: string) =>
      text
        .trim()
        .split('\n')
        .map((line) => line.trim().split(/\s{2,}/));
    const [deploys, rsTable, podTable] = (await k('get', 'deploy,rs,pods', '-l', 'app=web')).split('\n\n').map(table);
    assert.deepEqual(deploys?.[0], ['NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE']);
    assert.deepEqual(deploys?.[1]?.slice(0, 4), ['deployment.apps/web', '3/3', '3', '3']);
    assert.deepEqual(rsTable?.[0], ['NAME', 'DESIRED', 'CURRENT', 'READY', 'AGE']);
    assert.deepEqual(
      rsTable
        ?.slice(1)
        .map((row) => row.slice(0, 4))
        .sort(),
      sets
        .map((rs) => [
          `replicaset.apps/${rs.metadata?.name}`,
          ...(rs.spec?.replicas ? ['3', '3', '3'] : ['0', '0', '0']),
        ])
        .sort(),
    );
    assert.deepEqual(podTable?.[0], ['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
    assert.equal(podTable?.length, 4);
    for (const row of podTable!.slice(1))
      assert.deepEqual([row[0]?.startsWith(`pod/web-${hash}-`), ...row.slice(1, 4)], [true, '1/1', 'Running', '0']);
    const wide = table(await k('get', 'rs', `web-${hash}`, '-o', 'wide'));
    assert.deepEqual(wide[0], ['NAME', 'DESIRED', 'CURRENT', 'READY', 'AGE', 'CONTAINERS', 'IMAGES', 'SELECTOR']);
    assert.deepEqual(wide[1]?.slice(5), ['web', 'example/web:3.0', `app=web,pod-template-hash=${hash}`]);
    const widePods = table(await k('get', 'pods', '-l', 'app=web', '-o', 'wide'));
    assert.deepEqual(widePods[0]?.slice(5), ['IP', 'NODE', 'NOMINATED NODE', 'READINESS GATES']);
    assert.match(widePods[1]?.[5] ?? '', podNet.addressPattern);
  });

  it('scales up (kubectl scale) and down, replaces a deleted pod, and takes everything with it when deleted', async () => {
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: deployment('scale', 'example/web:1.0', { replicas: 2 }),
    });
    const readyPods = async (n: number): Promise<V1Pod[]> =>
      (await waitFor(async () => {
        const pods = await podsOf('scale');
        return pods.length === n && pods.every(isReady) ? pods : undefined;
      }, `${n} Ready pods`))!;
    await readyPods(2);
    // kubectl scale: a merge patch of the scale subresource.
    assert.match(await k('scale', 'deploy/scale', '--replicas=5'), /deployment.apps\/scale scaled/);
    await readyPods(5);
    assert.equal((await replicaSets('scale')).length, 1, 'a scale makes no new ReplicaSet');
    await waitFor(() => complete('scale'), 'status at 5');
    await apps.patchNamespacedDeployment(
      { name: 'scale', namespace: 'default', body: { spec: { replicas: 1 } } },
      mergePatch,
    );
    const [survivor] = await readyPods(1);
    const scale = await apps.readNamespacedDeploymentScale({ name: 'scale', namespace: 'default' });
    assert.deepEqual(plain([scale.spec, scale.status]), [{ replicas: 1 }, { replicas: 1, selector: 'app=scale' }]);
    await waitFor(() => complete('scale'), 'status at 1');
    const d = await read('scale');
    assert.deepEqual(
      [
        d.status?.replicas,
        d.status?.readyReplicas,
        d.status?.availableReplicas,
        d.status?.observedGeneration,
        d.metadata?.generation,
      ],
      [1, 1, 1, 3, 3],
    );

    await core.deleteNamespacedPod({ name: survivor!.metadata!.name!, namespace: 'default' });
    const [replacement] = await readyPods(1);
    assert.notEqual(replacement?.metadata?.name, survivor?.metadata?.name);
    assert.notEqual(
      replacement?.status?.podIP,
      survivor?.status?.podIP,
      'a freed address is not handed out again at once',
    );

    await apps.deleteNamespacedDeployment({ name: 'scale', namespace: 'default' });
    await waitFor(
      async () => (await replicaSets('scale')).length === 0 && (await podsOf('scale')).length === 0,
      'ReplicaSets and pods collected',
    );
  });

  it('Recreate: the old pods are gone before any new one starts', async () => {
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: deployment('recreate', 'example/web:1.0', { replicas: 2, strategy: { type: 'Recreate' } }),
    });
    await rolloutStatus('recreate');
    let mixed = false;
    const watch = watchPods(api, 'recreate', (pods) => {
      mixed ||= new Set(pods.map((pod) => pod.spec?.containers[0]?.image)).size > 1;
    });
    await watch.started;
    await apps.patchNamespacedDeployment(
      {
        name: 'recreate',
        namespace: 'default',
        body: { spec: { template: { spec: { containers: [{ name: 'web', image: 'example/web:2.0' }] } } } },
      },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    assert.match(await rolloutStatus('recreate'), /successfully rolled out/);
    watch.end();
    assert.equal(mixed, false, 'no moment with old and new pods together');
    assert.deepEqual(
      (await podsOf('recreate')).map((pod) => pod.spec?.containers[0]?.image),
      ['example/web:2.0', 'example/web:2.0'],
    );
  });

  it('paused: a template change waits for the resume', async () => {
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: deployment('paused', 'example/web:1.0', { replicas: 1 }),
    });
    await rolloutStatus('paused');
    await apps.patchNamespacedDeployment(
      {
        name: 'paused',
        namespace: 'default',
        body: { spec: { paused: true, template: { metadata: { annotations: { v: '2' } } } } },
      },
      mergePatch,
    );
    await waitFor(
      async () =>
        (await read('paused')).status?.conditions?.find((c) => c.type === 'Progressing')?.reason === 'DeploymentPaused',
      'Progressing: DeploymentPaused',
    );
    assert.equal((await replicaSets('paused')).length, 1, 'no new ReplicaSet while paused');
    await apps.patchNamespacedDeployment(
      { name: 'paused', namespace: 'default', body: { spec: { paused: false } } },
      mergePatch,
    );
    assert.match(await rolloutStatus('paused'), /successfully rolled out/);
    assert.equal((await livePodsOf('paused'))[0]?.metadata?.annotations?.v, '2');
  });

  it('keeps revisionHistoryLimit old ReplicaSets; going back to an old template reuses its ReplicaSet as the newest revision', async () => {
    const revisions = async () =>
      Object.fromEntries(
        (await replicaSets('history')).map((rs) => [
          rs.spec?.template?.spec?.containers[0]?.image,
          rs.metadata?.annotations?.['deployment.kubernetes.io/revision'],
        ]),
      );
    const roll = async (image: string) => {
      await k(
        'apply',
        '-f',
        await k.manifest('history.yaml', deployment('history', image, { replicas: 1, revisionHistoryLimit: 1 })),
      );
      await rolloutStatus('history');
      // The clean-up follows the rollout's completion.
      await waitFor(async () => (await replicaSets('history')).length <= 2, 'old ReplicaSets trimmed');
    };
    await roll('example/web:1.0');
    await roll('example/web:2.0');
    assert.deepEqual(await revisions(), { 'example/web:1.0': '1', 'example/web:2.0': '2' });
    await roll('example/web:3.0');
    assert.deepEqual(await revisions(), { 'example/web:2.0': '2', 'example/web:3.0': '3' });
    const before = new Set((await replicaSets('history')).map((rs) => rs.metadata?.uid));
    await roll('example/web:2.0');
    assert.deepEqual(await revisions(), { 'example/web:2.0': '4', 'example/web:3.0': '3' });
    assert.ok(
      (await replicaSets('history')).every((rs) => before.has(rs.metadata?.uid)),
      'no new ReplicaSet for a template that has one',
    );
  });
});

describe('without simulateDeployments', () => {
  let api: FakeApiServer;
  before(async () => {
    api = await startFakeApiServer({ serviceCidr: scaleServiceNet.cidr });
  });
  after(() => api?.stop());

  it('nothing makes ReplicaSets or pods, and the status stays as written', async () => {
    const apps = api.kubeConfig.makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({ namespace: 'default', body: deployment('web', 'example/web:1.0') });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual((await apps.listReplicaSetForAllNamespaces()).items, []);
    assert.deepEqual((await api.kubeConfig.makeApiClient(CoreV1Api).listPodForAllNamespaces()).items, []);
    const d = await apps.readNamespacedDeployment({ name: 'web', namespace: 'default' });
    assert.deepEqual(plain([d.status, d.metadata?.annotations ?? null]), [{}, null]);
  });
});
