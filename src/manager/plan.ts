// What the manager does for one CanaryRelease: observed release + the objects kept for it (by
// their names) + its proxy pods → the writes that converge them, and the status to report. Pure,
// level-based: each pass renders everything and compares, so a Deployment deleted by hand, edited
// by hand, or out of date with spec.proxy or --proxy-image comes back as rendered.

import type { KubernetesObject, V1Deployment, V1Pod, V1RoleBinding } from '@kubernetes/client-node';
import { FINALIZER, LABEL_RELEASE } from '../api/names.ts';
import { parseQuantity } from './proxy-spec.ts';
import { renderProxy, type RenderedProxy, type RenderSettings } from './render.ts';
import { availability, proxyStatus, statusPatch, type ConditionDraft, type StatusPatch } from './status.ts';
import { ANNOTATION_RENDERED, LABEL_MANAGED_BY, MANAGED_BY, metricsServiceName, proxyName } from './types.ts';
import type { ManagedRelease, ProxyStatus } from '../api/proxy-types.ts';

export type ChildKind = keyof RenderedProxy;
/** The order objects are created in; deleted in reverse (the metrics Service and the PDB before the Deployment). */
export const CHILD_KINDS: readonly ChildKind[] = [
  'serviceAccount',
  'roleBinding',
  'deployment',
  'podDisruptionBudget',
  'metricsService',
];

export const KIND_OF: Readonly<Record<ChildKind, string>> = {
  serviceAccount: 'ServiceAccount',
  roleBinding: 'RoleBinding',
  deployment: 'Deployment',
  podDisruptionBudget: 'PodDisruptionBudget',
  metricsService: 'Service',
};

export function childName(kind: ChildKind, release: string): string {
  return kind === 'metricsService' ? metricsServiceName(release) : proxyName(release);
}

export interface ObservedRelease {
  readonly namespace: string;
  readonly name: string;
  /** undefined: the release is gone (what is left of its proxy goes too). */
  readonly release: ManagedRelease | undefined;
  /** The objects of the namespace named as this release's would be (they may not be ours). */
  readonly children: Partial<Record<ChildKind, KubernetesObject>>;
  /** Pods labelled for this release. */
  readonly pods: readonly V1Pod[];
  /** Why the apiserver refused the manager's last write for this release, if it did. */
  readonly refusal?: string;
}

export type Step =
  | { readonly kind: 'create'; readonly child: ChildKind; readonly object: KubernetesObject }
  /** PUT with the live resourceVersion: a write from a stale read fails (409) instead of undoing a newer one. */
  | { readonly kind: 'replace'; readonly child: ChildKind; readonly object: KubernetesObject }
  /** With the uid as precondition: never an object of the same name made since. */
  | { readonly kind: 'delete'; readonly child: ChildKind; readonly name: string; readonly uid: string | undefined }
  | { readonly kind: 'writeStatus'; readonly patch: StatusPatch };

export interface Plan {
  readonly steps: readonly Step[];
  /** The proxy status reported (null: no proxy), for metrics. */
  readonly proxy: ProxyStatus | null;
  readonly condition: ConditionDraft | undefined;
}

/** Whether the release needs its proxy now, and if not, why. */
export function proxyNeeded(
  release: ManagedRelease,
): { readonly needed: true } | { readonly needed: false; readonly why: string } {
  // The proxy hands the Services back, then drops its finalizer: until then it must run, whatever
  // the phase says and even while the release is being deleted.
  if (release.metadata.finalizers?.includes(FINALIZER)) return { needed: true };
  if (release.metadata.deletionTimestamp != null)
    return { needed: false, why: 'the release is being deleted and no Service was ever handed to its proxy' };
  const phase = release.status?.phase;
  if (phase === 'Adopted' || phase === 'Deprecated')
    return { needed: false, why: `the release is ${phase}: its proxy was removed` };
  return { needed: true };
}

/** An object the manager made for this release (the label says so): one it may replace or delete. */
export function isOurs(object: KubernetesObject, release: string): boolean {
  const labels = object.metadata?.labels;
  return labels?.[LABEL_MANAGED_BY] === MANAGED_BY && labels[LABEL_RELEASE] === release;
}

export function plan(observed: ObservedRelease, settings: RenderSettings, now: Date): Plan {
  const { release } = observed;
  const ours = CHILD_KINDS.filter(
    (kind) => observed.children[kind] !== undefined && isOurs(observed.children[kind], observed.name),
  );
  if (release === undefined) return { steps: removals(observed, ours), proxy: null, condition: undefined };
  const need = proxyNeeded(release);
  if (!need.needed)
    return withStatus(
      release,
      removals(observed, ours),
      null,
      { status: 'False', reason: 'ReleaseFinished', message: need.why },
      now,
    );

  const rendered = renderProxy(release, settings);
  const live = observed.children.deployment as V1Deployment | undefined;
  if (!rendered.ok) {
    // What runs keeps running: the proxy of the last good spec.proxy still serves the release.
    const kept =
      live !== undefined && isOurs(live, observed.name)
        ? proxyStatus(proxyName(observed.name), 0, live, observed.pods)
        : null;
    return withStatus(
      release,
      [],
      kept,
      { status: 'False', reason: 'InvalidProxySpec', message: `${rendered.problems.join('; ')}; nothing was changed` },
      now,
    );
  }
  const steps: Step[] = [];
  const taken: string[] = [];
  const deleting = release.metadata.deletionTimestamp != null;
  for (const kind of CHILD_KINDS) {
    const desired = rendered.objects[kind];
    const existing = observed.children[kind];
    if (existing === undefined) steps.push({ kind: 'create', child: kind, object: desired });
    else if (!isOurs(existing, observed.name)) taken.push(`${KIND_OF[kind]} ${childName(kind, observed.name)}`);
    // Being deleted: made if missing, otherwise left alone until the proxy has handed back.
    else if (!deleting && roleRefChanged(kind, existing, desired)) steps.push(removal(kind, existing));
    else if (!deleting && outdated(existing, desired))
      steps.push({ kind: 'replace', child: kind, object: replacement(kind, existing, desired) });
  }
  const status = proxyStatus(
    proxyName(observed.name),
    rendered.spec.replicas,
    taken.length === 0 ? live : undefined,
    taken.length === 0 ? observed.pods : [],
  );
  const condition: ConditionDraft =
    taken.length > 0
      ? {
          status: 'False',
          reason: 'NameInUse',
          message: `${taken.join(', ')} exist and are not the manager's (a standalone proxy?): delete them, or rename the release`,
        }
      : observed.refusal !== undefined
        ? { status: 'False', reason: 'Refused', message: `the API refused the proxy's objects: ${observed.refusal}` }
        : availability(status);
  return withStatus(release, taken.length > 0 ? [] : steps, status, condition, now);
}

function withStatus(
  release: ManagedRelease,
  steps: Step[],
  proxy: ProxyStatus | null,
  condition: ConditionDraft,
  now: Date,
): Plan {
  const patch = statusPatch(release, proxy, condition, now);
  return { steps: patch === undefined ? steps : [...steps, { kind: 'writeStatus', patch }], proxy, condition };
}

function removal(kind: ChildKind, object: KubernetesObject): Step {
  return { kind: 'delete', child: kind, name: object.metadata?.name ?? '', uid: object.metadata?.uid };
}

/** What a proxy pod runs as: kept while one is left, so a pod still ending (or restarted by its
 * kubelet after it exited on its own) is never refused by the API (403) it still talks to. */
const POD_IDENTITY: readonly ChildKind[] = ['roleBinding', 'serviceAccount'];

function removals(observed: ObservedRelease, ours: readonly ChildKind[]): Step[] {
  const podsLeft = observed.pods.length > 0;
  return [...ours]
    .reverse()
    .filter((kind) => !(podsLeft && POD_IDENTITY.includes(kind)))
    .map((kind) => removal(kind, observed.children[kind]!));
}

/** A RoleBinding's roleRef cannot change: a different one is deleted and made again. */
function roleRefChanged(kind: ChildKind, existing: KubernetesObject, desired: KubernetesObject): boolean {
  return kind === 'roleBinding' && !covers((existing as V1RoleBinding).roleRef, (desired as V1RoleBinding).roleRef, []);
}

/** Rendered differently since (the digest), or edited by someone since (a rendered field differs). */
export function outdated(existing: KubernetesObject, desired: KubernetesObject): boolean {
  if (existing.metadata?.annotations?.[ANNOTATION_RENDERED] !== desired.metadata?.annotations?.[ANNOTATION_RENDERED])
    return true;
  const { metadata: desiredMeta, ...desiredBody } = desired as KubernetesObject & Record<string, unknown>;
  const { metadata: _existingMeta, ...existingBody } = existing as KubernetesObject & Record<string, unknown>;
  return !covers(existing.metadata?.labels, desiredMeta?.labels, []) || !covers(existingBody, desiredBody, []);
}

/**
 * Whether `live` holds every field of `desired` (the apiserver adds defaults, which are not
 * differences). Lists must match item for item; quantities match by value (`0.5` is `500m`).
 */
export function covers(live: unknown, desired: unknown, path: readonly string[]): boolean {
  if (Array.isArray(desired))
    return (
      Array.isArray(live) &&
      live.length === desired.length &&
      desired.every((item, index) => covers(live[index], item, path))
    );
  if (typeof desired === 'object' && desired !== null) {
    if (typeof live !== 'object' || live === null || Array.isArray(live))
      return Object.keys(desired).length === 0 && (live === undefined || live === null);
    return Object.entries(desired).every(([key, value]) =>
      covers((live as Record<string, unknown>)[key], value, [...path, key]),
    );
  }
  if (live === desired) return true;
  const inResources = path.includes('resources');
  return inResources && parseQuantity(live) !== undefined && parseQuantity(live) === parseQuantity(desired);
}

/** The live object with everything the manager renders put back: its labels, annotations and owner
 * added to the others', and the rendered body (spec, roleRef, subjects) in place of the live one. */
function replacement(kind: ChildKind, existing: KubernetesObject, desired: KubernetesObject): KubernetesObject {
  const { metadata: desiredMeta, ...desiredBody } = desired as KubernetesObject & Record<string, unknown>;
  const metadata = {
    ...existing.metadata,
    labels: { ...existing.metadata?.labels, ...desiredMeta?.labels },
    annotations: { ...existing.metadata?.annotations, ...desiredMeta?.annotations },
    ...(desiredMeta?.ownerReferences === undefined ? {} : { ownerReferences: desiredMeta.ownerReferences }),
  };
  const body = { ...existing, ...desiredBody, metadata } as KubernetesObject & { spec?: Record<string, unknown> };
  if (kind !== 'metricsService') return body;
  // A Service keeps what the apiserver allocated to it (the cluster IP cannot change).
  const allocated = (existing as { spec?: Record<string, unknown> }).spec ?? {};
  const keep = Object.fromEntries(
    ['clusterIP', 'clusterIPs', 'ipFamilies', 'ipFamilyPolicy']
      .filter((field) => allocated[field] !== undefined)
      .map((field) => [field, allocated[field]]),
  );
  return { ...body, spec: { ...body.spec, ...keep } } as KubernetesObject;
}
