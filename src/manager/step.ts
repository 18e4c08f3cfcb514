// The writes a manager pass plans, for a CanaryRelease's proxy and for a Gateway's alike: the kinds
// of object it keeps and what it does to each (apply.ts runs them), and the status writes.

import type { KubernetesObject } from '@kubernetes/client-node';
import type { StatusPatch } from './status.ts';
import type { ClassStatusPatch } from '../api/gateway/class-status.ts';

/** Every kind of object the manager keeps (a release's or a Gateway's). */
export type ManagedKind =
  | 'serviceAccount'
  | 'roleBinding'
  | 'clusterRoleBinding'
  | 'deployment'
  | 'podDisruptionBudget'
  | 'metricsService'
  | 'service';

export const KIND_OF: Readonly<Record<ManagedKind, string>> = {
  serviceAccount: 'ServiceAccount',
  roleBinding: 'RoleBinding',
  clusterRoleBinding: 'ClusterRoleBinding',
  deployment: 'Deployment',
  podDisruptionBudget: 'PodDisruptionBudget',
  metricsService: 'Service',
  service: 'Service',
};

export type Step =
  | { readonly kind: 'create'; readonly child: ManagedKind; readonly object: KubernetesObject }
  /** PUT with the live resourceVersion: a write from a stale read fails (409) instead of undoing a newer one. */
  | { readonly kind: 'replace'; readonly child: ManagedKind; readonly object: KubernetesObject }
  /** With the uid as precondition: never an object of the same name made since. */
  | { readonly kind: 'delete'; readonly child: ManagedKind; readonly name: string; readonly uid: string | undefined }
  /** The CanaryRelease's status.proxy and ProxyAvailable condition. */
  | { readonly kind: 'writeStatus'; readonly patch: StatusPatch }
  /** A GatewayClass's Accepted condition (the class is named by the pass's key). */
  | { readonly kind: 'writeClassStatus'; readonly patch: ClassStatusPatch };
