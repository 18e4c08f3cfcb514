// JSON merge patches (RFC 7386) from the live object to the fields we own. Built here, purely, so
// the applier only sends them: a map key we drop must be sent as null (a merge patch merges maps),
// a list is replaced whole (so ports carry their nodePorts), and the observed resourceVersion rides
// along as a precondition, so a write computed from a stale cache fails with 409 instead of
// undoing a newer change (seed defect D3).

import type { V1Service, V1ServicePort } from '@kubernetes/client-node';
import type { OriginalFields } from './originals.ts';
import { ANNOTATION_ORIGINAL, type Labels } from '../../api/names.ts';
import type { CanaryRelease } from '../../api/release-types.ts';

export interface ServiceMergePatch {
  readonly metadata: {
    readonly resourceVersion?: string;
    readonly annotations?: Readonly<Record<string, string | null>>;
    readonly labels?: Labels;
  };
  readonly spec?: {
    readonly selector?: Readonly<Record<string, string | null>>;
    readonly ports?: readonly V1ServicePort[];
  };
}

/** No resourceVersion: the status writes of the same reconcile move it on. The list keeps the
 * finalizers of others as observed. */
export interface ReleaseMergePatch {
  readonly metadata: { readonly finalizers: readonly string[] };
}

/** The merge patch turning `live`'s selector into `desired`, or undefined when they are equal. */
export function selectorPatch(live: Labels | undefined, desired: Labels): Record<string, string | null> | undefined {
  const patch: Record<string, string | null> = {};
  for (const key of Object.keys(live ?? {})) if (!(key in desired)) patch[key] = null;
  for (const [key, value] of Object.entries(desired)) if (live?.[key] !== value) patch[key] = value;
  return Object.keys(patch).length === 0 ? undefined : patch;
}

const PORT_FIELDS = ['name', 'port', 'protocol', 'targetPort', 'nodePort', 'appProtocol'] as const;

export function portsEqual(a: readonly V1ServicePort[], b: readonly V1ServicePort[]): boolean {
  return (
    a.length === b.length && a.every((port, index) => PORT_FIELDS.every((field) => port[field] === b[index]?.[field]))
  );
}

/** Patch of an original Service to the fields we own, or undefined when it already has them. */
export function originalPatch(service: V1Service, fields: OriginalFields): ServiceMergePatch | undefined {
  const selector = selectorPatch(service.spec?.selector, fields.selector);
  const livePorts = service.spec?.ports ?? [];
  const ports = portsEqual(livePorts, fields.ports) ? undefined : fields.ports;
  const liveAnnotation = service.metadata?.annotations?.[ANNOTATION_ORIGINAL] ?? null;
  const annotation = liveAnnotation === fields.annotation ? undefined : fields.annotation;
  if (selector === undefined && ports === undefined && annotation === undefined) return undefined;
  return {
    metadata: {
      ...resourceVersionOf(service),
      ...(annotation === undefined ? {} : { annotations: { [ANNOTATION_ORIGINAL]: annotation } }),
    },
    spec: { ...(selector === undefined ? {} : { selector }), ...(ports === undefined ? {} : { ports }) },
  };
}

/** Patch of a copy to its desired selector, ports and labels, or undefined when it has them. */
export function copyPatch(live: V1Service, desired: V1Service): ServiceMergePatch | undefined {
  const selector = selectorPatch(live.spec?.selector, desired.spec?.selector ?? {});
  const ports = portsEqual(live.spec?.ports ?? [], desired.spec?.ports ?? []) ? undefined : desired.spec?.ports;
  const wantedLabels = desired.metadata?.labels ?? {};
  const labelsMissing = Object.entries(wantedLabels).some(([key, value]) => live.metadata?.labels?.[key] !== value);
  if (selector === undefined && ports === undefined && !labelsMissing) return undefined;
  return {
    metadata: { ...resourceVersionOf(live), ...(labelsMissing ? { labels: wantedLabels } : {}) },
    spec: { ...(selector === undefined ? {} : { selector }), ...(ports === undefined ? {} : { ports }) },
  };
}

/** The finalizer list with ours added or removed (others' kept), or undefined when already so. */
export function finalizerPatch(
  release: CanaryRelease,
  finalizer: string,
  wanted: boolean,
): ReleaseMergePatch | undefined {
  const finalizers = release.metadata.finalizers ?? [];
  if (finalizers.includes(finalizer) === wanted) return undefined;
  return {
    metadata: { finalizers: wanted ? [...finalizers, finalizer] : finalizers.filter((item) => item !== finalizer) },
  };
}

function resourceVersionOf(service: V1Service): { resourceVersion?: string } {
  const resourceVersion = service.metadata?.resourceVersion;
  return resourceVersion === undefined ? {} : { resourceVersion };
}

/**
 * RFC 7386 as kube-apiserver applies it (evanphx/json-patch): a null deletes its key; a list is
 * replaced, and the objects in it keep no null-valued keys (`ports: [{override: null}]` is stored
 * as `ports: [{}]`).
 */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (Array.isArray(patch)) return patch.map(withoutNullKeys);
  if (!isPlainObject(patch)) return patch;
  const result: Record<string, unknown> = isPlainObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

/** A value a merge patch puts in place whole: its objects' null-valued keys dropped, at any depth (null list items stay). */
function withoutNullKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNullKeys);
  if (!isPlainObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, item]) => item !== null)
      .map(([key, item]) => [key, withoutNullKeys(item)]),
  );
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
