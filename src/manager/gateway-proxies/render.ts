// The objects the manager keeps for one Gateway of canary-l4's class, rendered from it and the
// manager's flags. Pure. The pods are a proxy Deployment like a release's (pod.ts: the same
// rollout, hardened pod, probes on the admin port, grace period, resources, PDB), running
// `canary-l4 gateway` for this one Gateway; their Service has one port per distinct (port,
// protocol) of the TCP and UDP listeners. The Deployment does not depend on the listeners (the
// gateway command reads them itself), so a listener change changes the Service alone.

import type {
  V1ClusterRoleBinding,
  V1Deployment,
  V1OwnerReference,
  V1PodDisruptionBudget,
  V1RoleBinding,
  V1Service,
  V1ServicePort,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import { GATEWAY_GROUP, GATEWAY_VERSION, gatewayProxyName, servedProtocol } from '../../api/gateway/names.ts';
import type { Gateway } from '../../api/gateway/types.ts';
import { withDigests } from '../children.ts';
import { proxyCommonEnv, proxyDeploymentSpec, proxyDisruptionBudgetSpec } from '../pod.ts';
import { DEFAULT_PROXY_SPEC } from '../proxy-spec.ts';
import type { RenderSettings } from '../render.ts';
import {
  ANNOTATION_SERVICE_TYPE,
  GATEWAY_CLUSTER_ROLE,
  GATEWAY_LEASE_ROLE,
  gatewayClusterBindingName,
  gatewayLabels,
  LABEL_GATEWAY,
  LABEL_GATEWAY_NAMESPACE,
  MAX_GATEWAY_NAME,
  SERVICE_TYPES,
} from './names.ts';

export type GatewayKind =
  | 'serviceAccount'
  | 'roleBinding'
  | 'clusterRoleBinding'
  | 'deployment'
  | 'podDisruptionBudget'
  | 'service';
/** The order objects are created in (the pods need their account and its rights first); deleted in reverse. */
export const GATEWAY_KINDS: readonly GatewayKind[] = [
  'serviceAccount',
  'roleBinding',
  'clusterRoleBinding',
  'deployment',
  'podDisruptionBudget',
  'service',
];

export interface RenderedGateway {
  readonly serviceAccount: V1ServiceAccount;
  /** Its Lease, in its own namespace only. */
  readonly roleBinding: V1RoleBinding;
  /** What it reads and writes in every namespace. */
  readonly clusterRoleBinding: V1ClusterRoleBinding;
  readonly deployment: V1Deployment;
  readonly podDisruptionBudget: V1PodDisruptionBudget;
  /** Absent while the Gateway has no TCP or UDP listener (a Service needs a port). */
  readonly service?: V1Service;
}

export type GatewayRenderResult =
  | { readonly ok: true; readonly objects: RenderedGateway; readonly warnings: readonly string[] }
  | { readonly ok: false; readonly problems: readonly string[] };

/** What a Gateway's name must be to label its objects (a DNS subdomain, which the API enforces, within a label value's length). */
const NAME = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;

/** The name of each object kept for the Gateway (the ClusterRoleBinding's holds its namespace). */
export function gatewayChildName(kind: GatewayKind, namespace: string, gateway: string): string {
  return kind === 'clusterRoleBinding' ? gatewayClusterBindingName(namespace, gateway) : gatewayProxyName(gateway);
}

export function renderGateway(gateway: Gateway, settings: RenderSettings): GatewayRenderResult {
  const { name, namespace = '' } = gateway.metadata;
  if (name.length > MAX_GATEWAY_NAME || !NAME.test(name))
    return {
      ok: false,
      problems: [
        `metadata.name: its proxy's objects carry it as the label ${LABEL_GATEWAY}, whose value holds at most ` +
          `${MAX_GATEWAY_NAME} characters (lower-case letters, digits, '-' and '.'); rename the Gateway, got ${JSON.stringify(name)}`,
      ],
    };
  const proxy = gatewayProxyName(name);
  const labels = gatewayLabels(name);
  const selector = { [LABEL_GATEWAY]: name };
  const meta = () => ({ name: proxy, namespace, labels: { ...labels }, ownerReferences: [ownerOf(gateway)] });
  // The pods' identity has no owner, as a release's (render.ts): the manager deletes it once no pod is left.
  const identity = () => ({ name: proxy, namespace, labels: { ...labels } });
  const account = { kind: 'ServiceAccount', name: proxy, namespace };
  const warnings: string[] = [];
  const serviceType = readServiceType(gateway, warnings);
  const ports = servicePorts(gateway);
  const objects: RenderedGateway = {
    serviceAccount: { apiVersion: 'v1', kind: 'ServiceAccount', metadata: identity() },
    roleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: identity(),
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: GATEWAY_LEASE_ROLE },
      subjects: [account],
    },
    clusterRoleBinding: {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      // Cluster-scoped: a namespaced Gateway cannot own it (the garbage collector would never
      // resolve the reference), so the manager deletes it itself when the Gateway goes.
      metadata: {
        name: gatewayClusterBindingName(namespace, name),
        labels: { ...labels, [LABEL_GATEWAY_NAMESPACE]: namespace },
      },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: GATEWAY_CLUSTER_ROLE },
      subjects: [account],
    },
    deployment: {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: meta(),
      spec: proxyDeploymentSpec({
        selector,
        podLabels: labels,
        serviceAccountName: proxy,
        image: settings.proxyImage,
        args: [
          'gateway',
          '-n',
          namespace,
          '--gateway',
          name,
          '--service',
          proxy,
          '--leader-elect',
          '--pod-name',
          '$(POD_NAME)',
        ],
        env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }, ...proxyCommonEnv()],
        // The listener ports are not declared: the template would change with every listener.
        ports: [],
        placement: DEFAULT_PROXY_SPEC,
      }),
    },
    podDisruptionBudget: {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: meta(),
      spec: proxyDisruptionBudgetSpec(selector),
    },
    ...(ports.length === 0
      ? {}
      : {
          service: {
            apiVersion: 'v1',
            kind: 'Service',
            metadata: meta(),
            spec: { type: serviceType, selector: { ...selector }, ports },
          },
        }),
  };
  return { ok: true, objects: withDigests(objects), warnings };
}

function ownerOf(gateway: Gateway): V1OwnerReference {
  // blockOwnerDeletion: a foreground deletion of the Gateway waits for its proxy to go. Where
  // OwnerReferencesPermissionEnforcement runs it needs `update` on gateways/finalizers (deploy/).
  return {
    apiVersion: `${GATEWAY_GROUP}/${GATEWAY_VERSION}`,
    kind: 'Gateway',
    name: gateway.metadata.name,
    uid: gateway.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** One port per distinct (port, protocol) of the TCP and UDP listeners, by port then protocol. */
export function servicePorts(gateway: Gateway): V1ServicePort[] {
  const seen = new Set<string>();
  const ports: V1ServicePort[] = [];
  for (const listener of gateway.spec?.listeners ?? []) {
    const protocol = servedProtocol(listener.protocol);
    if (protocol === undefined || !Number.isInteger(listener.port)) continue;
    const name = `${protocol.toLowerCase()}-${listener.port}`;
    if (seen.has(name)) continue;
    seen.add(name);
    ports.push({ name, port: listener.port, targetPort: listener.port, protocol });
  }
  return ports.sort((a, b) => a.port - b.port || (a.protocol! < b.protocol! ? -1 : 1));
}

function readServiceType(gateway: Gateway, warnings: string[]): (typeof SERVICE_TYPES)[number] {
  const value = gateway.metadata.annotations?.[ANNOTATION_SERVICE_TYPE];
  if (value === undefined) return 'ClusterIP';
  const known = SERVICE_TYPES.find((type) => type === value);
  if (known !== undefined) return known;
  warnings.push(
    `metadata.annotations[${ANNOTATION_SERVICE_TYPE}]: must be ${SERVICE_TYPES.join(' or ')}, got ${JSON.stringify(value)}; ` +
      `the Service stays ClusterIP until it is fixed`,
  );
  return 'ClusterIP';
}
