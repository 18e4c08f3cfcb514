// The objects the manager keeps for one CanaryRelease, rendered from it and the manager's flags.
// Pure. The proxy Deployment is deploy/standalone/deployment.yaml made for this release: the same
// probes, hardened pod, anti-affinity, grace period and --state-dir emptyDir; only spec.proxy and
// --proxy-image change it. The proxy learns everything from plain env values (no --kubeconfig: in
// a pod it uses its ServiceAccount), so `kubectl describe` shows exactly what it runs with.

import type {
  V1ContainerPort,
  V1Deployment,
  V1EnvVar,
  V1OwnerReference,
  V1PodDisruptionBudget,
  V1RoleBinding,
  V1Service,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import { DEFAULT_ADMIN_PORT } from '../defaults.ts';
import { proxyCommonEnv, proxyDeploymentSpec, proxyDisruptionBudgetSpec } from './pod.ts';
import { API_VERSION, KIND, LABEL_RELEASE, PROXY_ADMIN_PORT_NAME, type Labels } from '../api/names.ts';
import { labelProblems, takeoverLabels } from '../api/labels.ts';
import { withDigests } from './children.ts';
import { readProxySpec } from './proxy-spec.ts';
import { LABEL_MANAGED_BY, managedLabels, metricsServiceName, PROXY_CLUSTER_ROLE, proxyName } from './names.ts';
import type { ManagedRelease, ProxySpec } from '../api/proxy-types.ts';

export interface RenderSettings {
  /** The image the proxy pods run (--proxy-image, or the manager's own). */
  readonly proxyImage: string;
}

/** Everything kept for a release, in the order it is created (the pods need their account first). */
export interface RenderedProxy {
  readonly serviceAccount: V1ServiceAccount;
  readonly roleBinding: V1RoleBinding;
  readonly deployment: V1Deployment;
  readonly podDisruptionBudget: V1PodDisruptionBudget;
  readonly metricsService: V1Service;
}

export type RenderResult =
  | { readonly ok: true; readonly objects: RenderedProxy; readonly spec: ProxySpec }
  | { readonly ok: false; readonly problems: readonly string[] };

/** Where the proxy keeps its served config (an emptyDir: it outlives container restarts). */
const STATE_DIR = '/var/lib/canary-l4';
/** canary-l4-<release>-metrics must be a DNS-1035 label (63 characters). */
const MAX_RELEASE_NAME = 63 - metricsServiceName('').length;
const RELEASE_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function renderProxy(release: ManagedRelease, settings: RenderSettings): RenderResult {
  const { name } = release.metadata;
  const read = readProxySpec(release.spec?.proxy);
  const problems = read.ok ? [] : [...read.problems];
  if (name.length > MAX_RELEASE_NAME || !RELEASE_NAME.test(name)) {
    problems.unshift(
      `metadata.name: the proxy's objects are named after the release (Service ${metricsServiceName('<name>')}), so it must be ` +
        `at most ${MAX_RELEASE_NAME} lower-case letters, digits and '-', got ${JSON.stringify(name)}`,
    );
  }
  if (!read.ok || problems.length > 0) return { ok: false, problems };
  const spec = read.spec;
  const meta = (objectName: string, component: 'proxy' | 'metrics' = 'proxy', owned = true) => ({
    name: objectName,
    namespace: release.metadata.namespace,
    labels: { ...managedLabels(name, component) },
    // No owner while the release is being deleted: a foreground deletion would take a proxy made
    // now at once, and the proxy must run until it has handed the Services back.
    ...(owned && release.metadata.deletionTimestamp == null ? { ownerReferences: [ownerOf(release)] } : {}),
  });
  // The pods' identity has no owner: the garbage collector would take it with the release, while
  // proxy pods still run their grace period and talk to the API (a 403 for each request). The
  // manager deletes it itself once no proxy pod is left (children.ts, removalsOf).
  const identity = (objectName: string) => meta(objectName, 'proxy', false);
  const objects: RenderedProxy = {
    serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: identity(proxyName(name)) },
    roleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: identity(proxyName(name)),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: PROXY_CLUSTER_ROLE },
      subjects: [{ kind: 'ServiceAccount', name: proxyName(name), namespace: release.metadata.namespace }],
    },
    deployment: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(proxyName(name)),
      spec: deploymentSpec(release, spec, settings),
    },
    podDisruptionBudget: {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: meta(proxyName(name)),
      spec: proxyDisruptionBudgetSpec({ [LABEL_RELEASE]: name }),
    },
    metricsService: {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: meta(metricsServiceName(name), 'metrics'),
      spec: {
        type: 'ClusterIP',
        selector: { [LABEL_RELEASE]: name },
        ports: [{ name: 'admin', port: DEFAULT_ADMIN_PORT, targetPort: 'admin', protocol: 'TCP' }],
      },
    },
  };
  return { ok: true, spec, objects: withDigests(objects) };
}

function ownerOf(release: ManagedRelease): V1OwnerReference {
  // No blockOwnerDeletion: it needs `update` on canaryreleases/finalizers where
  // OwnerReferencesPermissionEnforcement runs, and the proxy's finalizer already orders deletion.
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    name: release.metadata.name,
    uid: release.metadata.uid,
    controller: true,
  };
}

function deploymentSpec(release: ManagedRelease, spec: ProxySpec, settings: RenderSettings): V1Deployment['spec'] {
  const name = release.metadata.name;
  const env: V1EnvVar[] = [
    { name: 'CANARY_RELEASE_NAME', value: name },
    // In a pod: the proxy listens on the Services' own targetPorts and waits for a Ready pod of its own.
    { name: 'CANARY_L4_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'CANARY_RELEASE_NAMESPACE', value: release.metadata.namespace ?? '' },
    ...proxyCommonEnv(),
    // The last served config, kept across container restarts: a proxy restarted while the API is
    // unreachable serves it at once instead of black-holing its Services.
    { name: 'CANARY_L4_STATE_DIR', value: STATE_DIR },
  ];
  return proxyDeploymentSpec({
    selector: { [LABEL_RELEASE]: name },
    podLabels: { ...managedLabels(name, 'proxy'), ...proxyTakeoverLabels(release) },
    serviceAccountName: proxyName(name),
    image: settings.proxyImage,
    args: ['proxy'],
    env,
    // The proxy listens on the Services' own targetPorts (or ports from --port-base); only the
    // admin port and the Services' named targetPorts are declared, the latter so the names resolve.
    ports: namedPorts(release),
    placement: spec,
    volumes: [
      { volume: { name: 'state', emptyDir: { sizeLimit: '1Mi' } }, mount: { name: 'state', mountPath: STATE_DIR } },
    ],
  });
}

/**
 * The labels the taken-over Services select (status.takeover, written by the proxy), so the
 * proxy pods carry them; they may take the place of the informational app.kubernetes.io labels,
 * never of the two that find the pods (managed-by, release). Anything not a valid label is left out.
 */
function proxyTakeoverLabels(release: ManagedRelease): Labels {
  const { keys, value } = release.status?.takeover ?? {};
  if (!Array.isArray(keys) || typeof value !== 'string') return {};
  return takeoverLabels({
    keys: keys.filter(
      (key) =>
        typeof key === 'string' &&
        key !== LABEL_MANAGED_BY &&
        key !== LABEL_RELEASE &&
        labelProblems({ [key]: value }).length === 0,
    ),
    value,
  });
}

/** The Services' named targetPorts the proxy container declares on its proxy ports (status.takeover.namedPorts). */
function namedPorts(release: ManagedRelease): V1ContainerPort[] {
  const ports = release.status?.takeover?.namedPorts;
  if (!Array.isArray(ports)) return [];
  return ports
    .filter(
      (port) =>
        typeof port?.name === 'string' &&
        port.name !== PROXY_ADMIN_PORT_NAME &&
        Number.isInteger(port.containerPort) &&
        port.containerPort > 0 &&
        port.containerPort <= 65_535 &&
        (port.protocol === 'TCP' || port.protocol === 'UDP'),
    )
    .map((port) => ({ name: port.name, containerPort: port.containerPort, protocol: port.protocol }));
}
