// The proxies' own analysis of a canary (spec.analysis): over one interval, the counters every
// serving replica kept for each side (the forked copy is stable, the canary copy is canary) are
// summed over the release's ports, added to those of the intervals still undecided, and judged,
// canary against stable, with confidence (signals.ts, confidence.ts). Pure.

import type { BackendCounters } from '../../dataplane/stats/counters.ts';
import { listenerName, servedWeight } from '../service/l4.ts';
import { portKeyId } from '../service/ports.ts';
import type { AchievedSplit, AnalysisSpec, AnalysisStatus, PooledEvidence, PooledSide, PortStatus, SignalCounts, SignalResult, Verdict } from '../../api/types.ts';
import { rateBound } from './confidence.ts';
import { asBadRate, judgeBadRate, judgeSlowShare, quantileMs, RATE_SIGNALS, slowerThan } from './signals.ts';

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
const DEFAULT_CONFIDENCE = 0.99;
/** Below this share of what its weight asks over the time it was eligible, a canary is starved (refusing, or not reached). */
const STARVED_SHARE = 0.5;
/** connectLatencyP99 speaks of the 99th percentile: at most this share of connects slower than the line. */
const SLOW_SHARE = 0.01;

type Side = { -readonly [Key in keyof PooledSide]: PooledSide[Key] extends readonly number[] ? number[] : number };

const emptySide = (buckets: number): Side => ({
  attempts: 0, errors: 0, established: 0, resets: 0, latency: new Array<number>(buckets).fill(0), udpSessions: 0, udpReplied: 0, markedDown: 0,
  heldOut: 0, heldOutResets: 0, udpHeldOut: 0, connectResets: 0, mirrored: 0, mirrorCompared: 0, mirrorDifferent: 0, mirrorFailed: 0,
});

/** New connections (TCP) and flows (UDP) a side got. */
const newFlows = (side: PooledSide) => side.established + side.udpSessions;
/** What passive health kept from a side: the connections and flows its weight offered it while it was held out. */
const heldOutOf = (side: PooledSide) => (side.heldOut ?? 0) + (side.heldOutResets ?? 0) + (side.udpHeldOut ?? 0);
/** What a side was asked: connection attempts (TCP) and flows (UDP), those it was held out of included. */
const asked = (side: PooledSide) => side.attempts + side.udpSessions + heldOutOf(side);
/** The canary's samples: what it was asked, and (a dark canary at weight 0) the flows mirrored to it. */
const samplesOf = (side: PooledSide) => asked(side) + side.mirrored;

function add(side: Side, counters: BackendCounters | undefined, udp: boolean): void {
  if (counters === undefined) return;
  side.markedDown += counters.markedDown;
  const held = counters.heldOut ?? { connect: 0, reset: 0 };
  if (udp) side.udpHeldOut! += held.connect + held.reset;
  else {
    side.heldOut! += held.connect;
    side.heldOutResets! += held.reset;
  }
  const mirror = counters.mirror;
  if (mirror !== undefined) {
    side.mirrored += mirror.mirrored;
    side.mirrorCompared += mirror.compared;
    side.mirrorDifferent += mirror.different;
    side.mirrorFailed += mirror.missing + mirror.dropped;
  }
  if (udp) {
    side.udpSessions += counters.connections;
    side.udpReplied += counters.sessionsReplied;
    return;
  }
  side.attempts += counters.connections + counters.connectErrors;
  side.errors += counters.connectErrors;
  side.connectResets! += counters.connectResets ?? 0;
  side.established += counters.connections;
  side.resets += counters.resets;
  counters.connectLatency.forEach((count, index) => {
    side.latency[index] = (side.latency[index] ?? 0) + count;
  });
}

function addSides(into: Side, from: PooledSide): void {
  // A pool written before mirroring was counted has no mirror fields: 0.
  for (const key of ['attempts', 'errors', 'established', 'resets', 'udpSessions', 'udpReplied', 'markedDown', 'heldOut', 'heldOutResets', 'udpHeldOut', 'connectResets',
    'mirrored', 'mirrorCompared', 'mirrorDifferent', 'mirrorFailed'] as const) into[key] = (into[key] ?? 0) + (from[key] ?? 0);
  from.latency.forEach((count, index) => {
    into.latency[index] = (into.latency[index] ?? 0) + count;
  });
}

interface PortSides {
  readonly stable: Side;
  readonly canary: Side;
  /** Milliseconds passive health held the canary out, every replica summed. */
  readonly canaryOutMs: number;
}

function sides(evidence: Evidence, ports: readonly PortStatus[]): { stable: Side; canary: Side; byPort: Map<string, PortSides> } {
  const buckets = evidence.latencyBucketsMs.length;
  const total = { stable: emptySide(buckets), canary: emptySide(buckets) };
  const byPort = new Map<string, PortSides>();
  for (const port of ports) {
    const counters = evidence.listeners[listenerName(port)];
    const udp = port.protocol === 'UDP';
    const own = { stable: emptySide(buckets), canary: emptySide(buckets) };
    for (const [side, backend] of [['stable', 'forked'], ['canary', 'canary']] as const) {
      add(total[side], counters?.[backend], udp);
      add(own[side], counters?.[backend], udp);
    }
    byPort.set(portKeyId(port), { ...own, canaryOutMs: counters?.canary?.outMs ?? 0 });
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


const round = (value: number | null): number | null => (value === null ? null : Math.round(value * 10_000) / 10_000);
const rateOf = (counts: SignalCounts | null): number | null => (counts === null || counts.of === 0 ? null : counts.count / counts.of);

function describe(threshold: Readonly<Record<string, number | undefined>>): string {
  return Object.entries(threshold).filter(([, value]) => value !== undefined).map(([key, value]) => `${key} ${value}`).join(', ');
}

/** 2700 as `2 700`: counts a person reads at a glance. */
const grouped = (value: number) => String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
const percentOf = (confidence: number) => `${Math.round(confidence * 1000) / 10} % confidence`;
const countsText = (counts: SignalCounts | null) => (counts === null ? '-' : `${grouped(counts.count)} of ${grouped(counts.of)}`);

/** A judged signal, and what an inconclusive one lacks. */
interface Judgement {
  readonly result: SignalResult;
  readonly lacks?: number;
}

/**
 * Events of samples, at most all of them: a reset (a reply) counts in the interval it happens, its
 * connection (flow) in the one it began, so an interval's events can outnumber its samples.
 */
const within = (counts: SignalCounts): SignalCounts => ({ count: Math.min(counts.count, counts.of), of: counts.of });

/**
 * A side's counts with the attempts it failed without serving them put where the user gates: the
 * connections its weight offered it while passive health held it out, and (when the user gates on
 * resetRate alone) its failed connects, whose clients were failed over. What failed connects took
 * it out counts for connectErrorRate, what resets before the first byte took it out for resetRate;
 * for the other one when only that one is gated; UDP flows held out are flows not replied. A
 * connect the backend reset before it completed is a reset when resetRate is gated (the user's word
 * for it), a connect error otherwise.
 * `heldOutIn` is how many of each signal's bad events were held-out ones.
 */
function attributed(side: PooledSide, thresholds: Readonly<Record<string, unknown>>): { side: PooledSide; heldOutIn: Readonly<Record<string, number>> } {
  const gatedConnect = thresholds.connectErrorRate !== undefined;
  const gatedReset = thresholds.resetRate !== undefined;
  const connectToReset = gatedReset && !gatedConnect;
  const resetToConnect = gatedConnect && !gatedReset;
  const held = side.heldOut ?? 0;
  const heldResets = side.heldOutResets ?? 0;
  const udpHeld = side.udpHeldOut ?? 0;
  const asConnects = (connectToReset ? 0 : held) + (resetToConnect ? heldResets : 0);
  // With resetRate alone, every failed connect moves there below; with both, the resets among them do.
  const connectResets = gatedReset && gatedConnect ? side.connectResets ?? 0 : 0;
  const asResets = (resetToConnect ? 0 : heldResets) + (connectToReset ? held + side.errors : connectResets);
  return {
    side: {
      ...side, attempts: side.attempts + asConnects, errors: side.errors + asConnects - connectResets, established: side.established + asResets, resets: side.resets + asResets,
      udpSessions: side.udpSessions + udpHeld,
    },
    heldOutIn: { connectErrorRate: (connectToReset ? 0 : held) + (resetToConnect ? heldResets : 0), resetRate: (resetToConnect ? 0 : heldResets) + (connectToReset ? held : 0), udpReplyRate: udpHeld },
  };
}

/** The thresholds of the spec judged on the pooled counts of both sides. */
function thresholdSignals(spec: AnalysisSpec, stableCounted: PooledSide, canaryCounted: PooledSide, boundsMs: readonly number[], confidence: number): Judgement[] {
  const thresholds = (spec.thresholds ?? {}) as Readonly<Record<string, Readonly<Record<string, number | undefined>> | undefined>>;
  const stable = attributed(stableCounted, thresholds).side;
  const { side: canary, heldOutIn } = attributed(canaryCounted, thresholds);
  const judged: Judgement[] = [];
  for (const signal of RATE_SIGNALS) {
    const threshold = thresholds[signal.name];
    if (threshold === undefined) continue;
    const [canaryCounts, stableCounts] = [within(signal.counts(canary)), within(signal.counts(stable))];
    if (canaryCounts.of + stableCounts.of === 0) continue;
    const bad = asBadRate(signal, canaryCounts, threshold);
    const stableBad = stableCounts.of === 0 ? null : asBadRate(signal, stableCounts, threshold).counts;
    const { verdict, lacks } = judgeBadRate(bad.counts, stableBad, bad.limits, confidence);
    const counts = { canary: canaryCounts, stable: stableCounts.of === 0 ? null : stableCounts };
    const heldOut = heldOutIn[signal.name] ?? 0;
    judged.push({
      result: { name: signal.name, canary: round(rateOf(counts.canary)), stable: round(rateOf(counts.stable)), threshold: describe(threshold), verdict, counts, ...(heldOut > 0 ? { heldOut } : {}) },
      lacks,
    });
  }
  const latency = spec.thresholds?.connectLatencyP99;
  if (latency !== undefined && canary.established + stable.established > 0) judged.push(latencySignal(latency, stable, canary, boundsMs, confidence));
  return judged;
}

/**
 * connectLatencyP99 as a share of slow connects: a p99 above `maxMs` is more than 1 % of connects
 * slower than it; one above `maxRatioToStable` × the stable's p99 is more than 1 % slower than that.
 */
function latencySignal(latency: NonNullable<NonNullable<AnalysisSpec['thresholds']>['connectLatencyP99']>, stable: PooledSide, canary: PooledSide, boundsMs: readonly number[], confidence: number): Judgement {
  const [canaryP99, stableP99] = [quantileMs(canary.latency, boundsMs, 0.99), quantileMs(stable.latency, boundsMs, 0.99)];
  // Against maxMs a connect in the bucket the line falls in may be slower; against the stable side
  // only what the buckets can tell apart counts (two p99s of ~1 ms in adjacent buckets are not 2× apart).
  const lines: { line: number; doubtful: boolean }[] = [];
  if (latency.maxMs !== undefined) lines.push({ line: latency.maxMs, doubtful: true });
  if (latency.maxRatioToStable !== undefined && stableP99 !== null) lines.push({ line: latency.maxRatioToStable * stableP99.estimate, doubtful: false });
  const outcomes = lines.map(({ line, doubtful }) => {
    const slow = slowerThan(canary.latency, boundsMs, line);
    return { line, ...judgeSlowShare(doubtful ? slow : { certain: slow.certain, possible: slow.certain }, SLOW_SHARE, confidence) };
  });
  if (latency.maxRatioToStable !== undefined && stableP99 === null) outcomes.push({ line: Number.NaN, verdict: 'Inconclusive', lacks: Number.POSITIVE_INFINITY });
  const failed = outcomes.find((outcome) => outcome.verdict === 'Failed');
  const open = outcomes.filter((outcome) => outcome.verdict === 'Inconclusive');
  const verdict: Verdict = failed !== undefined ? 'Failed' : open.length > 0 ? 'Inconclusive' : 'Passed';
  const line = (failed ?? open[0] ?? outcomes[0])?.line;
  const counts = line === undefined || Number.isNaN(line) ? undefined
    : { canary: slowerThan(canary.latency, boundsMs, line).certain, stable: slowerThan(stable.latency, boundsMs, line).certain };
  const lacks = open.length === 0 ? undefined : Math.max(...open.map((outcome) => outcome.lacks ?? Number.POSITIVE_INFINITY));
  return {
    result: { name: 'connectLatencyP99', canary: round(canaryP99?.estimate ?? null), stable: round(stableP99?.estimate ?? null), threshold: describe({ ...latency }), verdict, ...(counts === undefined ? {} : { counts }) },
    lacks,
  };
}

/**
 * A canary that got far less than its share of a port's new connections or flows over the time it
 * was eligible (not taken out by passive health): its weight asks `weight` % of them while eligible,
 * and it fails once the counts show it under half that. Not judged on a port whose weights moved
 * during the interval (its share then follows neither weight), nor on one with client affinity (its
 * share is its clients' hashes: a handful of clients can leave a healthy canary with none). Listed
 * only when it fails.
 */
function shareSignals(evidence: Evidence, ports: readonly PortStatus[], affinity: ReadonlySet<string>, confidence: number): SignalResult[] {
  const results: SignalResult[] = [];
  const { byPort } = sides(evidence, ports);
  const moved = new Set(evidence.weightsMoved);
  for (const port of ports) {
    if (moved.has(listenerName(port)) || affinity.has(listenerName(port))) continue;
    const weight = servedWeight(port);
    const split = byPort.get(portKeyId(port));
    if (split === undefined || weight <= 0 || weight >= 100) continue;
    const eligible = Math.min(1, Math.max(0, 1 - split.canaryOutMs / (evidence.intervalMs * Math.max(1, evidence.replicas))));
    const least = (weight / 100) * eligible * STARVED_SHARE;
    const counts = { count: newFlows(split.canary), of: newFlows(split.stable) + newFlows(split.canary) };
    if (counts.of === 0 || rateBound(counts, confidence, 'upper') >= least) continue;
    results.push({
      name: 'canaryShare', canary: round(counts.count / counts.of), stable: null, verdict: 'Failed', counts: { canary: counts, stable: null },
      threshold: `at least ${Math.round(least * 1000) / 10}% of ${port.service}:${port.port}/${port.protocol} (weight ${weight}%, eligible ${Math.round(eligible * 100)}% of the interval)`,
    });
  }
  return results;
}

function signalText(result: SignalResult, confidence: number): string {
  const heldOut = result.heldOut === undefined ? '' : ` (${grouped(result.heldOut)} of them while passive health held it out)`;
  const counts = result.counts === undefined ? `canary ${result.canary ?? '-'}, stable ${result.stable ?? '-'}`
    : `canary ${countsText(result.counts.canary)}${heldOut}, stable ${countsText(result.counts.stable ?? null)}`;
  return `${result.name}: ${counts}, threshold ${result.threshold}, ${percentOf(confidence)}`;
}

function lacksText(lacks: number | undefined): string {
  return lacks === undefined || !Number.isFinite(lacks) ? 'not decided yet' : `about ${grouped(lacks)} more canary samples to decide`;
}

/** The pool this interval adds to: the previous one while it was inconclusive (same buckets), else none. */
function poolOf(previous: AnalysisStatus | undefined, buckets: number): { intervals: number; stable: Side; canary: Side } {
  const pool = { intervals: 0, stable: emptySide(buckets), canary: emptySide(buckets) };
  const before = previous?.verdict === 'Inconclusive' ? previous.pooled : undefined;
  if (before === undefined || before.canary.latency.length !== buckets || before.stable.latency.length !== buckets) return pool;
  addSides(pool.stable, before.stable);
  addSides(pool.canary, before.canary);
  return { ...pool, intervals: before.intervals };
}

/**
 * The verdict on one interval. Evidence accumulates: the counts of every interval since the last
 * decisive verdict are judged together, so a low-traffic port still decides, later; a decisive
 * verdict (Passed or Failed) starts afresh, so failures in a row rest on fresh evidence each.
 * A signal fails when the counts show the canary beyond its threshold at the confidence, passes
 * when they show it within. The interval fails when a signal fails; passes when every signal
 * passes on at least minSamples canary samples (and one at least); else is inconclusive, saying what
 * it lacks. A canary that failed and has had no sample since (passive health holds it out: it is
 * dead) stays failed. Failures count up in a row; a pass resets them, an inconclusive interval does not.
 */
export function judge(evidence: Evidence, spec: AnalysisSpec, ports: readonly PortStatus[], previous: AnalysisStatus | undefined, affinity: ReadonlySet<string> = new Set()): AnalysisStatus {
  const confidence = spec.confidence ?? DEFAULT_CONFIDENCE;
  const interval = sides(evidence, ports);
  const pool = poolOf(previous, evidence.latencyBucketsMs.length);
  addSides(pool.stable, interval.stable);
  addSides(pool.canary, interval.canary);
  const pooled: PooledEvidence = { ...pool, intervals: pool.intervals + 1 };
  const samples = samplesOf(interval.canary);
  const minSamples = Math.max(1, spec.minSamples ?? DEFAULT_MIN_SAMPLES);
  // The pool, and the interval alone: a canary that turns bad after a long undecided stretch is not
  // hidden by the good counts before it. A second look, so at a tenth of the error rate.
  const alone = pooled.intervals === 1 ? [] : thresholdSignals(spec, interval.stable, interval.canary, evidence.latencyBucketsMs, 1 - (1 - confidence) / 10);
  const judged = thresholdSignals(spec, pooled.stable, pooled.canary, evidence.latencyBucketsMs, confidence)
    .map((item) => alone.find((fresh) => fresh.result.name === item.result.name && fresh.result.verdict === 'Failed' && item.result.verdict !== 'Failed') ?? item);
  const signals = [...shareSignals(evidence, ports, affinity, confidence), ...judged.map((item) => item.result)];
  const failed = signals.filter((result) => result.verdict === 'Failed');
  const open = judged.filter((item) => item.result.verdict === 'Inconclusive');
  const stillDead = failed.length === 0 && samples === 0 && previous?.verdict === 'Failed';
  const enough = samplesOf(pooled.canary) >= minSamples;
  const verdict: Verdict = failed.length > 0 || stillDead ? 'Failed' : open.length === 0 && enough ? 'Passed' : 'Inconclusive';
  const failures = verdict === 'Failed' ? (previous?.failures ?? 0) + 1 : verdict === 'Passed' ? 0 : previous?.failures ?? 0;
  const over = `${pooled.intervals} interval(s) judged together`;
  const keptFrom = heldOutOf(pooled.canary);
  const takenOut = pooled.canary.markedDown === 0 && keptFrom === 0 ? ''
    : `; passive health took the canary out ${pooled.canary.markedDown} time(s)${keptFrom === 0 ? ''
      : `, and the ${grouped(keptFrom)} connections/flows its weight offered it meanwhile count as attempts it failed (it was still failing a passive-health timeout after it first failed)`}`;
  const message = stillDead ? `no canary sample since it failed (passive health holds it out): ${previous.message}`
    : verdict === 'Failed' ? failed.map((result) => signalText(result, confidence)).join('; ') + takenOut
    : verdict === 'Passed' ? `${grouped(samplesOf(pooled.canary))} canary connections/flows judged (${over}), every threshold within at ${percentOf(confidence)}`
    : [...(enough ? [] : [`too few samples: ${grouped(samplesOf(pooled.canary))} canary connections/flows over ${over.replace(' judged together', '')}, minSamples ${minSamples}`]),
      ...open.map((item) => `${signalText(item.result, confidence)}: ${lacksText(item.lacks)}`)].join('; ') + takenOut;
  return {
    at: evidence.at, intervalMs: evidence.intervalMs, replicas: evidence.replicas, samples, verdict, confidence, signals, failures, message,
    ...(verdict === 'Inconclusive' ? { pooled } : {}),
  };
}
