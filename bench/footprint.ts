// The memory of canary-l4's own processes (RSS): `serve` idle and after a sweep of 10 000
// connections, `proxy` running a release with no other pod in its namespace and with 3 000
// unrelated pods, and `manager`, idle. Each is a fresh process, measured once it has settled. The
// fake kube-apiserver (test/support/fake-apiserver) runs in this process with the CRD of deploy/.
// Each mode is measured as the sources run (Node strips the types of every module as it loads
// it), then again with a warm compile cache (NODE_COMPILE_CACHE, filled by one run before): the
// stripped and compiled modules are read back and the type stripper is never loaded, as in an
// image built with its cache. Needs no load tool and no other proxy.
import { existsSync, readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { startFakeApiServer, type FakeApiServer } from '../test/support/fake-apiserver/index.ts';
import { PROJECT_ROOT } from './paths.ts';
import { httpOk, startChild, waitFor, type Child } from './processes.ts';
import { treeRssKiB } from './proc-usage.ts';
import type { MetricSpec, StandaloneWorkload } from './workloads.ts';
import type { CanarySettings } from './image-settings.ts';

const SWEEP_CONNECTIONS = 10_000;
const SWEEP_BATCH = 200;
const UNRELATED_PODS = 3_000;
const CREATE_CONCURRENCY = 20;
/** After ready: lazy compiles, the first metrics samples and the first GCs are behind. */
const SETTLE_MS = 5_000;
const READY_TIMEOUT_MS = 60_000;
const NAMESPACE = 'default';
const RELEASE = 'web-v2';
/** The per-release cost: one release of FLEET_SERVICES Services with FLEET_PORTS ports each. */
const FLEET = 'fleet';
const FLEET_SERVICES = 10;
const FLEET_PORTS = 4;
const LISTEN_PORT = 18_710;
const BACKEND_PORT = 18_711;
const ADMIN_PORT = 18_719;
const PROXY_PORT_BASE = 18_720;
const KIB_PER_MIB = 1024;

const CACHED = 'Cached';
const BUNDLED = 'Bundled';
/** The commands as the sources run them, and as the bundle of `npm run build` does (build/bundle.ts). */
const SOURCE_ENTRY = 'src/cli/main.ts';
const BUNDLE_ENTRY = 'dist/canary-l4.js';
const MODES = [
  { key: 'serveIdle', label: '`serve`, idle' },
  { key: 'proxyIdle', label: '`proxy`, idle, no other pod in the namespace' },
  {
    key: 'proxyFleet',
    label: `\`proxy\`, idle, one release of ${FLEET_SERVICES} Services × ${FLEET_PORTS} ports (2 TCP, 2 UDP)`,
  },
  {
    key: 'proxyUnrelatedPods',
    label: `\`proxy\`, idle, ${UNRELATED_PODS.toLocaleString('en-US')} unrelated pods in the namespace`,
  },
  { key: 'managerIdle', label: '`manager`, idle, one release' },
] as const;
const SWEPT: MetricSpec = {
  key: 'serveSweptMiB',
  label: `\`serve\`, after a sweep of ${SWEEP_CONNECTIONS.toLocaleString('en-US')} connections`,
  unit: 'MiB',
  lowerIsBetter: true,
};

const METRICS: readonly MetricSpec[] = [
  ...MODES.map(({ key, label }) => ({ key: `${key}MiB`, label, unit: 'MiB', lowerIsBetter: true })).flatMap((metric) =>
    metric.key === 'serveIdleMiB' ? [metric, SWEPT] : [metric],
  ),
  ...MODES.map(({ key, label }) => ({
    key: `${key}${CACHED}MiB`,
    label: `${label}, warm compile cache`,
    unit: 'MiB',
    lowerIsBetter: true,
  })),
  ...MODES.map(({ key, label }) => ({
    key: `${key}${BUNDLED}MiB`,
    label: `${label}, the bundle`,
    unit: 'MiB',
    lowerIsBetter: true,
  })),
  ...MODES.map(({ key, label }) => ({
    key: `${key}${BUNDLED}${CACHED}MiB`,
    label: `${label}, the bundle, warm compile cache`,
    unit: 'MiB',
    lowerIsBetter: true,
  })),
];

/** Where one checkout's processes run, and how. */
interface Runner {
  readonly root: string;
  /** SOURCE_ENTRY or BUNDLE_ENTRY, relative to root. */
  readonly entry: string;
  readonly node: string;
  readonly nodeFlags: readonly string[];
  readonly env: NodeJS.ProcessEnv;
}

async function startMode(runner: Runner, name: string, args: readonly string[]): Promise<Child> {
  const child = startChild(
    `canary-l4 ${name}`,
    runner.node,
    [...runner.nodeFlags, runner.entry, ...args],
    runner.root,
    runner.env,
  );
  await waitFor(`${name} ready`, () => httpOk(`http://127.0.0.1:${ADMIN_PORT}/readyz`), child, READY_TIMEOUT_MS).catch(
    async (error: unknown) => {
      await child.stop();
      throw error;
    },
  );
  return child;
}

/** RSS of a fresh process once settled, and after `then` (a load) if given. */
async function measure(
  runner: Runner,
  name: string,
  args: readonly string[],
  then?: () => Promise<void>,
): Promise<{ settled: number; after?: number }> {
  const child = await startMode(runner, name, args);
  try {
    await sleep(SETTLE_MS);
    const settled = treeRssKiB(child.pid) / KIB_PER_MIB;
    if (then === undefined) return { settled };
    await then();
    await sleep(SETTLE_MS);
    return { settled, after: treeRssKiB(child.pid) / KIB_PER_MIB };
  } finally {
    await child.stop();
  }
}

/** A backend that answers one byte and closes. */
async function startBackend(): Promise<Server> {
  const server = createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => socket.end('y'));
  });
  await new Promise<void>((resolve) => server.listen(BACKEND_PORT, '127.0.0.1', resolve));
  return server;
}

function roundTrip(port: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => socket.write('x'));
    const done = () => {
      socket.destroy();
      resolve();
    };
    socket.setTimeout(5_000, done);
    socket.once('error', done);
    socket.once('close', done);
    socket.on('data', () => {});
  });
}

async function sweep(): Promise<void> {
  for (let sent = 0; sent < SWEEP_CONNECTIONS; sent += SWEEP_BATCH) {
    await Promise.all(
      Array.from({ length: Math.min(SWEEP_BATCH, SWEEP_CONNECTIONS - sent) }, () => roundTrip(LISTEN_PORT)),
    );
  }
}

function serveArgs(dir: string): string[] {
  const config = join(dir, 'lb.json');
  writeFileSync(
    config,
    JSON.stringify({
      listeners: [
        {
          name: 'web',
          listen: `127.0.0.1:${LISTEN_PORT}`,
          backends: [
            { name: 'a', host: '127.0.0.1', port: BACKEND_PORT, weight: 90 },
            { name: 'b', host: '127.0.0.1', port: BACKEND_PORT, weight: 10 },
          ],
        },
      ],
    }),
  );
  return [
    'serve',
    '--config',
    config,
    '--admin-address',
    '127.0.0.1',
    '--admin-port',
    String(ADMIN_PORT),
    '--no-watch',
    '--drain-timeout',
    '0',
  ];
}

function proxyArgs(api: FakeApiServer, release = RELEASE): string[] {
  return [
    'proxy',
    '--kubeconfig',
    api.kubeconfigPath,
    '-n',
    NAMESPACE,
    '--canary-release',
    release,
    '--port-base',
    String(PROXY_PORT_BASE),
    '--admin-address',
    '127.0.0.1',
    '--admin-port',
    String(ADMIN_PORT),
    '--no-leader-elect',
    '--drain-timeout',
    '0',
  ];
}

function managerArgs(api: FakeApiServer): string[] {
  return [
    'manager',
    '--kubeconfig',
    api.kubeconfigPath,
    '-n',
    NAMESPACE,
    '--proxy-image',
    'canary-l4:bench',
    '--admin-address',
    '127.0.0.1',
    '--admin-port',
    String(ADMIN_PORT),
    '--no-leader-elect',
  ];
}

/** Creates a pod as a Deployment makes them, then writes the status a kubelet would: about 3 KiB of JSON. */
async function createPod(core: CoreV1Api, name: string, labels: Record<string, string>, podIP: string): Promise<void> {
  const { status, ...body } = pod(name, labels, podIP);
  await core.createNamespacedPod({ namespace: NAMESPACE, body });
  await core.patchNamespacedPodStatus(
    { name, namespace: NAMESPACE, body: { status } },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

function pod(name: string, labels: Record<string, string>, podIP: string): V1Pod {
  return {
    metadata: {
      name,
      labels,
      annotations: { 'kubectl.kubernetes.io/restartedAt': '2026-12-01T00:00:00Z', 'prometheus.io/scrape': 'true' },
    },
    spec: {
      containers: [
        {
          name: 'app',
          image: `registry.example/${labels.app ?? 'app'}:1.4.2`,
          ports: [{ name: 'http', containerPort: 8080 }],
          env: Array.from({ length: 6 }, (_, i) => ({ name: `SETTING_${i}`, value: `value-${i}-${name}` })),
          resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
          readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, periodSeconds: 5 },
          volumeMounts: [{ name: 'config', mountPath: '/etc/app' }],
        },
      ],
      volumes: [{ name: 'config', configMap: { name: `${labels.app ?? 'app'}-config` } }],
    },
    status: {
      phase: 'Running',
      podIP,
      hostIP: '10.0.0.1',
      startTime: new Date(),
      conditions: ['Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map((type) => ({
        type,
        status: 'True',
        lastTransitionTime: new Date(),
      })),
    },
  };
}

/** The release's namespace: a Service, its stable and canary pods, the proxy's pod, the CanaryRelease. */
async function prepareCluster(api: FakeApiServer): Promise<CoreV1Api> {
  const crd = parseYaml(readFileSync(join(PROJECT_ROOT, 'deploy', 'crd.yaml'), 'utf8'));
  await api.kubeConfig.makeApiClient(ApiextensionsV1Api).createCustomResourceDefinition({ body: crd });
  const core = api.kubeConfig.makeApiClient(CoreV1Api);
  await core.createNamespacedService({
    namespace: NAMESPACE,
    body: {
      metadata: { name: 'web' },
      spec: { selector: { app: 'web', version: 'v1' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    },
  });
  await createPod(core, 'web-1', { app: 'web', version: 'v1' }, '127.0.0.2');
  await createPod(core, 'web-canary-1', { app: 'web', version: 'v2' }, '127.0.0.3');
  await createPod(core, `canary-l4-${RELEASE}`, { 'canary-l4.io/release': RELEASE, app: 'canary-l4' }, '127.0.0.1');
  await api.kubeConfig.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    group: 'canary-l4.io',
    version: 'v1alpha1',
    namespace: NAMESPACE,
    plural: 'canaryreleases',
    body: {
      apiVersion: 'canary-l4.io/v1alpha1',
      kind: 'CanaryRelease',
      metadata: { name: RELEASE },
      spec: {
        services: [
          {
            service: 'web',
            canaryServiceOperations: { add: { version: 'v2' } },
            ports: [{ port: 80, config: { weight: 10 } }],
          },
        ],
      },
    },
  });
  return core;
}

/** FLEET_SERVICES Services of FLEET_PORTS ports, their stable and canary pods, and one CanaryRelease splitting every port. */
async function prepareFleet(api: FakeApiServer, core: CoreV1Api): Promise<void> {
  const services = Array.from({ length: FLEET_SERVICES }, (_, index) => `app-${index}`);
  const ports = Array.from({ length: FLEET_PORTS }, (_, index) => ({
    port: 7000 + index,
    protocol: index % 2 === 0 ? 'TCP' : 'UDP',
  }));
  for (const [index, service] of services.entries()) {
    await core.createNamespacedService({
      namespace: NAMESPACE,
      body: {
        metadata: { name: service },
        spec: {
          selector: { app: service, version: 'v1' },
          ports: ports.map(({ port, protocol }) => ({ name: `p${port}`, port, protocol, targetPort: port })),
        },
      },
    });
    await createPod(core, `${service}-1`, { app: service, version: 'v1' }, `127.0.13.${2 * index + 1}`);
    await createPod(core, `${service}-canary-1`, { app: service, version: 'v2' }, `127.0.13.${2 * index + 2}`);
  }
  await createPod(core, `canary-l4-${FLEET}`, { 'canary-l4.io/release': FLEET, app: 'canary-l4' }, '127.0.0.1');
  await api.kubeConfig.makeApiClient(CustomObjectsApi).createNamespacedCustomObject({
    group: 'canary-l4.io',
    version: 'v1alpha1',
    namespace: NAMESPACE,
    plural: 'canaryreleases',
    body: {
      apiVersion: 'canary-l4.io/v1alpha1',
      kind: 'CanaryRelease',
      metadata: { name: FLEET },
      spec: {
        services: services.map((service) => ({
          service,
          canaryServiceOperations: { add: { version: 'v2' } },
          ports: ports.map(({ port, protocol }) => ({ port, protocol, config: { weight: 10 } })),
        })),
      },
    },
  });
}

async function createUnrelatedPods(core: CoreV1Api): Promise<void> {
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < UNRELATED_PODS; i = next++) {
      await createPod(
        core,
        `other-${i}`,
        { app: `other-${i % 50}`, version: 'v1', team: 'elsewhere' },
        `10.1.${i >> 8}.${i & 255}`,
      );
    }
  };
  await Promise.all(Array.from({ length: CREATE_CONCURRENCY }, worker));
}

/** Every figure for one checkout; the cached figures use a compile cache of their own, warmed first. */
export async function measureFootprint(root: string, settings: CanarySettings): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'canary-l4-footprint-'));
  const { nodeFlags } = settings;
  const node = settings.node.path;
  const runners = (entry: string, cache: string) => ({
    plain: { root, entry, node, nodeFlags, env: { ...settings.env, NODE_COMPILE_CACHE: undefined } },
    cached: { root, entry, node, nodeFlags, env: { ...settings.env, NODE_COMPILE_CACHE: join(dir, cache) } },
  });
  const { plain, cached } = runners(SOURCE_ENTRY, 'compile-cache');
  // A checkout without a bundle (one from before it, not built) has no bundle figures.
  const bundle = existsSync(join(root, BUNDLE_ENTRY)) ? runners(BUNDLE_ENTRY, 'compile-cache-bundle') : undefined;
  const backend = await startBackend();
  const api = await startFakeApiServer({ serviceCidr: '127.0.12.0/24' });
  const values: Record<string, number> = {};
  /** The warm-up run fills the cache; only the second run is measured. */
  const both = async (key: string, name: string, args: readonly string[]) => {
    values[`${key}MiB`] = (await measure(plain, name, args)).settled;
    await (await startMode(cached, name, args)).stop();
    values[`${key}${CACHED}MiB`] = (await measure(cached, name, args)).settled;
    if (bundle === undefined) return;
    values[`${key}${BUNDLED}MiB`] = (await measure(bundle.plain, name, args)).settled;
    await (await startMode(bundle.cached, name, args)).stop();
    values[`${key}${BUNDLED}${CACHED}MiB`] = (await measure(bundle.cached, name, args)).settled;
  };
  try {
    const serve = serveArgs(dir);
    const swept = await measure(plain, 'serve', serve, sweep);
    values.serveSweptMiB = swept.after ?? Number.NaN;
    await both('serveIdle', 'serve', serve);
    const core = await prepareCluster(api);
    await both('proxyIdle', 'proxy', proxyArgs(api));
    await prepareFleet(api, core);
    await both('proxyFleet', 'proxy', proxyArgs(api, FLEET));
    await createUnrelatedPods(core);
    await both('proxyUnrelatedPods', 'proxy', proxyArgs(api));
    await both('managerIdle', 'manager', managerArgs(api));
    return values;
  } finally {
    await api.stop();
    backend.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export const footprint: StandaloneWorkload = {
  name: 'footprint',
  group: 'footprint',
  title: 'canary-l4 process memory (RSS), each mode a fresh process, settled',
  metrics: METRICS,
  recordsUsage: false,
  appliesTo: (proxy) => proxy === 'canary-l4' || proxy === 'baseline',
  runAlone: measureFootprint,
};
