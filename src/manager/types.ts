// The names the manager gives the objects it keeps for a CanaryRelease, the labels that find them
// again, and the parts of the CanaryRelease it reads (spec.proxy) and writes (status.proxy and the
// ProxyAvailable condition). Everything else of the CanaryRelease belongs to its proxy.

import type { CanaryRelease, Labels } from '../api/types.ts';
import { GROUP, LABEL_RELEASE } from '../api/types.ts';

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

/** spec.proxy, as validated (proxy-spec.ts). */
export interface ProxySpec {
  readonly replicas: number;
  /** The container's resources; undefined: the defaults of deploy/ (requests 100m/128Mi, limit 512Mi). */
  readonly resources: ProxyResources | undefined;
  readonly nodeSelector: Labels | undefined;
  readonly tolerations: readonly Toleration[] | undefined;
  readonly priorityClassName: string | undefined;
}

export interface ProxyResources {
  readonly requests?: Readonly<Record<string, string>>;
  readonly limits?: Readonly<Record<string, string>>;
}

export interface Toleration {
  readonly key?: string;
  readonly operator?: 'Exists' | 'Equal';
  readonly value?: string;
  readonly effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  readonly tolerationSeconds?: number;
}

export interface ProxyPodStatus {
  readonly name: string;
  readonly ready: boolean;
  readonly phase: string;
  readonly restarts: number;
  readonly node?: string;
  /** Why the pod is not running as it should (CrashLoopBackOff, ImagePullBackOff, Evicted, …). */
  readonly reason?: string;
}

/** status.proxy: what the manager keeps for the release, as the cluster reports it. */
export interface ProxyStatus {
  readonly deployment: string;
  /** Desired replicas (spec.proxy.replicas). */
  readonly replicas: number;
  readonly readyReplicas: number;
  /** Replicas running the current template (a rollout is over when this equals replicas). */
  readonly updatedReplicas: number;
  /** `ready/desired`, the PROXY column. */
  readonly ready: string;
  /** Sorted by name, at most MAX_LISTED_PODS. */
  readonly pods: readonly ProxyPodStatus[];
}

/** The CanaryRelease as the manager reads it: spec.proxy is not in the proxy's types. */
export type ManagedRelease = CanaryRelease & {
  readonly spec?: CanaryRelease['spec'] & { readonly proxy?: unknown };
  readonly status?: CanaryRelease['status'] & { readonly proxy?: ProxyStatus | null };
};

/** The manager's condition: the same shape as the proxy's, its own type. */
