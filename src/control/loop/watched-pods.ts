// Which Pods and ReplicaSets of the namespace the proxy caches: only those its release's selectors
// can match, so that its memory does not grow with the pods of other applications.
//
// A Kubernetes label selector is one AND of requirements; the union of a release's selectors is
// an OR. The watch is a superset of that union made of the keys every selector shares: for each
// shared key, `key in (every value a selector gives it)`. A pod that matches any one of the
// selectors carries each shared key with one of those values, so it is in the watch. The
// selectors are, for every Service the release names (or saved, or copied):
// - its original selector (the saved annotation), and the live selector unless it selects the
//   proxy (a Service taken over selects the proxy's pods, which are watched apart) or another
//   release's;
// - the forked and canary selectors: the original with forkedServiceOperations and
//   canaryServiceOperations applied, the canary side also relabelled by each workload patch's
//   labels and given the track label (the canary workload's pods and ReplicaSets);
// - the live selectors of its forked and canary copies (as the last pass wrote them).
// ReplicaSets carry their pods' template labels, so the same selector finds the stable and canary
// ReplicaSets of spec.workloads. The proxy's own pods (--proxy-selector) are a watch of their own:
// its selector is fixed, and shares no key with an application's (canary-l4.io/release=<name>).
// No shared key: the whole namespace is watched, as before. No release, or none of its Services
// found: nothing is watched but the proxy's pods.

import type { V1Service } from '@kubernetes/client-node';
import { applyOperations, labelProblems } from '../../api/labels.ts';
import { ANNOTATION_ORIGINAL, LABEL_TRACK, TRACK_CANARY, type Labels } from '../../api/names.ts';
import type { CanaryRelease } from '../../api/release-types.ts';
import type { CanaryServiceSpec } from '../../api/spec-types.ts';
import { isCopyOf } from '../service/copies.ts';
import { parseSaved, type SavedOriginal } from '../service/originals.ts';
import { selectorContains } from '../service/selectors.ts';

/** Selects every object of the namespace (no requirement). */
export const EVERY_OBJECT = '';

/**
 * The label selector of the release's application Pods and ReplicaSets; undefined when there is
 * nothing to watch (no release, or none of its Services exists). Sorted, so that an unchanged set
 * of selectors gives the same text and the watch is not restarted.
 */
export function watchedSelector(
  release: CanaryRelease | undefined,
  services: readonly V1Service[],
  proxySelector: Labels,
): string | undefined {
  if (release === undefined) return undefined;
  const selectors = releaseSelectors(release, services, proxySelector);
  return selectors.length === 0 ? undefined : sharedKeysSelector(selectors);
}

/** Every selector whose pods a pass of this release may look at (see the header). */
export function releaseSelectors(
  release: CanaryRelease,
  services: readonly V1Service[],
  proxySelector: Labels,
): Labels[] {
  const name = release.metadata.name;
  const entries = new Map((release.spec?.services ?? []).map((entry) => [entry.service, entry] as const));
  const named = new Set([...entries.keys(), ...(release.status?.ports ?? []).map((port) => port.service)]);
  const relabellings = (release.spec?.workloads ?? []).map((workload) => patchLabels(workload.patch));
  const selectors: Labels[] = [];
  for (const service of services) {
    const live = service.spec?.selector ?? {};
    if (isCopyOf(service, name)) {
      selectors.push(live);
      continue;
    }
    const saved = savedOriginal(service);
    const serviceName = service.metadata?.name ?? '';
    if (saved?.release !== name && !named.has(serviceName)) continue;
    // Under another release (this one waits for it), the live selector is that proxy's; the saved
    // original is the application's.
    const livePicksApplication =
      !selectorContains(live, proxySelector) && (saved === undefined || saved.release === name);
    const originals = [saved?.selector, livePicksApplication ? live : undefined];
    for (const original of originals) {
      if (original === undefined || Object.keys(original).length === 0) continue;
      selectors.push(original, ...sides(original, entries.get(serviceName), relabellings));
    }
  }
  return selectors.filter((selector) => Object.keys(selector).length > 0);
}

/** The forked and canary selectors of an original, as plan.ts makes them (with and without workloads). */
function sides(original: Labels, entry: CanaryServiceSpec | undefined, relabellings: readonly Labels[]): Labels[] {
  const canaryOriginals = [
    original,
    ...relabellings.map((labels) => ({ ...relabel(original, labels), [LABEL_TRACK]: TRACK_CANARY })),
  ];
  return [
    applyOperations(original, entry?.forkedServiceOperations),
    ...canaryOriginals.map((canary) => applyOperations(canary, entry?.canaryServiceOperations)),
  ];
}

/** The original's keys, with the values the canary pods' labels give them. */
function relabel(original: Labels, labels: Labels): Labels {
  return Object.fromEntries(Object.entries(original).map(([key, value]) => [key, labels[key] ?? value]));
}

/** spec.workloads[].patch.metadata.labels: the labels a workload patch gives the canary pods. */
function patchLabels(patch: unknown): Labels {
  const labels = (patch as { metadata?: { labels?: unknown } } | null | undefined)?.metadata?.labels;
  if (typeof labels !== 'object' || labels === null) return {};
  return Object.fromEntries(
    Object.entries(labels).filter((entry): entry is [string, string] => typeof entry[1] === 'string'),
  );
}

function savedOriginal(service: V1Service): SavedOriginal | undefined {
  const annotation = service.metadata?.annotations?.[ANNOTATION_ORIGINAL];
  if (annotation === undefined) return undefined;
  const parsed = parseSaved(annotation);
  return parsed.ok ? parsed.saved : undefined;
}

/**
 * `key in (values)` for every key all selectors share, keys and values sorted; EVERY_OBJECT when
 * they share none. A key or value the apiserver would refuse (or an empty value, which `in` cannot
 * name) drops that key's requirement: a wider watch, never a refused one.
 */
export function sharedKeysSelector(selectors: readonly Labels[]): string {
  const [first, ...rest] = selectors;
  if (first === undefined) return EVERY_OBJECT;
  const shared = Object.keys(first)
    .filter((key) => rest.every((selector) => key in selector))
    .sort();
  const requirements: string[] = [];
  for (const key of shared) {
    const values = [...new Set(selectors.map((selector) => selector[key]!))].sort();
    if (values.some((value) => value === '' || labelProblems({ [key]: value }).length > 0)) continue;
    requirements.push(`${key} in (${values.join(',')})`);
  }
  return requirements.join(',');
}
