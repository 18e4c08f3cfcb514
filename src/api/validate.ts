// The one validation of a CanaryRelease spec: everything that can be judged from the object alone,
// one line per problem naming the field and the fix. The proxy's controller holds a release with any
// of these (phase Holding, Failure reason InvalidRelease) and acts on nothing it asks; `kubectl
// canary-l4 plan` shows the same lines; the manager takes its replicas bound from here. Checks that
// need the cluster (does the Service exist, what does the patched template of that Deployment look
// like) are the controller's; the pod-template check they end in is here, so plan and the
// controller say the same. Pure. Imports nothing above api/.

import type { V1PodTemplateSpec } from '@kubernetes/client-node';
import { labelProblems } from './labels.ts';
import { checkPortSpec } from './spec.ts';
import { formatStep } from './steps.ts';
import type { AnalysisThresholds, CanaryReleaseSpec, WorkloadSpec } from './spec-types.ts';
import type { Labels } from './names.ts';

const UNITS_MS: Readonly<Record<string, number>> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** `30s`, `2m`, `1h`, `500ms`, `1m30s`: milliseconds, or undefined when it is not a duration. */
export function parseDuration(text: string): number | undefined {
  if (typeof text !== 'string') return undefined;
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((part) => part[0]).join('') !== text) return undefined;
  return parts.reduce((sum, part) => sum + Number(part[1]) * UNITS_MS[part[2]!]!, 0);
}

/** The longest timed pause: past it a release is as good as stalled, and a pause of 1e11 h ends at
 * no time a Date can hold. A longer hold is a pause without duration (it waits for a promotion). */
export const MAX_PAUSE_MS = 30 * 24 * 3_600_000;
/** The analysis interval's bounds: a shorter one has the proxies asked for counts in a loop; a
 * longer one judges a canary too late for the verdict to matter. */
export const MIN_INTERVAL_MS = 1_000;
export const MAX_INTERVAL_MS = 3_600_000;
/** Most pods a release asks for, canary workload or proxy: a guard against a typo (10000 for 10). */
export const MAX_REPLICAS = 1000;

/** What a threshold key bounds: a rate in [0, 1], a ratio to stable (>= 1), or milliseconds (>= 1). */
export type ThresholdKind = 'rate' | 'ratio' | 'milliseconds';

/**
 * Every signal spec.analysis.thresholds may name, and each one's keys: the analysis judges exactly
 * these, so a name or key not here would never be judged (and is refused).
 */
export const SIGNAL_THRESHOLDS = {
  connectErrorRate: { max: 'rate', maxAboveStable: 'rate' },
  resetRate: { max: 'rate', maxAboveStable: 'rate' },
  connectLatencyP99: { maxMs: 'milliseconds', maxRatioToStable: 'ratio' },
  udpReplyRate: { min: 'rate', maxBelowStable: 'rate' },
  mirrorMismatchRate: { max: 'rate' },
  mirrorErrorRate: { max: 'rate' },
} as const satisfies Record<keyof AnalysisThresholds, Readonly<Record<string, ThresholdKind>>>;

/** The signal names spec.analysis.thresholds knows. */
export const SIGNAL_NAMES: readonly string[] = Object.keys(SIGNAL_THRESHOLDS);

const KIND_RULES: Readonly<Record<ThresholdKind, { readonly ok: (value: number) => boolean; readonly says: string }>> =
  {
    rate: { ok: (value) => value >= 0 && value <= 1, says: 'a rate from 0 to 1 (0.01 = 1 %)' },
    ratio: { ok: (value) => value >= 1, says: 'a ratio of at least 1 (1.5 = 50 % slower than stable)' },
    milliseconds: { ok: (value) => value >= 1, says: 'milliseconds, at least 1' },
  };

const TRANSITIONS: readonly string[] = ['', 'Adopted', 'Deprecated'];

const show = (value: unknown) => (value === undefined ? 'nothing' : JSON.stringify(value));
const isInteger = (value: unknown): value is number => typeof value === 'number' && Number.isInteger(value);
const isMap = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** `field: must be an integer min–MAX_REPLICAS, got …`, or undefined when `value` is such an integer. */
export function replicasProblem(value: unknown, field: string, min: number, why = ''): string | undefined {
  return isInteger(value) && value >= min && value <= MAX_REPLICAS
    ? undefined
    : `${field}: must be an integer ${min}–${MAX_REPLICAS}${why}, got ${show(value)}`;
}

/** The problems of a CanaryRelease spec, one line each naming the field and the fix; [] when valid. */
export function releaseProblems(spec: CanaryReleaseSpec | undefined): string[] {
  const problems: string[] = [];
  servicesProblems(spec, problems);
  const transition = spec?.transition;
  if (transition !== undefined && !TRANSITIONS.includes(transition)) {
    const exact = TRANSITIONS.find((known) => known !== '' && known.toLowerCase() === String(transition).toLowerCase());
    problems.push(
      `spec.transition: ${show(transition)} is not a transition; write ${exact ?? 'Adopted or Deprecated'}${exact === undefined ? '' : ' (capitalised)'}, or "" while the release runs`,
    );
  }
  stepsProblems(spec, problems);
  analysisProblems(spec, problems);
  (spec?.workloads ?? []).forEach((workload, index, all) => {
    workloadProblems(workload, `spec.workloads[${index}]`, all.slice(0, index), problems);
  });
  return problems;
}

function servicesProblems(spec: CanaryReleaseSpec | undefined, problems: string[]): void {
  const entries = spec?.services ?? [];
  if (entries.length === 0) problems.push('spec.services is empty');
  entries.forEach((entry, index) => {
    const at = `spec.services[${index}]`;
    if (entries.slice(0, index).some((other) => other.service === entry.service))
      problems.push(`${at}: Service ${entry.service} is listed twice`);
    const listed = new Set<string>();
    (entry.ports ?? []).forEach((port, portIndex) => {
      const where = `${at}.ports[${portIndex}]`;
      const protocol = checkPortSpec(port, where, problems);
      if (protocol === undefined) return;
      const id = `${port.port}/${protocol}`;
      if (listed.has(id)) problems.push(`${where}: port ${id} is listed twice`);
      listed.add(id);
    });
    for (const operations of ['canaryServiceOperations', 'forkedServiceOperations'] as const) {
      for (const problem of labelProblems(entry[operations]?.add ?? {}))
        problems.push(`${at}.${operations}.add: ${problem}`);
    }
  });
}

function stepsProblems(spec: CanaryReleaseSpec | undefined, problems: string[]): void {
  const steps = spec?.steps;
  if (steps !== undefined && steps.length === 0) {
    problems.push(
      'spec.steps: is empty, so no step would set a weight; list at least one step, or leave spec.steps out and set spec.services[].ports[].config.weight',
    );
  }
  (steps ?? []).forEach((step, index) => {
    for (const field of ['weight', 'mirror'] as const) {
      const value = step[field];
      if (value !== undefined && !(isInteger(value) && value >= 0 && value <= 100))
        problems.push(`spec.steps[${index}].${field}: must be an integer 0–100, got ${show(value)}`);
    }
    if (step.weight === undefined && step.mirror === undefined)
      problems.push(`spec.steps[${index}]: sets neither weight nor mirror; give it one or both`);
    const duration = step.pause?.duration;
    if (duration === undefined) return;
    const ms = parseDuration(duration);
    if (ms === undefined)
      problems.push(`spec.steps[${index}].pause.duration: "${duration}" is not a duration like 30s, 2m or 1h`);
    else if (ms > MAX_PAUSE_MS) {
      problems.push(
        `spec.steps[${index}].pause.duration: "${duration}" is longer than ${MAX_PAUSE_MS / 3_600_000}h; for a longer hold leave the duration out (the step then waits for kubectl canary-l4 promote)`,
      );
    }
  });
  const promoted = spec?.promotedStep;
  if (promoted === undefined) return;
  const count = steps?.length ?? 0;
  if (!isInteger(promoted) || promoted < 0)
    problems.push(
      `spec.promotedStep: must be a step's index (an integer >= 0: 0 is the first step), got ${show(promoted)}`,
    );
  else if (count === 0)
    problems.push(`spec.promotedStep: is ${promoted} but the release has no spec.steps to promote; remove it`);
  else if (promoted >= count) {
    problems.push(
      `spec.promotedStep: ${promoted} is past the last step (there are ${count}, indexed 0–${count - 1}: step ${formatStep(count - 1, count)} is the last), so it would skip every pause and analysis gate; ` +
        `set it to the step to release (kubectl canary-l4 promote does), or remove it`,
    );
  }
}

function analysisProblems(spec: CanaryReleaseSpec | undefined, problems: string[]): void {
  const analysis = spec?.analysis;
  if (analysis === undefined) return;
  const interval = analysis.interval;
  if (interval !== undefined) {
    const ms = parseDuration(interval);
    if (ms === undefined || ms < MIN_INTERVAL_MS)
      problems.push(`spec.analysis.interval: "${interval}" is not a duration of at least 1s`);
    else if (ms > MAX_INTERVAL_MS)
      problems.push(
        `spec.analysis.interval: "${interval}" is longer than 1h; judge at least once an hour (e.g. 30s, 5m)`,
      );
  }
  for (const field of ['minSamples', 'failureLimit'] as const) {
    const value = analysis[field];
    const min = field === 'failureLimit' ? 1 : 0;
    if (value !== undefined && (!isInteger(value) || value < min))
      problems.push(`spec.analysis.${field}: must be an integer >= ${min}, got ${show(value)}`);
  }
  const confidence = analysis.confidence;
  if (confidence !== undefined && !(typeof confidence === 'number' && confidence > 0.5 && confidence < 1)) {
    problems.push(
      `spec.analysis.confidence: must be a number above 0.5 and below 1 (e.g. 0.99), got ${show(confidence)}`,
    );
  }
  const thresholds: unknown = analysis.thresholds;
  if (thresholds === undefined) return;
  if (!isMap(thresholds)) {
    problems.push(`spec.analysis.thresholds: must be a map of signal name to bounds, got ${show(thresholds)}`);
    return;
  }
  for (const [signal, bounds] of Object.entries(thresholds)) {
    const at = `spec.analysis.thresholds.${signal}`;
    const keys: Readonly<Record<string, ThresholdKind>> | undefined = (
      SIGNAL_THRESHOLDS as Record<string, Record<string, ThresholdKind>>
    )[signal];
    if (keys === undefined) {
      problems.push(`${at}: no such signal, so it would never be judged; the signals are ${SIGNAL_NAMES.join(', ')}`);
      continue;
    }
    if (!isMap(bounds) || Object.keys(bounds).length === 0) {
      problems.push(`${at}: sets no bound, so it would never fail; set ${Object.keys(keys).join(' or ')}`);
      continue;
    }
    for (const [key, value] of Object.entries(bounds)) {
      const kind = keys[key];
      if (kind === undefined) {
        problems.push(
          `${at}.${key}: no such bound of ${signal}, so it would never be judged; write ${Object.keys(keys).join(' or ')}`,
        );
      } else if (typeof value !== 'number' || !Number.isFinite(value) || !KIND_RULES[kind].ok(value)) {
        problems.push(`${at}.${key}: must be ${KIND_RULES[kind].says}, got ${show(value)}`);
      }
    }
  }
}

/** Deployment names are DNS subdomains; `<name>-canary` must be one, with room for the pods' suffixes. */
const MAX_WORKLOAD_NAME = 253 - '-canary'.length - '-0123456789-abcde'.length;

function workloadProblems(
  workload: WorkloadSpec,
  at: string,
  before: readonly WorkloadSpec[],
  problems: string[],
): void {
  if (workload.kind !== undefined && workload.kind !== 'Deployment')
    problems.push(`${at}.kind: "${workload.kind}" is not supported; only Deployment`);
  if (typeof workload.name !== 'string' || workload.name === '')
    problems.push(`${at}.name: must name a Deployment of the namespace, got ${show(workload.name)}`);
  else if (workload.name.length > MAX_WORKLOAD_NAME)
    problems.push(`${at}.name: ${workload.name} is too long for its canary ${workload.name}-canary`);
  if (before.some((other) => other.name === workload.name))
    problems.push(`${at}.name: Deployment ${workload.name} is listed twice`);
  const replicas = replicasProblem(workload.replicas ?? 1, `${at}.replicas`, 0);
  if (replicas !== undefined) problems.push(replicas);
  addsProblems(workload.adds, `${at}.adds`, problems);
}

const ADDED_LISTS = ['containers', 'initContainers', 'volumes', 'containerPorts'] as const;

/** spec.workloads[].adds: lists of names, and of ports. */
function addsProblems(adds: unknown, at: string, problems: string[]): void {
  if (adds === undefined) return;
  if (!isMap(adds)) {
    problems.push(`${at}: must be a map of ${ADDED_LISTS.join(', ')}, got ${show(adds)}`);
    return;
  }
  for (const [list, items] of Object.entries(adds)) {
    if (!(ADDED_LISTS as readonly string[]).includes(list)) {
      problems.push(`${at}.${list}: no such list; the patch can add ${ADDED_LISTS.join(', ')}`);
      continue;
    }
    const ports = list === 'containerPorts';
    const what = ports ? 'a port number 1–65535' : 'a name';
    if (!Array.isArray(items)) {
      problems.push(`${at}.${list}: must be a list, each item ${what}, got ${show(items)}`);
      continue;
    }
    items.forEach((item: unknown, index) => {
      const ok = ports ? isInteger(item) && item >= 1 && item <= 65535 : typeof item === 'string' && item !== '';
      if (!ok) problems.push(`${at}.${list}[${index}]: must be ${what}, got ${show(item)}`);
    });
  }
}

// An image reference as the container runtime parses one (distribution/reference): an optional
// registry host[:port]/, lower-case path components, then :tag and/or @digest.
const HOST_PART = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const PATH_PART = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const IMAGE_REFERENCE = new RegExp(
  `^(?:${HOST_PART}(?:\\.${HOST_PART})*(?::[0-9]+)?/)?${PATH_PART}(?:/${PATH_PART})*` +
    '(?::[\\w][\\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$',
);

/** Whether `image` is a reference a container runtime can pull (`nginx:1.27`, `ghcr.io/org/app@sha256:…`). */
export function isImageReference(image: string): boolean {
  return image.length <= 4096 && IMAGE_REFERENCE.test(image);
}

/**
 * The problems of a pod template a Deployment with `selector` would be made of (the stable
 * template with a release's patch applied), at `where` (the patch's field): the pods need
 * containers, each a name and a pullable image, and the Deployment's selector must still match the
 * template's labels.
 */
export function podTemplateProblems(template: V1PodTemplateSpec, selector: Labels, where: string): string[] {
  const problems: string[] = [];
  const containers: unknown = template.spec?.containers;
  if (!Array.isArray(containers) || containers.length === 0) {
    problems.push(
      `${where}: leaves the pod template without containers; patch containers by name instead of replacing or deleting them`,
    );
  } else {
    containers.forEach((container: unknown, index) => {
      const name =
        isMap(container) && typeof container.name === 'string' && container.name !== '' ? container.name : undefined;
      const what = `${where}.spec.containers[${name === undefined ? index : `name=${name}`}]`;
      if (name === undefined) problems.push(`${what}: a container has no name; every container needs one`);
      const image = isMap(container) ? container.image : undefined;
      if (typeof image !== 'string' || image.trim() === '')
        problems.push(`${what}.image: the container has no image; set one (e.g. registry.example/app:v2)`);
      else if (!isImageReference(image))
        problems.push(
          `${what}.image: "${image}" is not an image reference; write [registry/]repository[:tag][@digest], lower-case, e.g. registry.example/app:v2`,
        );
    });
  }
  const labels = template.metadata?.labels ?? {};
  const lost = Object.entries(selector)
    .filter(([key]) => labels[key] === undefined)
    .map(([key, value]) => `${key}=${value}`);
  if (lost.length > 0) {
    problems.push(
      `${where}.metadata.labels: drops ${lost.join(', ')}, which the Deployment's selector needs; keep these labels (change their values to tell the canary apart if need be)`,
    );
  }
  return problems;
}
