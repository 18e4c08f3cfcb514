// The parts of the CanaryRelease the manager owns: spec.proxy, which it reads (the proxy Deployment's
// size and placement), and status.proxy, which it writes; and the CanaryRelease seen with them.
// Everything else of the CanaryRelease is the proxy's (spec-types.ts, status-types.ts).

import type { CanaryRelease } from './release-types.ts';
import type { Labels } from './names.ts';

/** spec.proxy, as validated (manager/proxy-spec.ts). */
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
  /** Sorted by name, at most the manager's MAX_LISTED_PODS. */
  readonly pods: readonly ProxyPodStatus[];
}

/** The CanaryRelease as the manager reads it: spec.proxy is not in the proxy's types. */
export type ManagedRelease = CanaryRelease & {
  readonly spec?: CanaryRelease['spec'] & { readonly proxy?: unknown };
  readonly status?: CanaryRelease['status'] & { readonly proxy?: ProxyStatus | null };
};
