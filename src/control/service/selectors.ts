// Label selectors of Services matched against pods, and the check that keeps the two versions apart.

import type { V1Pod } from '@kubernetes/client-node';
import type { Labels } from '../../api/names.ts';

export function selectorsEqual(a: Labels | undefined, b: Labels | undefined): boolean {
  const aKeys = Object.keys(a ?? {});
  return aKeys.length === Object.keys(b ?? {}).length && aKeys.every((key) => a?.[key] === b?.[key]);
}

/** Whether `selector` holds every label of `part` (it may hold others beside them). */
export function selectorContains(selector: Labels | undefined, part: Labels): boolean {
  const keys = Object.keys(part);
  return keys.length > 0 && keys.every((key) => selector?.[key] === part[key]);
}

/** `selector` without the keys of `keys`. */
export function withoutKeys(selector: Labels, keys: Labels): Labels {
  return Object.fromEntries(Object.entries(selector).filter(([key]) => !(key in keys)));
}

/** Service semantics: an empty selector selects no pod (the Service has no managed endpoints). */
export function selectorMatches(selector: Labels, labels: Labels | undefined): boolean {
  const entries = Object.entries(selector);
  return entries.length > 0 && entries.every(([key, value]) => labels?.[key] === value);
}

/** Pods that are, or may become, endpoints: not terminating, not finished. */
export function livePods(pods: readonly V1Pod[]): readonly V1Pod[] {
  return pods.filter(
    (pod) =>
      pod.metadata?.deletionTimestamp == null && pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed',
  );
}

/** Pods that are endpoints now, as the endpoints controller decides: Running and Ready, not terminating. */
export function readyPods(pods: readonly V1Pod[]): readonly V1Pod[] {
  return livePods(pods).filter(
    (pod) =>
      pod.status?.phase === 'Running' &&
      pod.status.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True') === true,
  );
}

export interface SelectorOverlap {
  readonly first: Labels;
  readonly second: Labels;
  /** Both selectors are the same map: every pod of one is a pod of the other. */
  readonly identical: boolean;
  /** Pods matched by both, by name. */
  readonly pods: readonly string[];
}

/** Whether two selectors would send traffic to the same pods; undefined when they are apart. */
export function findOverlap(first: Labels, second: Labels, pods: readonly V1Pod[]): SelectorOverlap | undefined {
  const identical = selectorsEqual(first, second);
  const shared = pods
    .filter((pod) => selectorMatches(first, pod.metadata?.labels) && selectorMatches(second, pod.metadata?.labels))
    .map((pod) => pod.metadata?.name ?? '<unnamed>');
  return identical || shared.length > 0 ? { first, second, identical, pods: shared } : undefined;
}
