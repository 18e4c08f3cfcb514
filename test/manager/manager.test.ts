// `canary-l4 manager` against the fake apiserver, as processes, with the kubelet simulation running
// every proxy pod it asks for as a real `canary-l4 proxy` process: a CanaryRelease gets its proxy
// and its traffic split, spec.proxy rolls it, a hand-deleted Deployment and hand-edited objects come
// back, the Lease moves to the other manager, a new image rolls the proxy, an invalid spec.proxy is
// said on its release while the others go on, a deleted release keeps (and gets back) its proxy
// until its Services are handed back, and Adopted removes everything. What the managers and the
// proxies asked of the API is exactly deploy/'s RBAC.

import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  AppsV1Api,
  PatchStrategy,
  PolicyV1Api,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type KubernetesObject,
  type V1Deployment,
} from '@kubernetes/client-node';
import { LABEL_RELEASE } from '../../src/api/names.ts';
import type { CanaryRelease } from '../../src/api/release-types.ts';
import type { CanaryReleaseSpec } from '../../src/api/spec-types.ts';
import { LABEL_MANAGED_BY, MANAGED_BY, PROXY_CONDITION } from '../../src/manager/names.ts';
import type { ManagedRelease } from '../../src/api/proxy-types.ts';

import { startKubelet, type Kubelet } from '../support/cluster/kubelet.ts';
import { Pods } from '../support/cluster/pods.ts';
import { MAIN } from '../support/process/serve-child.ts';
import { apiError, kubectlFor, type Kubectl } from '../support/cluster/api-fixtures.ts';
import {
  conditionOf,
  createRelease,
  createService,
  getRelease,
  getService,
  MANAGER_ADMISSION_ONLY_GRANTS,
  MANAGER_GATEWAY_ONLY_GRANTS,
  NAMESPACE,
  patchRelease,
  proxyGrantsWithoutWorkloads,
  roleGrants,
  serviceEntry,
  serving,
  split,
  startBackends,
  startCluster,
  waitForRelease,
  type Backends,
  type Cluster,
} from '../support/cluster/release-cluster.ts';
import { freePortBlock } from '../support/net/free-ports.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';
import { Http1KubeConfig } from '../../src/kube/client.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);

const SYSTEM = 'canary-l4-system';
const MANAGER_USER = `system:serviceaccount:${SYSTEM}:canary-l4-manager`;
const IMAGE_1 = 'canary-l4:test-1';
const IMAGE_2 = 'canary-l4:test-2';
/** Proxy ports per release: each pod would have its own network namespace; here they share the host. */
const PORT_BASES: Record<string, number> = { 'web-v2': await freePortBlock(10), 'api-v2': await freePortBlock(10) };
/** Any other release's pods (none expected). */
const OTHER_PORT_BASE = await freePortBlock(10);
/** The proxies run in pods: they listen on the Service's own targetPort (with SO_REUSEPORT, as the pods share this host). */
const WEB_TARGET_PORT = 9376;
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

interface Manager {
  readonly name: string;
  readonly child: ChildProcess;
  readonly exited: Promise<number | null>;
  output(): string;
  adminPort(): number;
}

describe('canary-l4 manager', { timeout: 180_000 }, () => {
  let cluster: Cluster;
  let kubelet: Kubelet;
  let kubectl: Kubectl;
  let apps: AppsV1Api;
  let rbac: RbacAuthorizationV1Api;
  let policy: PolicyV1Api;
  let pods: Pods;
  let dir: string;
  let kubeconfig: string;
  let backends: Backends | undefined;
  const managers: Manager[] = [];

  function startManager(name: string, args: string[], env: Record<string, string> = {}): Manager {
    const child = spawn(
      process.execPath,
      [
        MAIN,
        'manager',
        '--kubeconfig',
        kubeconfig,
        '--admin-port',
        '0',
        '--admin-host',
        '127.0.0.1',
        '--lease-duration',
        '2',
        ...args,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH, HOME: dir, ...env } },
    );
    let output = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    // A test run that dies must not leave a manager running (it would keep writing to nothing).
    process.once('exit', () => child.kill('SIGKILL'));
    const manager: Manager = {
      name,
      child,
      exited: new Promise((resolve) => child.once('exit', (code) => resolve(code))),
      output: () => output,
      adminPort: () => Number(/"adminPort":(\d+)/.exec(output)?.[1] ?? Number.NaN),
    };
    managers.push(manager);
    return manager;
  }

  const alive = (manager: Manager) => manager.child.exitCode === null && manager.child.signalCode === null;

  async function leads(manager: Manager): Promise<boolean> {
    if (!Number.isFinite(manager.adminPort()) || !alive(manager)) return false;
    const text = await (await fetch(`http://127.0.0.1:${manager.adminPort()}/metrics`)).text();
    return /^canary_l4_leader 1$/m.test(text);
  }

  async function stopManager(manager: Manager): Promise<void> {
    manager.child.kill('SIGTERM');
    assert.equal(await manager.exited, 0, `${manager.name} stops cleanly: ${manager.output().slice(-2000)}`);
  }

  const deployment = async (name: string): Promise<V1Deployment | undefined> =>
    apps
      .readNamespacedDeployment({ name, namespace: NAMESPACE })
      .catch((err: { code?: number }) => (err.code === 404 ? undefined : Promise.reject(err)));

  /** The objects the manager keeps in the release namespace, as `Kind/name`. */
  async function managed(): Promise<string[]> {
    const labelSelector = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;
    const lists: [string, Promise<{ items: KubernetesObject[] }>][] = [
      ['Deployment', apps.listNamespacedDeployment({ namespace: NAMESPACE, labelSelector })],
      ['PodDisruptionBudget', policy.listNamespacedPodDisruptionBudget({ namespace: NAMESPACE, labelSelector })],
      ['Service', cluster.core.listNamespacedService({ namespace: NAMESPACE, labelSelector })],
      ['ServiceAccount', cluster.core.listNamespacedServiceAccount({ namespace: NAMESPACE, labelSelector })],
      ['RoleBinding', rbac.listNamespacedRoleBinding({ namespace: NAMESPACE, labelSelector })],
    ];
    const found = await Promise.all(
      lists.map(async ([kind, list]) => (await list).items.map((item) => `${kind}/${item.metadata?.name}`)),
    );
    return found.flat().sort();
  }

  const proxyCondition = (release: CanaryRelease | undefined) =>
    release?.status?.conditions?.find((condition) => (condition.type as string) === PROXY_CONDITION);
  const proxyOf = async (release: string) =>
    ((await getRelease(cluster, release)) as ManagedRelease | undefined)?.status?.proxy;

  before(async () => {
    cluster = await startCluster(serviceNet.cidr);
    apps = cluster.api.kubeConfig.makeApiClient(AppsV1Api);
    rbac = cluster.api.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    policy = cluster.api.kubeConfig.makeApiClient(PolicyV1Api);
    pods = new Pods(cluster.api.kubeConfig, NAMESPACE);
    kubectl = await kubectlFor(cluster.api);
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-manager-'));
    kubeconfig = join(dir, 'kubeconfig');
    const config = new Http1KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'fake', server: cluster.api.url, skipTLSVerify: true }],
      users: [{ name: MANAGER_USER, token: MANAGER_USER }],
      contexts: [{ name: 'fake', cluster: 'fake', user: MANAGER_USER }],
      currentContext: 'fake',
    });
    writeFileSync(kubeconfig, config.exportConfig());
    await cluster.core.createNamespace({ body: { metadata: { name: SYSTEM } } });
    // The managers' own pods, as the fake knows them: their image is the proxies' unless told otherwise.
    for (const [pod, image] of [
      ['canary-l4-manager-a', IMAGE_1],
      ['canary-l4-manager-c', IMAGE_2],
    ] as const) {
      await cluster.core.createNamespacedPod({
        namespace: SYSTEM,
        body: { metadata: { name: pod }, spec: { containers: [{ name: 'manager', image, args: ['manager'] }] } },
      });
    }
    kubelet = await startKubelet({
      kubeConfig: cluster.api.kubeConfig,
      apiUrl: cluster.api.url,
      labelSelector: `${LABEL_MANAGED_BY}=${MANAGED_BY}`,
      images: { [IMAGE_1]: [process.execPath, MAIN], [IMAGE_2]: [process.execPath, MAIN] },
      podNet: podNet.prefix,
      adminPort: { env: 'CANARY_L4_ADMIN_PORT', fromLog: /"adminPort":(\d+)/ },
      env: (pod) => ({
        CANARY_L4_PORT_BASE: String(PORT_BASES[pod.metadata?.labels?.[LABEL_RELEASE] ?? ''] ?? OTHER_PORT_BASE),
        CANARY_L4_REUSE_PORT: 'true',
        CANARY_L4_LEASE_DURATION: '2',
        // No hand-back grace: the fake's kube-proxy-free world routes nothing stale.
        CANARY_L4_HAND_BACK_GRACE: '0',
      }),
    });
    await createService(cluster, 'web', [{ name: 'http', port: 8000, targetPort: WEB_TARGET_PORT }]);
    await createService(cluster, 'api', [{ name: 'http', port: 8100, targetPort: 9377 }]);
  });

  after(async () => {
    for (const manager of managers) manager.child.kill('SIGKILL');
    await backends?.close();
    await kubelet?.stop();
    await kubectl?.cleanup();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('two managers, one leader; a CanaryRelease gets its proxy: objects, pods as processes, status.proxy, the PROXY column, traffic split by weight', async () => {
    const a = startManager('a', ['--pod-name', 'canary-l4-manager-a', '--pod-namespace', SYSTEM]);
    // Every flag also from the environment.
    startManager('b', [], {
      CANARY_L4_PROXY_IMAGE: IMAGE_1,
      CANARY_L4_POD_NAMESPACE: SYSTEM,
      CANARY_L4_NAMESPACE: NAMESPACE,
    });
    await createRelease(cluster, 'web-v2', { services: [serviceEntry('web', [{ port: 8000, weight: 20 }])] });
    const withProxy: CanaryReleaseSpec = {
      services: [serviceEntry('api', [{ port: 8100, weight: 10 }])],
      ...{ proxy: { replicas: 1 } },
    };
    await createRelease(cluster, 'api-v2', withProxy);
    // The app answers on the copies' cluster IPs (a pod Ready in the API answers): a proxy pod turns
    // Ready only once the copies it sends traffic to accept its connections.
    backends = await startBackends(cluster, 'web', [{ port: 8000 }]);
    // The proxy's status writes can briefly carry an older ProxyAvailable (its cache lags the
    // manager's write by a watch event); the manager puts it right at once.
    // The first pods know no Service: once the proxy has written status.takeover the manager rolls
    // them to pods carrying its labels, and only then is the Service taken over.
    const release = (await waitForRelease(
      cluster,
      'web-v2',
      'two ready proxies, serving',
      (found) =>
        (found as ManagedRelease | undefined)?.status?.proxy?.readyReplicas === 2 &&
        serving(found) &&
        proxyCondition(found)?.status === 'True',
      60_000,
    )) as ManagedRelease;
    const pod = (
      await cluster.core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `${LABEL_RELEASE}=web-v2` })
    ).items[0];
    assert.equal(pod?.metadata?.labels?.app, 'canary-l4.web-v2', 'the proxy pods carry the takeover labels');
    assert.deepEqual((await getService(cluster, 'web'))?.spec?.selector, {
      app: 'canary-l4.web-v2',
      version: 'canary-l4.web-v2',
    });
    await waitFor(
      async () => (await Promise.all(managers.map(leads))).filter(Boolean).length === 1,
      'exactly one leading manager',
      10_000,
    );

    assert.deepEqual(await managed(), [
      'Deployment/canary-l4-api-v2',
      'Deployment/canary-l4-web-v2',
      'PodDisruptionBudget/canary-l4-api-v2',
      'PodDisruptionBudget/canary-l4-web-v2',
      'RoleBinding/canary-l4-api-v2',
      'RoleBinding/canary-l4-web-v2',
      'Service/canary-l4-api-v2-metrics',
      'Service/canary-l4-web-v2-metrics',
      'ServiceAccount/canary-l4-api-v2',
      'ServiceAccount/canary-l4-web-v2',
    ]);
    const web = (await deployment('canary-l4-web-v2'))!;
    assert.deepEqual(
      web.metadata?.ownerReferences?.map((ref) => [ref.kind, ref.name, ref.uid, ref.controller]),
      [['CanaryRelease', 'web-v2', release.metadata.uid, true]],
    );
    assert.equal(web.spec?.template.spec?.containers[0]?.image, IMAGE_1, "manager a's own image, read from its pod");
    const proxy = release.status!.proxy!;
    assert.deepEqual(
      [proxy.deployment, proxy.replicas, proxy.readyReplicas, proxy.updatedReplicas, proxy.ready],
      ['canary-l4-web-v2', 2, 2, 2, '2/2'],
    );
    assert.equal(proxy.pods.length, 2);
    assert.ok(
      proxy.pods.every((pod) => pod.ready && pod.phase === 'Running' && pod.restarts === 0 && pod.node !== undefined),
    );
    assert.deepEqual(
      kubelet.running().filter((name) => name.startsWith('canary-l4-web-v2-')),
      proxy.pods.map((pod) => pod.name),
      'each pod is a running process',
    );
    assert.equal(proxyCondition(release)?.status, 'True');

    // Cut at the header's columns: an empty cell (no steps: no STEP) keeps its place.
    const [header = '', row = ''] = (await kubectl('get', 'crel', 'web-v2')).trim().split('\n');
    const starts = [...header.matchAll(/\S+/g)].map((match) => match.index);
    const cells = starts.map((start, index) => row.slice(start, starts[index + 1]).trim());
    assert.deepEqual(header.split(/\s+/), ['NAME', 'PHASE', 'WEIGHTS', 'STEP', 'PROXY', 'READY', 'AGE']);
    assert.deepEqual(cells.slice(0, 5), ['web-v2', 'Running', 'web:8000=20%', '', '2/2']);

    // Two replicas, each with its own smooth WRR: 80/20 of 50, give or take one per replica.
    const counts = await split(WEB_TARGET_PORT, 50);
    assert.ok(
      Math.abs((counts.canary ?? 0) - 10) <= 2 && (counts.stable ?? 0) + (counts.canary ?? 0) === 50,
      `split ${JSON.stringify(counts)}`,
    );
    // Both managers are ready (caches filled); the one that leads says what it keeps.
    for (const manager of managers)
      assert.equal(
        (await fetch(`http://127.0.0.1:${manager.adminPort()}/readyz`)).status,
        200,
        `${manager.name} is ready`,
      );
    const leader = managers[(await Promise.all(managers.map(leads))).indexOf(true)]!;
    const metrics = await (await fetch(`http://127.0.0.1:${leader.adminPort()}/metrics`)).text();
    assert.match(
      metrics,
      /^canary_l4_manager_proxy_replicas\{release_namespace="default",release="web-v2",state="ready"\} 2$/m,
    );
    assert.match(metrics, /^canary_l4_manager_reconcile_total\{result="success"\} [1-9]/m);
    assert.ok(Number.isFinite(a.adminPort()));
    // Only the leader speaks for the releases: the other replica reports no proxy series and records no Event.
    const follower = managers.find((manager) => manager !== leader)!;
    const followerMetrics = await (await fetch(`http://127.0.0.1:${follower.adminPort()}/metrics`)).text();
    assert.doesNotMatch(followerMetrics, /^canary_l4_manager_proxy_replicas\{/m);
    const identity = (manager: Manager) => /"identity":"([^"]+)"/.exec(manager.output())?.[1];
    const events = (await cluster.core.listNamespacedEvent({ namespace: NAMESPACE })).items.filter(
      (event) => event.source?.component === MANAGED_BY,
    );
    assert.ok(events.length > 0, 'the leader recorded the proxies it made');
    assert.deepEqual([...new Set(events.map((event) => event.reportingInstance))], [identity(leader)]);
  });

  it('a spec.proxy change rolls the proxy: the new pods serve, the old ones go', async () => {
    const before = (await proxyOf('web-v2'))!.pods.map((pod) => pod.name);
    await patchRelease(cluster, 'web-v2', {
      spec: { proxy: { replicas: 1, nodeSelector: { pool: 'edge' }, resources: { requests: { cpu: '50m' } } } },
    });
    const release = (await waitForRelease(
      cluster,
      'web-v2',
      'one new ready proxy',
      (found) => {
        const proxy = (found as ManagedRelease | undefined)?.status?.proxy;
        return (
          proxy?.ready === '1/1' &&
          proxy.updatedReplicas === 1 &&
          proxy.pods.length === 1 &&
          !before.includes(proxy.pods[0]!.name)
        );
      },
      30_000,
    )) as ManagedRelease;
    const rolled = (await deployment('canary-l4-web-v2'))!.spec!.template.spec!;
    // client-node's models carry every field, unset ones as undefined: compare as JSON.
    assert.deepEqual(JSON.parse(JSON.stringify([rolled.nodeSelector, rolled.containers[0]?.resources])), [
      { pool: 'edge' },
      { requests: { cpu: '50m' } },
    ]);
    await waitFor(
      () => kubelet.running().filter((name) => name.startsWith('canary-l4-web-v2-')).length === 1,
      'the old proxy processes to end',
    );
    assert.deepEqual(
      kubelet.running().filter((name) => name.startsWith('canary-l4-web-v2-')),
      [release.status!.proxy!.pods[0]!.name],
    );
    const counts = await split(WEB_TARGET_PORT, 10);
    assert.deepEqual(counts, { stable: 8, canary: 2 });
  });

  it('an invalid spec.proxy, or a name someone else holds, is said on its release (naming the field, the object); the other releases go on', async () => {
    // What the CRD's schema refuses never reaches the manager: the API server answers 422.
    const refused = await apiError(
      createRelease(cluster, 'bad-v1', {
        services: [serviceEntry('web', [{ port: 8000, weight: 5 }])],
        ...{ proxy: { replicas: 0 } },
      }),
    );
    assert.deepEqual(
      [refused.code, refused.body.details.causes.map((cause: { field: string }) => cause.field)],
      [422, ['spec.proxy.replicas']],
    );
    // What it admits but the manager cannot use (a quantity is an int-or-string to the schema) is said on the release.
    const invalid: CanaryReleaseSpec = {
      services: [serviceEntry('web', [{ port: 8000, weight: 5 }])],
      ...{ proxy: { resources: { limits: { memory: 'lots' } } } },
    };
    await createRelease(cluster, 'bad-v1', invalid);
    const bad = await waitForRelease(
      cluster,
      'bad-v1',
      'ProxyAvailable False',
      (found) => proxyCondition(found)?.status === 'False',
      15_000,
    );
    const condition = proxyCondition(bad);
    assert.equal(condition?.reason, 'InvalidProxySpec');
    assert.match(
      condition?.message ?? '',
      /^spec\.proxy\.resources\.limits\.memory: must be a quantity such as 500m, 2, 128Mi or 1Gi, got "lots"; nothing was changed$/,
    );
    assert.equal(await deployment('canary-l4-bad-v1'), undefined);
    const events = await cluster.core.listNamespacedEvent({
      namespace: NAMESPACE,
      fieldSelector: 'involvedObject.name=bad-v1,reason=InvalidProxySpec',
    });
    assert.equal(events.items[0]?.type, 'Warning');
    assert.equal(events.items[0]?.source?.component, MANAGED_BY);
    await cluster.custom.deleteNamespacedCustomObject({
      group: 'canary-l4.io',
      version: 'v1alpha1',
      namespace: NAMESPACE,
      plural: 'canaryreleases',
      name: 'bad-v1',
    });

    // A name already taken by someone else's Deployment (a standalone proxy, say): refused, and said.
    await apps.createNamespacedDeployment({
      namespace: NAMESPACE,
      body: {
        metadata: { name: 'canary-l4-taken-v1' },
        spec: {
          selector: { matchLabels: { app: 'mine' } },
          template: {
            metadata: { labels: { app: 'mine' } },
            spec: { containers: [{ name: 'mine', image: 'mine:1' }] },
          },
        },
      },
    });
    await createRelease(cluster, 'taken-v1', { services: [serviceEntry('web', [{ port: 8000, weight: 5 }])] });
    const taken = await waitForRelease(
      cluster,
      'taken-v1',
      'ProxyAvailable False',
      (found) => proxyCondition(found)?.reason === 'Refused',
      15_000,
    );
    assert.equal(
      proxyCondition(taken)?.message,
      "the API refused the proxy's objects: Deployment canary-l4-taken-v1 already exists and is not the manager's (a standalone proxy?): delete it, or rename the release",
    );
    assert.deepEqual(
      (await deployment('canary-l4-taken-v1'))?.spec?.selector.matchLabels,
      { app: 'mine' },
      'left as it was',
    );
    await cluster.custom.deleteNamespacedCustomObject({
      group: 'canary-l4.io',
      version: 'v1alpha1',
      namespace: NAMESPACE,
      plural: 'canaryreleases',
      name: 'taken-v1',
    });
    await apps.deleteNamespacedDeployment({ name: 'canary-l4-taken-v1', namespace: NAMESPACE });
    assert.equal((await proxyOf('web-v2'))?.ready, '1/1');
  });

  it('the leader dies; the other manager takes the Lease once it expires and repairs what happened meanwhile: a hand-deleted Deployment, hand-edited objects', async () => {
    const leading = await Promise.all(managers.map(leads));
    const [leader, follower] = [managers[leading.indexOf(true)]!, managers[leading.indexOf(false)]!];
    leader.child.kill('SIGKILL');
    await leader.exited;
    const diedAt = Date.now();

    // While nobody leads: the follower sees these events but may not act on them yet.
    const gone = (await deployment('canary-l4-web-v2'))!.metadata!.uid;
    await apps.deleteNamespacedDeployment({ name: 'canary-l4-web-v2', namespace: NAMESPACE });
    // Hand edits of everything else the manager keeps: a label of each changed, the PDB loosened.
    const edit = { metadata: { labels: { 'app.kubernetes.io/name': 'edited' } } };
    await cluster.core.patchNamespacedServiceAccount(
      { name: 'canary-l4-web-v2', namespace: NAMESPACE, body: edit },
      mergePatch,
    );
    await cluster.core.patchNamespacedService(
      { name: 'canary-l4-web-v2-metrics', namespace: NAMESPACE, body: edit },
      mergePatch,
    );
    await rbac.patchNamespacedRoleBinding({ name: 'canary-l4-web-v2', namespace: NAMESPACE, body: edit }, mergePatch);
    await policy.patchNamespacedPodDisruptionBudget(
      { name: 'canary-l4-web-v2', namespace: NAMESPACE, body: { spec: { maxUnavailable: 5 } } },
      mergePatch,
    );
    await waitFor(() => leads(follower), 'the follower to lead', 10_000);
    assert.ok(Date.now() - diedAt >= 1500, "no takeover before the dead leader's 2 s lease expired");

    await waitForRelease(
      cluster,
      'web-v2',
      'a ready proxy of a new Deployment',
      (found) => (found as ManagedRelease | undefined)?.status?.proxy?.ready === '1/1',
      30_000,
    );
    await waitFor(
      async () => {
        const back = await deployment('canary-l4-web-v2');
        return back !== undefined && back.metadata?.uid !== gone && back.status?.readyReplicas === 1;
      },
      'the Deployment back, with a ready pod',
      30_000,
    );
    await waitFor(
      async () => {
        const labelled = await Promise.all([
          cluster.core.readNamespacedServiceAccount({ name: 'canary-l4-web-v2', namespace: NAMESPACE }),
          cluster.core.readNamespacedService({ name: 'canary-l4-web-v2-metrics', namespace: NAMESPACE }),
          rbac.readNamespacedRoleBinding({ name: 'canary-l4-web-v2', namespace: NAMESPACE }),
        ]);
        const pdb = await policy.readNamespacedPodDisruptionBudget({ name: 'canary-l4-web-v2', namespace: NAMESPACE });
        return (
          labelled.every((object) => object.metadata?.labels?.['app.kubernetes.io/name'] === 'canary-l4') &&
          pdb.spec?.maxUnavailable === 1
        );
      },
      'the hand edits undone',
      10_000,
    );
    assert.deepEqual(await split(WEB_TARGET_PORT, 10), { stable: 8, canary: 2 });
  });

  it("a manager with a new image (its own pod's) rolls the proxy to it", async () => {
    for (const manager of managers.filter(alive)) await stopManager(manager);
    startManager('c', [
      '--pod-name',
      'canary-l4-manager-c',
      '--pod-namespace',
      SYSTEM,
      '--namespace',
      `${NAMESPACE},elsewhere`,
    ]);
    await waitFor(
      async () => {
        const rolled = await deployment('canary-l4-web-v2');
        const proxy = await proxyOf('web-v2');
        return (
          rolled?.spec?.template.spec?.containers[0]?.image === IMAGE_2 &&
          proxy?.ready === '1/1' &&
          proxy.updatedReplicas === 1 &&
          rolled.status?.replicas === 1
        );
      },
      'the proxy rolled to the new image',
      30_000,
    );
    assert.equal(
      (await deployment('canary-l4-api-v2'))?.spec?.template.spec?.containers[0]?.image,
      IMAGE_2,
      'every proxy rolls',
    );
    // The pods share this host's port (SO_REUSEPORT), unlike pods in a cluster: an old proxy still
    // draining would reset what the kernel had queued on its listener as it closes it. The split is
    // the new proxy's, once the old one's process has exited.
    await waitFor(
      () => kubelet.running().filter((name) => name.startsWith('canary-l4-web-v2-')).length === 1,
      'the old proxy process ended',
      15_000,
    );
    assert.deepEqual(await split(WEB_TARGET_PORT, 10), { stable: 8, canary: 2 });
  });

  it('a deleted release keeps its proxy, made again if it goes, until its Services are handed back; then nothing is left of it', async () => {
    // The Service's own pods are not Ready while the canary's are: the hand-back waits, the finalizer stays.
    await pods.createReady({ name: 'api-canary', labels: { app: 'api', version: 'v2' }, podIP: podNet.ip(250) });
    await kubectl('delete', 'crel', 'api-v2', '--wait=false');
    await waitForRelease(
      cluster,
      'api-v2',
      'waiting to hand api back',
      (found) =>
        found?.metadata.deletionTimestamp != null &&
        found.metadata.finalizers?.includes('canary-l4.io/restore-services') === true &&
        conditionOf(found, 'Progressing')?.reason === 'WaitingForReadyPods',
      20_000,
    );
    const kept = (await deployment('canary-l4-api-v2'))!;
    await apps.deleteNamespacedDeployment({ name: 'canary-l4-api-v2', namespace: NAMESPACE });
    await waitFor(
      async () => {
        const back = await deployment('canary-l4-api-v2');
        return back !== undefined && back.metadata?.uid !== kept.metadata?.uid && back.status?.readyReplicas === 1;
      },
      'the proxy of the deleted release back, and ready',
      30_000,
    );
    assert.equal(
      (await deployment('canary-l4-api-v2'))?.metadata?.ownerReferences,
      undefined,
      'made again without an owner a foreground deletion would take',
    );

    await pods.createReady({ name: 'api-stable', labels: { app: 'api', version: 'v1' }, podIP: podNet.ip(251) });
    await waitFor(
      async () => (await getRelease(cluster, 'api-v2')) === undefined,
      'the release to go once api is handed back',
      20_000,
    );
    assert.deepEqual((await getService(cluster, 'api'))?.spec?.selector, { app: 'api', version: 'v1' });
    await waitFor(
      async () => !(await managed()).some((name) => name.includes('api-v2')),
      'nothing of its proxy left',
      10_000,
    );
    await waitFor(
      () => !kubelet.running().some((name) => name.startsWith('canary-l4-api-v2-')),
      'its processes ended',
      10_000,
    );
  });

  it('Adopted: the proxy and everything made for it are removed, status.proxy goes', async () => {
    await patchRelease(cluster, 'web-v2', { spec: { transition: 'Adopted' } });
    const release = await waitForRelease(
      cluster,
      'web-v2',
      'Adopted, proxy removed',
      (found) =>
        found?.status?.phase === 'Adopted' &&
        (found as ManagedRelease).status?.proxy == null &&
        proxyCondition(found)?.reason === 'ReleaseFinished',
      20_000,
    );
    assert.equal(proxyCondition(release)?.message, 'the release is Adopted: its proxy was removed');
    // The pods' RoleBinding and ServiceAccount go once the last proxy pod has (plan.ts).
    await waitFor(async () => (await managed()).length === 0, 'everything made for it removed', 10_000);
    await waitFor(() => kubelet.running().length === 0, 'every proxy process ended', 10_000);
    assert.deepEqual((await getService(cluster, 'web'))?.spec?.selector, { app: 'web', version: 'v2' });
  });

  it('the managers and the proxies asked the API for exactly what deploy/ grants them', async () => {
    for (const manager of managers.filter(alive)) await stopManager(manager);
    const used = (user: (name: string) => boolean, namespace?: (value: string) => boolean) =>
      [
        ...new Set(
          cluster.fake.requests
            .filter(
              (request) =>
                user(request.user) &&
                request.resource !== '' &&
                (namespace === undefined || namespace(request.namespace)),
            )
            .map(
              (request) =>
                `${request.verb} ${request.group || 'core'}/${request.resource}${request.subresource ? `/${request.subresource}` : ''}`,
            ),
        ),
      ].sort();

    // No Gateway API here: what only Gateways use is checked by gateway.test.ts.
    const clusterWide = roleGrants('manager-rbac.yaml', 'ClusterRole', 'canary-l4-manager').filter(
      (grant) => !MANAGER_GATEWAY_ONLY_GRANTS.includes(grant) && !MANAGER_ADMISSION_ONLY_GRANTS.includes(grant),
    );
    const ownNamespace = roleGrants('manager-rbac.yaml', 'Role', 'canary-l4-manager');
    const isManager = (name: string) => name === MANAGER_USER;
    assert.deepEqual(
      used(isManager),
      [...new Set([...clusterWide, ...ownNamespace])].sort(),
      "the manager's ClusterRole and Role are exactly what it used",
    );
    assert.deepEqual(
      used(isManager, (namespace) => namespace !== SYSTEM).filter(
        (grant) => ownNamespace.includes(grant) && !clusterWide.includes(grant),
      ),
      [],
      'what only its Role grants, it did in its own namespace only',
    );
    assert.deepEqual(
      used((name) => name.startsWith(`system:serviceaccount:${NAMESPACE}:canary-l4-`)),
      proxyGrantsWithoutWorkloads(),
      'the proxy ClusterRole, but for what only spec.workloads uses, is exactly what the proxies used',
    );
  });
});
