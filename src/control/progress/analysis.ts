// The proxies' own analysis of a canary (spec.analysis): over one interval, the counters every
// serving replica kept for each side (the forked copy is stable, the canary copy is canary) are
// summed over the release's ports and judged, canary against stable. Pure.

import type { BackendCounters } from '../../dataplane/counters.ts';
import { MIRROR_OUTCOMES, noMirrorCounts, type MirrorCounts } from '../../dataplane/stats.ts';
import { listenerName, servedWeight } from '../service/l4.ts';
import { portKeyId } from '../service/ports.ts';
import type { AchievedSplit, AnalysisSpec, AnalysisStatus, PortStatus, SignalResult, Verdict } from '../../api/types.ts';

/** What the proxies counted over one interval, every replica summed (see controller's collector). */
export interface Evidence {
  /** When the interval ended, RFC 3339 with milliseconds. */
  readonly at: string;
  readonly intervalMs: number;
  /** Replicas whose counters it holds. */
  readonly replicas: number;
  readonly latencyBucketsMs: readonly number[];
  /** Counts during the interval, by listener, then backend (`forked`, `canary`). */
  readonly listeners: Readonly<Record<string, Readonly<Record<string, BackendCounters>>>>;
  /** Listeners whose weights changed during the interval (a step, a weight edit, an override, a
   * side turning Ready): their shares are not judged. */
  readonly weightsMoved: readonly string[];
}

/** Whether any proxy counted anything during the interval. */
export function hasCounts(evidence: Evidence): boolean {
  return Object.values(evidence.listeners).some((backends) => Object.values(backends).some((counters) =>
    counters.connections + counters.connectErrors + counters.resets + counters.sessionsReplied + counters.markedDown + (counters.mirror?.mirrored ?? 0) > 0));
}

export const DEFAULT_INTERVAL_MS = 30_000;
const DEFAULT_MIN_SAMPLES = 50;
export const DEFAULT_FAILURE_LIMIT = 2;
/** Below this share of what its weight asks, a canary is starved (taken out, or refusing). */
const STARVED_SHARE = 0.5;
/**
 * A port's share is judged once its weight asks at least this many canary connections/flows: a
 * canary getting under half of 20 is then no accident of small numbers.
 */
const SHARE_MIN_EXPECTED = 20;

interface Side {
  attempts: number;
  errors: number;
  established: number;
  resets: number;
  latency: number[];
  udpSessions: number;
  udpReplied: number;
  markedDown: number;
  /** Mirroring to this side (the canary: a listener's mirror.to), TCP and UDP alike. */
  mirror: MirrorCounts;
}

const emptySide = (buckets: number): Side => ({ attempts: 0, errors: 0, established: 0, resets: 0, latency: new Array<number>(buckets).fill(0), udpSessions: 0, udpReplied: 0, markedDown: 0, mirror: noMirrorCounts() });

/** New connections (TCP) and flows (UDP) a side got. */
const newFlows = (side: Side) => side.established + side.udpSessions;

function add(side: Side, counters: BackendCounters | undefined, udp: boolean): void {
  if (counters === undefined) return;
  side.markedDown += counters.markedDown;
  for (const outcome of MIRROR_OUTCOMES) side.mirror[outcome] += counters.mirror?.[outcome] ?? 0;
  if (udp) {
    side.udpSessions += counters.connections;
    side.udpReplied += counters.sessionsReplied;
    return;
  }
  side.attempts += counters.connections + counters.connectErrors;
  side.errors += counters.connectErrors;
  side.established += counters.connections;
  side.resets += counters.resets;
  counters.connectLatency.forEach((count, index) => (side.latency[index] = (side.latency[index] ?? 0) + count));
}

function sides(evidence: Evidence, ports: readonly PortStatus[]): { stable: Side; canary: Side; byPort: Map<string, { stable: Side; canary: Side }> } {
  const buckets = evidence.latencyBucketsMs.length;
  const total = { stable: emptySide(buckets), canary: emptySide(buckets) };
  const byPort = new Map<string, { stable: Side; canary: Side }>();
  for (const port of ports) {
    const counters = evidence.listeners[listenerName(port)];
    const udp = port.protocol === 'UDP';
    const own = { stable: emptySide(buckets), canary: emptySide(buckets) };
    for (const [side, backend] of [['stable', 'forked'], ['canary', 'canary']] as const) {
      add(total[side], counters?.[backend], udp);
      add(own[side], counters?.[backend], udp);
    }
    byPort.set(portKeyId(port), own);
  }
  return { ...total, byPort };
}

/** The split achieved since the release began: what status held, plus this interval. */
export function achievedWith(evidence: Evidence, ports: readonly PortStatus[]): Map<string, AchievedSplit> {
  const { byPort } = sides(evidence, ports);
  return new Map(ports.map((port) => {
    const delta = byPort.get(portKeyId(port));
    const stable = (port.achieved?.stable ?? 0) + (delta === undefined ? 0 : newFlows(delta.stable));
    const canary = (port.achieved?.canary ?? 0) + (delta === undefined ? 0 : newFlows(delta.canary));
    return [portKeyId(port), { stable, canary, canaryPercent: percent(canary, stable + canary) }];
  }));
}

function percent(part: number, whole: number): number {
  return whole === 0 ? 0 : Math.round((part / whole) * 1000) / 10;
}

const rate = (part: number, whole: number): number | null => (whole === 0 ? null : part / whole);

/** Where a quantile of a latency histogram lies: its bucket's edges, and an estimate inside it. */
interface QuantileMs {
  /** Interpolated within the bucket, as Prometheus' histogram_quantile does. */
  readonly estimate: number;
  readonly lower: number;
  readonly upper: number;
}

/** The `quantile` of the samples counted per upper bound in `boundsMs`; null without samples. */
function quantileMs(latency: readonly number[], boundsMs: readonly number[], quantile: number): QuantileMs | null {
  const total = latency.reduce((sum, count) => sum + count, 0);
  if (total === 0) return null;
  const rank = quantile * total;
  let seen = 0;
  for (let index = 0; index < latency.length; index++) {
    const count = latency[index] ?? 0;
    if (count > 0 && seen + count >= rank) {
      const lower = index === 0 ? 0 : boundsMs[index - 1] ?? 0;
      const upper = boundsMs[index] ?? lower;
      return { estimate: lower + (upper - lower) * ((rank - seen) / count), lower, upper };
    }
    seen += count;
  }
  const last = boundsMs.at(-1) ?? 0;
  return { estimate: last, lower: last, upper: last };
}

function describe(threshold: Record<string, number | undefined>): string {
  return Object.entries(threshold).filter(([, value]) => value !== undefined).map(([key, value]) => `${key} ${value}`).join(', ');
}

function signal(name: string, canary: number | null, stable: number | null, threshold: Record<string, number | undefined>,
  failed: (canary: number, stable: number | null) => boolean): SignalResult {
  const verdict: Verdict = canary === null ? 'Inconclusive' : failed(canary, stable) ? 'Failed' : 'Passed';
  return { name, canary: round(canary), stable: round(stable), threshold: describe(threshold), verdict };
}

function round(value: number | null): number | null {
  return value === null ? null : Math.round(value * 10_000) / 10_000;
}

/** The thresholds of the spec judged on one side pair. */
function thresholdSignals(spec: AnalysisSpec, stable: Side, canary: Side, boundsMs: readonly number[]): SignalResult[] {
  const t = spec.thresholds ?? {};
  const results: SignalResult[] = [];
  const aboveRate = (limit: { max?: number; maxAboveStable?: number }) => (c: number, s: number | null) =>
    (limit.max !== undefined && c > limit.max) || (limit.maxAboveStable !== undefined && s !== null && c > s + limit.maxAboveStable);
  if (t.connectErrorRate !== undefined && canary.attempts + stable.attempts > 0) {
    results.push(signal('connectErrorRate', rate(canary.errors, canary.attempts), rate(stable.errors, stable.attempts), { ...t.connectErrorRate }, aboveRate(t.connectErrorRate)));
  }
  if (t.resetRate !== undefined && canary.established + stable.established > 0) {
    results.push(signal('resetRate', rate(canary.resets, canary.established), rate(stable.resets, stable.established), { ...t.resetRate }, aboveRate(t.resetRate)));
  }
  const latency = t.connectLatencyP99;
  if (latency !== undefined && canary.established + stable.established > 0) {
    const [canaryP99, stableP99] = [quantileMs(canary.latency, boundsMs, 0.99), quantileMs(stable.latency, boundsMs, 0.99)];
    // Against the stable, only what the buckets can tell apart: the lowest the canary's p99 can be
    // against the highest the stable's can (two p99s of ~1 ms in adjacent buckets are not 2.5× apart).
    const slower = (ratio: number) => canaryP99 !== null && stableP99 !== null && stableP99.upper > 0 && canaryP99.lower > stableP99.upper * ratio;
    results.push(signal('connectLatencyP99', canaryP99?.estimate ?? null, stableP99?.estimate ?? null, { ...latency },
      (c) => (latency.maxMs !== undefined && c > latency.maxMs) || (latency.maxRatioToStable !== undefined && slower(latency.maxRatioToStable))));
  }
  const udp = t.udpReplyRate;
  if (udp !== undefined && canary.udpSessions + stable.udpSessions > 0) {
    results.push(signal('udpReplyRate', rate(canary.udpReplied, canary.udpSessions), rate(stable.udpReplied, stable.udpSessions), { ...udp },
      (c, s) => (udp.min !== undefined && c < udp.min) || (udp.maxBelowStable !== undefined && s !== null && c < s - udp.maxBelowStable)));
  }
  results.push(...mirrorSignals(t, canary.mirror));
  return results;
}

/** The mirror's signals (only the canary is mirrored to: no stable side); none until something was mirrored. */
function mirrorSignals(t: NonNullable<AnalysisSpec['thresholds']>, mirror: MirrorCounts): SignalResult[] {
  const results: SignalResult[] = [];
  const above = (max: number | undefined) => (c: number) => max !== undefined && c > max;
  if (t.mirrorMismatchRate !== undefined && mirror.mirrored > 0) {
    results.push(signal('mirrorMismatchRate', rate(mirror.different, mirror.compared), null, { ...t.mirrorMismatchRate }, above(t.mirrorMismatchRate.max)));
  }
  if (t.mirrorErrorRate !== undefined && mirror.mirrored > 0) {
    results.push(signal('mirrorErrorRate', rate(mirror.missing + mirror.dropped, mirror.mirrored), null, { ...t.mirrorErrorRate }, above(t.mirrorErrorRate.max)));
  }
  return results;
}

/**
 * Signals that fail an interval whatever its samples: a canary passive health took out (it refuses,
 * so it gets almost no samples: failing, not inconclusive), and one that got far less than its
 * share of a port's new connections or flows — not judged on a port whose weights moved during the
 * interval (its share then follows neither weight), nor on one with client affinity (its share is
 * its clients' hashes: a handful of clients can leave a healthy canary with none).
 */
function hardSignals(evidence: Evidence, ports: readonly PortStatus[], canary: Side, affinity: ReadonlySet<string>): SignalResult[] {
  const results: SignalResult[] = [];
  if (canary.markedDown > 0) {
    results.push({ name: 'canaryDown', canary: canary.markedDown, stable: null, threshold: 'never taken out by passive health', verdict: 'Failed' });
  }
  const { byPort } = sides(evidence, ports);
  const moved = new Set(evidence.weightsMoved);
  for (const port of ports) {
    if (moved.has(listenerName(port)) || affinity.has(listenerName(port))) continue;
    const weight = servedWeight(port);
    const split = byPort.get(portKeyId(port));
    if (split === undefined || weight <= 0 || weight >= 100) continue;
    const total = newFlows(split.stable) + newFlows(split.canary);
    if ((total * weight) / 100 < SHARE_MIN_EXPECTED) continue;
    const share = newFlows(split.canary) / total;
    if (share < (weight / 100) * STARVED_SHARE) {
      results.push({ name: 'canaryShare', canary: round(share), stable: null, threshold: `at least ${STARVED_SHARE * weight}% of ${port.service}:${port.port}/${port.protocol} (weight ${weight}%)`, verdict: 'Failed' });
    }
  }
  return results;
}

function failureMessage(failed: readonly SignalResult[]): string {
  return failed.map((result) => (result.name === 'canaryDown'
    ? `canaryDown: passive health took the canary out ${result.canary} time(s)`
    : `${result.name}: canary ${result.canary ?? '-'}, stable ${result.stable ?? '-'}, threshold ${result.threshold}`)).join('; ');
}

/**
 * The verdict on one interval: Failed on a hard signal or a threshold crossed; Inconclusive with
 * fewer canary samples than minSamples, or none at all whatever minSamples says (never Passed on too
 * little); else Passed. Failures count up in a row; a pass resets them, an inconclusive interval does not.
 */
export function judge(evidence: Evidence, spec: AnalysisSpec, ports: readonly PortStatus[], previous: AnalysisStatus | undefined, affinity: ReadonlySet<string> = new Set()): AnalysisStatus {
  const { stable, canary } = sides(evidence, ports);
  // A dark canary (weight 0, mirrored to) is judged on the flows mirrored to it.
  const samples = newFlows(canary) + canary.mirror.mirrored;
  const minSamples = Math.max(1, spec.minSamples ?? DEFAULT_MIN_SAMPLES);
  const hard = hardSignals(evidence, ports, canary, affinity);
  const signals = [...hard, ...thresholdSignals(spec, stable, canary, evidence.latencyBucketsMs)];
  const failed = signals.filter((result) => result.verdict === 'Failed');
  const verdict: Verdict = hard.length > 0 ? 'Failed' : samples < minSamples ? 'Inconclusive' : failed.length > 0 ? 'Failed' : 'Passed';
  const failures = verdict === 'Failed' ? (previous?.failures ?? 0) + 1 : verdict === 'Passed' ? 0 : previous?.failures ?? 0;
  const message = verdict === 'Failed' ? failureMessage(failed)
    : verdict === 'Inconclusive' ? `too few samples: ${samples} canary connections/flows, minSamples ${minSamples}` : `${samples} canary connections/flows judged`;
  return { at: evidence.at, intervalMs: evidence.intervalMs, replicas: evidence.replicas, samples, verdict, signals, failures, message };
}
