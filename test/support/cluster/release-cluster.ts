// The proxy against the API under test (the fake kube-apiserver, or a real control plane with
// CANARY_TEST_API=real: test/support/cluster/api-under-test.ts), with real traffic: the CRD and the proxy
// ClusterRole from deploy/, the proxy in this process (or as a child process, see crash.test.ts)
// with the identity a proxy has (on the real API the ServiceAccount canary-l4-proxy, bound to that
// ClusterRole as the manager binds it), and backends that answer with their name, started on the
// forked and canary Services' cluster IPs (loopback addresses from the Service CIDR: here the test
// plays kube-proxy). Each test file gets its own CIDR and port base so files can run in parallel.

import dgram from 'node:dgram';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { Writable } from 'node:stream';
import {
  ApiextensionsV1Api,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  loadYaml,
  PatchStrategy,
  RbacAuthorizationV1Api,
  setHeaderOptions,
  type V1ClusterRole,
  type V1CustomResourceDefinition,
  type V1Role,
  type V1Service,
} from '@kubernetes/client-node';
import pino from 'pino';
import { parseAllDocuments } from 'yaml';
import { Controller } from '../../../src/control/controller.ts';
import type { PortWeightOverride } from '../../../src/api/proxy-flags.ts';
import type { CanaryRelease } from '../../../src/api/release-types.ts';
import type { CanaryReleaseCondition, ConditionType } from '../../../src/api/status-types.ts';
import type { CanaryReleaseSpec } from '../../../src/api/spec-types.ts';
import { defaultProxySelector, GROUP, PLURAL, VERSION } from '../../../src/api/names.ts';
import { makeClients } from '../../../src/kube/client.ts';
import { takeoverValue } from '../../../src/control/service/takeover-selector.ts';
import { Runtime } from '../../../src/runtime/runtime.ts';
import { askName, startTcpBackend, type TcpBackend } from '../net/backends.ts';
import type { FakeApiServer, FakeApiServerOptions } from '../fake-apiserver/index.ts';
import { startApiUnderTest, type ApiUnderTest } from './api-under-test.ts';
import { waitFor } from '../wait.ts';
import { Http1KubeConfig } from '../../../src/kube/client.ts';

export const NAMESPACE = 'default';
/** The proxy's ServiceAccount (real API), and its bearer token on the fake, which records it as the user: it tells the proxy's requests from the test's. */
export const PROXY_USER = 'canary-l4-proxy';

export interface Cluster {
  readonly api: ApiUnderTest;
  /** The fake's hooks (faults, request log); throws on a real control plane (such tests skip there: onlyOnFake). */
  readonly fake: FakeApiServer;
  /** What a release's proxy runs with: on the real API a token of its ServiceAccount, which RBAC judges. */
  readonly proxyKubeConfig: KubeConfig;
  /** Who the proxy is in the API's request log. */
  readonly proxyUser: string;
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly custom: CustomObjectsApi;
  stop(): Promise<void>;
}

export async function startCluster(
  serviceCidr: string,
  options: Omit<FakeApiServerOptions, 'serviceCidr'> = {},
): Promise<Cluster> {
  const api = await startApiUnderTest(serviceCidr, { bookmarkIntervalMs: 1000, ...options });
  try {
    // loadYaml makes the typed object the client serializes: a plain one would lose its x-kubernetes-* keys and defaults.
    const crd = loadYaml<V1CustomResourceDefinition>(
      readFileSync(new URL('../../../deploy/crd.yaml', import.meta.url), 'utf8'),
    );
    await api.kubeConfig.makeApiClient(ApiextensionsV1Api).createCustomResourceDefinition({ body: crd });
    // A real API serves a new CRD's objects only once its storage is up: 429 "storage is (re)initializing" until then.
    const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    await waitFor(
      () =>
        custom
          .listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NAMESPACE, plural: PLURAL })
          .then(
            () => true,
            () => false,
          ),
      'the CRD served',
      30_000,
    );
    const proxy = api.real === undefined ? fakeProxyKubeConfig(api.url) : await realProxyKubeConfig(api);
    return {
      api,
      proxyKubeConfig: proxy,
      proxyUser: api.real === undefined ? PROXY_USER : `system:serviceaccount:${NAMESPACE}:${PROXY_USER}`,
      get fake(): FakeApiServer {
        if (api.fake === undefined)
          throw new Error('this test needs the fake apiserver (its faults or request log): mark it onlyOnFake');
        return api.fake;
      },
      core: api.kubeConfig.makeApiClient(CoreV1Api),
      apps: api.kubeConfig.makeApiClient(AppsV1Api),
      custom: api.kubeConfig.makeApiClient(CustomObjectsApi),
      stop: () => api.stop(),
    };
  } catch (err) {
    await api.stop();
    throw err;
  }
}

/** On the fake: its server, the proxy's own token (any token is accepted, and names the user). */
function fakeProxyKubeConfig(url: string): KubeConfig {
  const kubeConfig = new Http1KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'fake', server: url, skipTLSVerify: true }],
    users: [{ name: PROXY_USER, token: PROXY_USER }],
    contexts: [{ name: 'fake', cluster: 'fake', user: PROXY_USER, namespace: NAMESPACE }],
    currentContext: 'fake',
  });
  return kubeConfig;
}

/** On the real API: the ClusterRole from deploy/, bound in the namespace to a ServiceAccount as the manager binds it; its token. */
async function realProxyKubeConfig(api: ApiUnderTest): Promise<KubeConfig> {
  const documents = parseAllDocuments(
    readFileSync(new URL('../../../deploy/proxy-rbac.yaml', import.meta.url), 'utf8'),
  ).map((doc) => doc.toJS() as V1ClusterRole);
  const rbac = api.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  for (const role of documents.filter((doc) => doc?.kind === 'ClusterRole'))
    await rbac.createClusterRole({ body: role });
  await api.kubeConfig
    .makeApiClient(CoreV1Api)
    .createNamespacedServiceAccount({ namespace: NAMESPACE, body: { metadata: { name: PROXY_USER } } });
  await rbac.createNamespacedRoleBinding({
    namespace: NAMESPACE,
    body: {
      metadata: { name: PROXY_USER },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'canary-l4-proxy' },
      subjects: [{ kind: 'ServiceAccount', name: PROXY_USER, namespace: NAMESPACE }],
    },
  });
  return api.real!.serviceAccountKubeConfig(NAMESPACE, PROXY_USER);
}

export function writeProxyKubeconfig(cluster: Cluster, path: string): void {
  writeFileSync(path, cluster.proxyKubeConfig.exportConfig());
}

export interface InProcessProxy {
  readonly runtime: Runtime;
  /** The JSON log lines so far. */
  logs(): Record<string, unknown>[];
  metrics(): Promise<string>;
  stop(): Promise<void>;
}

export async function startProxy(
  cluster: Cluster,
  release: string,
  portBase: number,
  options: {
    weightOverrides?: PortWeightOverride[];
    requestTimeoutMs?: number;
    handBackGraceMs?: number;
    podIP?: string;
    adminPort?: number;
  } = {},
): Promise<InProcessProxy> {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      done();
    },
  });
  const log = pino({ level: 'info' }, sink);
  // adminPort: its admin server (/metrics) on the pod's address, as in its pod; none by default.
  const runtime = await Runtime.start({
    log,
    adminHost: options.podIP ?? '127.0.0.1',
    adminPort: options.adminPort ?? null,
    listenerGraceMs: 2000,
  });
  const controller = new Controller({
    runtime,
    clients: makeClients(cluster.proxyKubeConfig),
    namespace: NAMESPACE,
    release,
    // podIP: the proxy runs "in its pod" there (its listeners on that address only: pods share this host).
    reconcile: {
      proxySelector: defaultProxySelector(release),
      portBase,
      weightOverrides: options.weightOverrides ?? [],
      handBackGraceMs: options.handBackGraceMs ?? 0,
      ...(options.podIP === undefined ? {} : { inPod: true, listenHost: options.podIP }),
      // As the proxy command does: its admin port is no proxy port.
      ...(options.adminPort === undefined ? {} : { reservedPorts: new Set([options.adminPort]) }),
    },
    resyncMs: 60_000,
    requestTimeoutMs: options.requestTimeoutMs ?? 5_000,
  });
  return {
    runtime,
    logs: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
    metrics: () => runtime.registry.metrics(),
    stop: async () => {
      await controller.stop();
      await runtime.stop(0);
    },
  };
}

/** What the release makes of a selector by `app` and `version` (createService's): the keys kept, the values its own. */
export function takenOver(release: string): Record<string, string> {
  return { app: takeoverValue(release), version: takeoverValue(release) };
}

export interface ServicePortSpec {
  readonly name?: string;
  readonly port: number;
  readonly targetPort?: number | string;
  readonly protocol?: 'TCP' | 'UDP';
  readonly nodePort?: number;
}

export async function createService(
  cluster: Cluster,
  name: string,
  ports: readonly ServicePortSpec[],
  extra: { type?: string; selector?: Record<string, string> } = {},
): Promise<V1Service> {
  return cluster.core.createNamespacedService({
    namespace: NAMESPACE,
    body: {
      metadata: { name, labels: { app: name } },
      spec: {
        type: extra.type ?? 'ClusterIP',
        selector: extra.selector ?? { app: name, version: 'v1' },
        ports: [...ports],
      },
    },
  });
}

/** A spec for one Service whose canary pods carry `version: <canaryVersion>`. */
export function serviceEntry(
  service: string,
  ports: readonly { port: number; protocol?: 'TCP' | 'UDP'; weight: number }[],
  canaryVersion = 'v2',
): NonNullable<CanaryReleaseSpec['services']>[number] {
  return {
    service,
    canaryServiceOperations: { add: { version: canaryVersion } },
    ports: ports.map(({ port, protocol = 'TCP', weight }) => ({ port, protocol, config: { weight } })),
  };
}

export async function createRelease(cluster: Cluster, name: string, spec: CanaryReleaseSpec): Promise<void> {
  await cluster.custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace: NAMESPACE,
    plural: PLURAL,
    body: { apiVersion: `${GROUP}/${VERSION}`, kind: 'CanaryRelease', metadata: { name }, spec },
  });
}

export async function patchRelease(
  cluster: Cluster,
  name: string,
  patch: unknown,
  type: 'merge' | 'json' = 'merge',
): Promise<void> {
  await cluster.custom.patchNamespacedCustomObject(
    { group: GROUP, version: VERSION, namespace: NAMESPACE, plural: PLURAL, name, body: patch },
    setHeaderOptions('Content-Type', type === 'merge' ? PatchStrategy.MergePatch : PatchStrategy.JsonPatch),
  );
}

/** The canary weight of one port of the spec (JSON patch on the path). */
export function setWeight(
  cluster: Cluster,
  release: string,
  serviceIndex: number,
  portIndex: number,
  weight: number,
): Promise<void> {
  return patchRelease(
    cluster,
    release,
    [{ op: 'replace', path: `/spec/services/${serviceIndex}/ports/${portIndex}/config/weight`, value: weight }],
    'json',
  );
}

export async function getRelease(cluster: Cluster, name: string): Promise<CanaryRelease | undefined> {
  try {
    return (await cluster.custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NAMESPACE,
      plural: PLURAL,
      name,
    })) as CanaryRelease;
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

export async function getService(cluster: Cluster, name: string): Promise<V1Service | undefined> {
  try {
    return await cluster.core.readNamespacedService({ name, namespace: NAMESPACE });
  } catch (err) {
    if ((err as { code?: number }).code === 404) return undefined;
    throw err;
  }
}

export function conditionOf(
  release: CanaryRelease | undefined,
  type: ConditionType,
): CanaryReleaseCondition | undefined {
  return release?.status?.conditions?.find((condition) => condition.type === type);
}

/**
 * Every Service's, Pod's, Deployment's and CanaryRelease's name and resourceVersion: a write to any
 * of them changes one. (Not the lists' own resourceVersions: on a real API a list's is the whole
 * cluster's, which node heartbeats and controllers move all the time.)
 */
export async function versions(cluster: Cluster): Promise<string> {
  const [services, pods, deployments, releases] = await Promise.all([
    cluster.core.listNamespacedService({ namespace: NAMESPACE }),
    cluster.core.listNamespacedPod({ namespace: NAMESPACE }),
    cluster.apps.listNamespacedDeployment({ namespace: NAMESPACE }),
    cluster.custom.listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NAMESPACE,
      plural: PLURAL,
    }) as Promise<{ items: CanaryRelease[] }>,
  ]);
  return JSON.stringify(
    [services, pods, deployments, releases].map((list) =>
      list.items.map((item) => `${item.metadata?.name}@${item.metadata?.resourceVersion}`),
    ),
  );
}

/** Polls the release until `check` holds; the assertion message shows its last status. */
export async function waitForRelease(
  cluster: Cluster,
  name: string,
  what: string,
  check: (release: CanaryRelease | undefined) => boolean,
  timeoutMs = 10_000,
): Promise<CanaryRelease | undefined> {
  let last: CanaryRelease | undefined;
  try {
    await waitFor(async () => check((last = await getRelease(cluster, name))), what, timeoutMs);
  } catch (err) {
    throw new Error(`${(err as Error).message}; last status: ${JSON.stringify(last?.status)}`, { cause: err });
  }
  return last;
}

/** Available=True with every listed port retargeted. */
/**
 * Whether the proxy has reported on the release's current spec: a pass began after its last edit.
 * A check that an edit changes nothing waits on this, not on a sleep that proves no pass ran.
 */
export function judgedCurrentSpec(release: CanaryRelease | undefined): boolean {
  const observed = release?.status?.observedGeneration;
  return observed !== undefined && observed === release?.metadata?.generation;
}

/**
 * Whether the release reports an analysis interval that ended after `ms` (epoch): the pass that
 * judged it ran after then, so it had its chance to act on whatever was due by `ms`.
 */
export function judgedAfter(release: CanaryRelease | undefined, ms: number): boolean {
  const at = release?.status?.analysis?.at;
  return at !== undefined && Date.parse(at) > ms;
}

export function serving(release: CanaryRelease | undefined): boolean {
  return (
    conditionOf(release, 'Available')?.status === 'True' &&
    conditionOf(release, 'Progressing')?.reason !== 'Retargeting'
  );
}

export async function waitForService(
  cluster: Cluster,
  name: string,
  what: string,
  check: (service: V1Service | undefined) => boolean,
  timeoutMs = 10_000,
): Promise<V1Service | undefined> {
  let last: V1Service | undefined;
  await waitFor(async () => check((last = await getService(cluster, name))), `${name}: ${what}`, timeoutMs);
  return last;
}

export interface Backends {
  readonly forkedIp: string;
  readonly canaryIp: string;
  close(): Promise<void>;
}

/**
 * Once `<service>-forked` and `<service>-canary` have cluster IPs, starts a backend named `stable`
 * on the first and `canary` on the second, on each given port: TCP ones send their name and a
 * newline, then echo; UDP ones answer `<name>:<datagram>`.
 */
export async function startBackends(
  cluster: Cluster,
  service: string,
  ports: readonly { port: number; protocol?: 'TCP' | 'UDP' }[],
): Promise<Backends> {
  const ipOf = async (name: string) =>
    (await waitForService(cluster, name, 'a cluster IP', (found) => Boolean(found?.spec?.clusterIP)))!.spec!.clusterIP!;
  const forkedIp = await ipOf(`${service}-forked`);
  const canaryIp = await ipOf(`${service}-canary`);
  const closers: (() => Promise<void>)[] = [];
  for (const [name, host] of [
    ['stable', forkedIp],
    ['canary', canaryIp],
  ] as const) {
    for (const { port, protocol = 'TCP' } of ports) {
      if (protocol === 'UDP') closers.push(await startUdpNamed(name, host, port));
      else {
        const backend: TcpBackend = await startTcpBackend(
          (socket) => {
            socket.write(`${name}\n`);
            socket.pipe(socket);
          },
          host,
          port,
        );
        closers.push(() => backend.close());
      }
    }
  }
  return { forkedIp, canaryIp, close: async () => void (await Promise.all(closers.map((close) => close()))) };
}

/** A UDP server on `host:port` answering `<name>:<datagram>`; resolves with its closer. */
export async function startUdpNamed(name: string, host: string, port: number): Promise<() => Promise<void>> {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (message, peer) =>
    socket.send(Buffer.concat([Buffer.from(`${name}:`), message]), peer.port, peer.address),
  );
  socket.bind({ address: host, port });
  await once(socket, 'listening');
  return () => new Promise((resolve) => socket.close(() => resolve()));
}

/** `connections` sequential connections to the proxy port; how many each backend answered. */
export async function split(port: number, connections: number): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (let index = 0; index < connections; index++) {
    const name = (await askName(port)).trim();
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
}

/** The proxy's API requests as RBAC rules: `verb group/resource[/subresource]`, sorted, unique (on the real API, from its audit log). */
export function rbacUsed(cluster: Cluster): string[] {
  return [
    ...new Set(
      cluster.api
        .requests()
        .filter((request) => request.user === cluster.proxyUser && request.resource !== '')
        .map(
          (request) =>
            `${request.verb} ${request.group || 'core'}/${request.resource}${request.subresource ? `/${request.subresource}` : ''}`,
        ),
    ),
  ].sort();
}

/** The rules of a Role or ClusterRole in deploy/ as `verb group/resource` lines, as rbacUsed() writes them (`bind` rules left out). */
export function roleGrants(file: string, kind: 'Role' | 'ClusterRole', name: string): string[] {
  const documents = parseAllDocuments(readFileSync(new URL(`../../../deploy/${file}`, import.meta.url), 'utf8')).map(
    (doc) => doc.toJS(),
  );
  const role = documents.find((doc) => doc?.kind === kind && doc.metadata?.name === name) as V1Role | undefined;
  if (role === undefined) throw new Error(`no ${kind} ${name} in deploy/${file}`);
  return (role.rules ?? [])
    .filter((rule) => !rule.verbs.includes('bind'))
    .flatMap((rule) =>
      (rule.apiGroups ?? []).flatMap((group) =>
        (rule.resources ?? []).flatMap((resource) =>
          rule.verbs.map((verb) => `${verb} ${group || 'core'}/${resource}`),
        ),
      ),
    )
    .sort();
}

/** The grants of the proxy ClusterRole that only a release with spec.workloads uses (workloads.test.ts checks it uses them). */
export const WORKLOAD_ONLY_GRANTS = [
  'create apps/deployments',
  'delete apps/deployments',
  'patch apps/deployments',
  'update apps/deployments',
];

/**
 * The grants of the manager's ClusterRole that only Gateways use (test/manager/gateway.test.ts checks
 * it uses them; manager.test.ts, with no Gateway API, that it uses the rest). `update
 * gateways/finalizers` is left out of both: only the OwnerReferencesPermissionEnforcement admission
 * plugin asks for it (blockOwnerDeletion), and the fake runs none.
 */
export const MANAGER_GATEWAY_ONLY_GRANTS = [
  'create rbac.authorization.k8s.io/clusterrolebindings',
  'delete rbac.authorization.k8s.io/clusterrolebindings',
  'list gateway.networking.k8s.io/gatewayclasses',
  'list gateway.networking.k8s.io/gateways',
  'list rbac.authorization.k8s.io/clusterrolebindings',
  'patch gateway.networking.k8s.io/gatewayclasses/status',
  'update rbac.authorization.k8s.io/clusterrolebindings',
  'watch gateway.networking.k8s.io/gatewayclasses',
  'watch gateway.networking.k8s.io/gateways',
  'watch rbac.authorization.k8s.io/clusterrolebindings',
];
export const MANAGER_ADMISSION_ONLY_GRANTS = ['update gateway.networking.k8s.io/gateways/finalizers'];

/** The proxy ClusterRole, less what only spec.workloads uses: what a release without workloads must use, exactly. */
export function proxyGrantsWithoutWorkloads(): string[] {
  return roleGrants('proxy-rbac.yaml', 'ClusterRole', 'canary-l4-proxy').filter(
    (grant) => !WORKLOAD_ONLY_GRANTS.includes(grant),
  );
}
