// The names the manager gives the objects it keeps for a CanaryRelease, the labels that find them
// again, and the ProxyAvailable condition it writes. The parts of the CanaryRelease it reads
// (spec.proxy) and writes (status.proxy) are API types: api/proxy-types.ts.

import type { Labels } from '../api/names.ts';
import { GROUP, LABEL_RELEASE } from '../api/names.ts';

/** app.kubernetes.io/managed-by on every object the manager keeps: what it may update or delete. */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'canary-l4-manager';
/** On the manager's objects: a digest of what the manager rendered, so a field it stopped setting is noticed. */
export const ANNOTATION_RENDERED = `${GROUP}/rendered`;
/** The ClusterRole (deploy/proxy-rbac.yaml) every proxy's RoleBinding points to. */
export const PROXY_CLUSTER_ROLE = 'canary-l4-proxy';
/** The condition the manager owns on each CanaryRelease (the proxy owns the others). */
export const PROXY_CONDITION = 'ProxyAvailable';
/** At most this many pods are listed in status.proxy.pods (the counts cover them all). */
export const MAX_LISTED_PODS = 10;

/** The proxy Deployment, its PodDisruptionBudget, ServiceAccount and RoleBinding: `canary-l4-<release>`. */
export function proxyName(release: string): string {
  return `canary-l4-${release}`;
}

/** The proxy's metrics Service. */
export function metricsServiceName(release: string): string {
  return `${proxyName(release)}-metrics`;
}

/** Labels of every object kept for a release (the proxy pods carry them too). */
export function managedLabels(release: string, component: 'proxy' | 'metrics'): Labels {
  return {
    'app.kubernetes.io/name': 'canary-l4',
    'app.kubernetes.io/instance': release,
    'app.kubernetes.io/component': component,
    [LABEL_MANAGED_BY]: MANAGED_BY,
    [LABEL_RELEASE]: release,
  };
}
