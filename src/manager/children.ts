// How the manager brings an object it keeps in line with what it renders, for a release's proxy and
// a Gateway's alike. Pure. Each rendered object carries a digest of itself, so a field the manager
// stopped setting is noticed; a live object is outdated when the digest differs or a rendered field
// was edited since; the replacement keeps what others (the apiserver, users) added.

import type { KubernetesObject, V1RoleBinding } from '@kubernetes/client-node';
import { canonicalDigest } from '../kube/canonical.ts';
import { parseQuantity } from './proxy-spec.ts';
import type { ManagedKind, Step } from './step.ts';
import { ANNOTATION_RENDERED } from './names.ts';

/** The object annotated with a digest of itself. */
export function withDigest<T extends KubernetesObject>(object: T): T {
  return {
    ...object,
    metadata: {
      ...object.metadata,
      annotations: { ...object.metadata?.annotations, [ANNOTATION_RENDERED]: canonicalDigest(object) },
    },
  };
}

/** Every object of a rendering (an object of objects) stamped with its digest. */
export function withDigests<T extends object>(objects: T): T {
  return Object.fromEntries(
    Object.entries(objects).map(([key, object]) => [key, withDigest(object as KubernetesObject)]),
  ) as T;
}

/**
 * The steps that make the live objects (by kind) what was rendered: create what is missing,
 * replace what is outdated, delete and make again a binding whose roleRef changed (it cannot be
 * changed). An object that is not ours (`isOurs`) is never touched: it is listed in `taken`.
 */
export function converge<Kind extends ManagedKind>(
  kinds: readonly Kind[],
  desired: Readonly<Partial<Record<Kind, KubernetesObject>>>,
  live: Readonly<Partial<Record<Kind, KubernetesObject>>>,
  isOurs: (object: KubernetesObject) => boolean,
  leaveLiveAlone = false,
): { readonly steps: Step[]; readonly taken: Kind[] } {
  const steps: Step[] = [];
  const taken: Kind[] = [];
  for (const kind of kinds) {
    const want = desired[kind];
    const existing = live[kind];
    if (want === undefined) {
      if (existing !== undefined && isOurs(existing)) steps.push(removal(kind, existing));
    } else if (existing === undefined) steps.push({ kind: 'create', child: kind, object: want });
    else if (!isOurs(existing)) taken.push(kind);
    else if (leaveLiveAlone) continue;
    else if (roleRefChanged(existing, want)) steps.push(removal(kind, existing));
    else if (outdated(existing, want))
      steps.push({ kind: 'replace', child: kind, object: replacement(existing, want) });
  }
  return { steps, taken };
}

/** What a proxy pod runs as: kept while one is left, so a pod still ending (or restarted by its
 * kubelet after it exited on its own) is never refused by the API (403) it still talks to. */
const POD_IDENTITY: readonly ManagedKind[] = ['roleBinding', 'clusterRoleBinding', 'serviceAccount'];

/** Deleting what is left (`ours`, in creation order), in reverse: the pods' identity last, once no pod is left. */
export function removalsOf<Kind extends ManagedKind>(
  ours: readonly Kind[],
  live: Readonly<Partial<Record<Kind, KubernetesObject>>>,
  podsLeft: boolean,
): Step[] {
  return [...ours]
    .reverse()
    .filter((kind) => !(podsLeft && POD_IDENTITY.includes(kind)))
    .map((kind) => removal(kind, live[kind]!));
}

export function removal(kind: ManagedKind, object: KubernetesObject): Step {
  return { kind: 'delete', child: kind, name: object.metadata?.name ?? '', uid: object.metadata?.uid };
}

/** A binding's roleRef cannot change: a different one is deleted and made again. */
function roleRefChanged(existing: KubernetesObject, desired: KubernetesObject): boolean {
  const want = (desired as V1RoleBinding).roleRef;
  return want !== undefined && !covers((existing as V1RoleBinding).roleRef, want, []);
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
export function replacement(existing: KubernetesObject, desired: KubernetesObject): KubernetesObject {
  const { metadata: desiredMeta, ...desiredBody } = desired as KubernetesObject & Record<string, unknown>;
  // The controller reference is the manager's: one it no longer renders goes (a 0.4 manager owned
  // the pods' identity by the release); references others added stay.
  const ownerReferences = [
    ...(existing.metadata?.ownerReferences ?? []).filter((reference) => reference.controller !== true),
    ...(desiredMeta?.ownerReferences ?? []),
  ];
  const { ownerReferences: _replaced, ...existingMeta } = existing.metadata ?? {};
  const metadata = {
    ...existingMeta,
    labels: { ...existing.metadata?.labels, ...desiredMeta?.labels },
    annotations: { ...existing.metadata?.annotations, ...desiredMeta?.annotations },
    ...(ownerReferences.length === 0 ? {} : { ownerReferences }),
  };
  const body = { ...existing, ...desiredBody, metadata } as KubernetesObject & { spec?: Record<string, unknown> };
  if (desired.kind !== 'Service') return body;
  // A Service keeps what the apiserver allocated to it (the cluster IP cannot change).
  const allocated = (existing as { spec?: Record<string, unknown> }).spec ?? {};
  const keep = Object.fromEntries(
    ['clusterIP', 'clusterIPs', 'ipFamilies', 'ipFamilyPolicy']
      .filter((field) => allocated[field] !== undefined)
      .map((field) => [field, allocated[field]]),
  );
  return { ...body, spec: { ...body.spec, ...keep } } as KubernetesObject;
}
