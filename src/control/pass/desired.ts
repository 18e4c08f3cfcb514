// The boundary between the pure reconcile and the applier: what reconcile is given, and what it
// returns. Every step is absolute (it states the end value, never a delta) and is listed only when
// the observed object differs from it, so a converged release yields no step and a retried one can
// never apply anything twice.

import type { V1Deployment, V1Pod, V1ReplicaSet, V1Service } from '@kubernetes/client-node';
import type { L4Config } from '../../config/types.ts';
import type { Evidence } from '../progress/analysis/evidence.ts';
import type { ReleaseMergePatch, ServiceMergePatch } from '../service/patches.ts';
import type { PortWeightOverride } from '../../api/proxy-flags.ts';
import type { CanaryRelease } from '../../api/release-types.ts';
import type { CanaryReleaseStatus } from '../../api/status-types.ts';
import type { Labels } from '../../api/names.ts';

export interface Observed {
  /** The CanaryRelease, possibly with metadata.deletionTimestamp. */
  readonly release: CanaryRelease;
  /** Every Service of the namespace, by name (informer cache; never mutated). */
  readonly services: ReadonlyMap<string, V1Service>;
  /** Every Pod of the namespace: for the mixing check and "canary matches no pod yet". */
  readonly pods: readonly V1Pod[];
  /** Every Deployment and ReplicaSet of the namespace: the stable and canary workloads (spec.workloads). */
  readonly deployments: ReadonlyMap<string, V1Deployment>;
  readonly replicaSets: readonly V1ReplicaSet[];
  /** Proxy ports on which the local data plane listens and is ready. A change of this set must
   * trigger a reconcile, as an informer event does: retargets wait for it. */
  readonly listening: ReadonlySet<number>;
  /** The error of the controller's last pass, when it failed for a reason other than a stale cache
   * (a conflict): said in the Failure condition until a pass succeeds. */
  readonly apiError?: string;
  /** The latest interval the proxy replicas counted (the leader collects it): achieved split, analysis. */
  readonly evidence?: Evidence;
}

export interface ReconcileOptions {
  /** The labels of the proxy pods: the retargeted original Services select them. */
  readonly proxySelector: Labels;
  /** First proxy port (--port-base). */
  readonly portBase: number;
  /**
   * The proxy runs in a pod of its own (--pod-name): it listens on the Services' own targetPorts
   * where it can, and takes a Service over only once a proxy pod it would select is Ready. Outside
   * a pod (a host) it allocates every proxy port from portBase and cannot check a pod.
   */
  readonly inPod?: boolean;
  /** Ports the proxy pod keeps for itself (its admin port): never a proxy port. */
  readonly reservedPorts?: ReadonlySet<number>;
  /** The address the proxy ports listen on (--listen-address); undefined: every address. */
  readonly listenHost?: string;
  readonly weightOverrides: readonly PortWeightOverride[];
  /** After a hand-back, how long the copies and listeners stay: kube-proxy on every node takes a
   * moment to follow the Service, and clients it still sends to the proxy must find it working. */
  readonly handBackGraceMs: number;
  readonly now: Date;
}

/**
 * One write, in the order the applier must run them; it stops at the first failure and retries the
 * whole reconcile with backoff (the next reconcile lists only what is still missing).
 *
 * - patchRelease: JSON merge patch of the CanaryRelease (metadata.finalizers, with resourceVersion).
 * - patchService: JSON merge patch (`application/merge-patch+json`) of a Service, with the observed
 *   resourceVersion as precondition: 409 → requeue, never retry blindly.
 * - createService: create; AlreadyExists → requeue (the cache is behind).
 * - deleteService: delete with preconditions.uid; NotFound counts as done.
 * - writeStatus: merge patch `{status}` on the status subresource (every field present, so the
 *   patch replaces the whole status).
 * - createDeployment, replaceDeployment, deleteDeployment: the canary workload (uid precondition on
 *   delete); patchDeployment: the stable workload, on adoption only.
 */
export type Step =
  | {
      readonly kind: 'patchRelease';
      readonly reason: 'addFinalizer' | 'removeFinalizer';
      readonly patch: ReleaseMergePatch;
    }
  | {
      readonly kind: 'patchService';
      readonly reason: ServicePatchReason;
      readonly name: string;
      readonly patch: ServiceMergePatch;
    }
  | { readonly kind: 'createService'; readonly reason: 'createCopy'; readonly service: V1Service }
  | {
      readonly kind: 'deleteService';
      readonly reason: 'deleteCopy';
      readonly name: string;
      readonly uid: string | undefined;
    }
  | {
      readonly kind: 'writeStatus';
      readonly reason: 'recordTransition' | 'updateStatus';
      readonly status: CanaryReleaseStatus;
    }
  | { readonly kind: 'createDeployment'; readonly reason: 'createCanaryWorkload'; readonly deployment: V1Deployment }
  /** PUT of the whole canary Deployment (it is ours alone), with the observed resourceVersion. */
  | { readonly kind: 'replaceDeployment'; readonly reason: 'updateCanaryWorkload'; readonly deployment: V1Deployment }
  /** Strategic merge patch of the stable Deployment's template: what Adopted makes the new version. */
  | { readonly kind: 'patchDeployment'; readonly reason: 'adoptStable'; readonly name: string; readonly patch: unknown }
  | {
      readonly kind: 'deleteDeployment';
      readonly reason: 'deleteCanaryWorkload';
      readonly name: string;
      readonly uid: string | undefined;
    };

export type ServicePatchReason =
  /** Annotation with the original selector and ports, before any change to the Service. */
  | 'saveOriginal'
  | 'updateCopy'
  /** Selector values → the proxy pods' (targetPorts → proxy ports where the proxy cannot listen on them), annotation marked retargeted: one patch. */
  | 'retarget'
  /** The same fields on a Service already retargeted that someone edited, or that gained a port. */
  | 'repair'
  /** Selector and targetPorts back from the annotation, annotation dropped: one patch. */
  | 'restore'
  /** Canary selector, targetPorts back, annotation dropped: one patch. */
  | 'adopt';

/**
 * - running: the release converges toward serving; retargets wait for the data plane.
 * - holding: the release cannot go on as written (Failure); nothing changes, the last good
 *   state keeps serving.
 * - transition: Adopted or Deprecated (requested, automatic, or the release being deleted).
 * - archived: status.phase is set; only the finalizer may remain to drop.
 */
export type Mode = 'running' | 'holding' | 'transition' | 'archived';

export interface Desired {
  readonly mode: Mode;
  readonly steps: readonly Step[];
  /** What the data plane should run now. Apply it before the steps: a retarget listed here was
   * gated on ports the data plane already listens on, and a listener is dropped only once no
   * observed Service targets it. */
  readonly l4Config: L4Config;
  /** The status once the steps are done (also in the steps when it differs from the observed one). */
  readonly status: CanaryReleaseStatus;
  /** Reconcile again after this long even if nothing changes (a grace period running out). */
  readonly requeueAfterMs?: number;
  /** What the spec asks that cannot take effect, said in a condition and worth a Warning Event. */
  readonly ignored?: readonly { readonly reason: string; readonly message: string }[];
}
