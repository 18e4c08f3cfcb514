// What every phase of reconcile reads: the observed world sorted once, and the status helpers.

import type { V1Service } from '@kubernetes/client-node';
import { buildConditions, type ConditionDrafts } from './conditions.ts';
import { copySource, isCopyOf } from './copies.ts';
import type { Observed, ReconcileOptions, Step } from './desired.ts';
import { classifyOriginal, parseSaved, type OriginalState } from './originals.ts';
import { applyMergePatch, finalizerPatch } from './patches.ts';
import { selectorsEqual } from './selectors.ts';
import {
  ANNOTATION_ORIGINAL, FINALIZER, type CanaryRelease, type CanaryReleaseStatus, type PortStatus, type Transition, type TransitionRecord,
} from './types.ts';

export interface Context {
  readonly observed: Observed;
  readonly options: ReconcileOptions;
  readonly name: string;
  readonly generation: number;
  readonly deleting: boolean;
  /** Every original Service this release may have touched: named by the spec, annotated by this
   * release, with proxy ports in its status, or the source of one of its copies. Not every Service
   * that selects the proxy: the proxy's own (metrics-service.yaml) was never ours to hand back. */
  readonly originals: ReadonlyMap<string, OriginalState>;
  /** The copies this release made, found by label. */
  readonly copies: readonly V1Service[];
  /** status.ports as observed. */
  readonly recorded: readonly PortStatus[];
}

export function observe(observed: Observed, options: ReconcileOptions): Context {
  const { release, services } = observed;
  const name = release.metadata.name;
  const copies = [...services.values()].filter((service) => isCopyOf(service, name));
  const names = new Set<string>((release.spec?.services ?? []).map((entry) => entry.service));
  for (const [serviceName, service] of services) {
    if (savedBy(service) === name) names.add(serviceName);
  }
  // A Service is retargeted only once its proxy ports are in status, and they stay there while it
  // selects the proxy: this finds a retargeted Service whose saved original someone removed.
  for (const port of release.status?.ports ?? []) names.add(port.service);
  for (const copy of copies) {
    const source = copySource(copy);
    if (source !== undefined) names.add(source);
  }
  const originals = new Map([...names].sort().map((serviceName) =>
    [serviceName, classifyOriginal(services.get(serviceName), name, options.proxySelector)] as const));
  return {
    observed,
    options,
    name,
    generation: release.metadata.generation ?? 0,
    deleting: release.metadata.deletionTimestamp != null,
    originals,
    copies,
    recorded: release.status?.ports ?? [],
  };
}

function savedBy(service: V1Service): string | undefined {
  const annotation = service.metadata?.annotations?.[ANNOTATION_ORIGINAL];
  if (annotation === undefined) return undefined;
  const parsed = parseSaved(annotation);
  return parsed.ok ? parsed.saved.release : undefined;
}

export function pointsAtProxy(context: Context, service: string): boolean {
  return selectorsEqual(context.observed.services.get(service)?.spec?.selector, context.options.proxySelector);
}

export function makeStatus(context: Context, phase: Transition, transition: TransitionRecord | null,
  drafts: ConditionDrafts, ports: readonly PortStatus[]): CanaryReleaseStatus {
  const conditions = buildConditions(context.observed.release.status?.conditions, drafts, context.generation, context.options.now);
  return { phase, observedGeneration: context.generation, transition, conditions, ports };
}

/** A status write, unless the observed status is already exactly this one. */
export function statusStep(context: Context, status: CanaryReleaseStatus, reason: 'recordTransition' | 'updateStatus' = 'updateStatus'): Step[] {
  return statusWritten(context.observed.release, status) ? [] : [{ kind: 'writeStatus', reason, status }];
}

/** Whether the release already holds `status` as a merge patch of it would leave it: a null field
 * (`transition: null`) is stored as absent, so comparing the objects as they are would write forever. */
export function statusWritten(release: CanaryRelease, status: CanaryReleaseStatus): boolean {
  const observed = release.status ?? {};
  return canonicalJson(observed) === canonicalJson(applyMergePatch(observed, status));
}

export function deleteCopyStep(copy: V1Service): Step {
  return { kind: 'deleteService', reason: 'deleteCopy', name: copy.metadata?.name ?? '', uid: copy.metadata?.uid };
}

export function finalizerStep(context: Context, wanted: boolean): Step[] {
  const patch = finalizerPatch(context.observed.release, FINALIZER, wanted);
  return patch === undefined ? [] : [{ kind: 'patchRelease', reason: wanted ? 'addFinalizer' : 'removeFinalizer', patch }];
}

/** The apiserver returns custom objects with map keys sorted; compare independent of key order. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'object' && item !== null && !Array.isArray(item)
    ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : item));
}
