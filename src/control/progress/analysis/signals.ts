// The signals the analysis judges, and how one is judged on counts with confidence. A rate signal
// is one entry of RATE_SIGNALS: its threshold's name in spec.analysis.thresholds, what its counts
// are on one side, and whether higher is better. Pure.

import type { PooledSide, SignalCounts, Verdict } from '../../../api/status-types.ts';
import { differenceBound, rateBound, type Counts } from './confidence.ts';

/** A binomial rate the canary is judged on, canary against stable. */
export interface RateSignal {
  /** Its threshold's name in spec.analysis.thresholds. */
  readonly name: string;
  /** `count` of `of` on one side: the rate the threshold speaks of. */
  readonly counts: (side: PooledSide) => SignalCounts;
  /** Higher is better: its thresholds are `min` and `maxBelowStable` (else `max` and `maxAboveStable`). */
  readonly higherIsBetter?: true;
}

export const RATE_SIGNALS: readonly RateSignal[] = [
  { name: 'connectErrorRate', counts: (side) => ({ count: side.errors, of: side.attempts }) },
  { name: 'resetRate', counts: (side) => ({ count: side.resets, of: side.established }) },
  { name: 'udpReplyRate', counts: (side) => ({ count: side.udpReplied, of: side.udpSessions }), higherIsBetter: true },
  // Only the canary is mirrored to: its stable side counts 0 of 0 (no stable to compare with).
  { name: 'mirrorMismatchRate', counts: (side) => ({ count: side.mirrorDifferent, of: side.mirrorCompared }) },
  { name: 'mirrorErrorRate', counts: (side) => ({ count: side.mirrorFailed, of: side.mirrored }) },
];

/** A rate as a signal's result shows it: four decimals. */
export const roundRate = (value: number | null): number | null =>
  value === null ? null : Math.round(value * 10_000) / 10_000;

/** A threshold on a rate of bad events: the most it may be, and the most it may exceed the stable's by. */
export interface BadRateLimits {
  readonly max?: number;
  readonly maxAboveStable?: number;
}

export interface Judged {
  readonly verdict: Verdict;
  /** Inconclusive: about how many more canary samples would decide it; Infinity when none would tell (exactly at the threshold, or no stable sample). */
  readonly lacks?: number;
}

/** The bad events of a higher-is-better rate (flows not replied), and its limits on them. */
export function asBadRate(
  signal: RateSignal,
  counts: SignalCounts,
  limits: Readonly<Record<string, number | undefined>>,
): { counts: Counts; limits: BadRateLimits } {
  if (signal.higherIsBetter !== true)
    return { counts, limits: { max: limits.max, maxAboveStable: limits.maxAboveStable } };
  return {
    counts: { count: counts.of - counts.count, of: counts.of },
    limits: { max: limits.min === undefined ? undefined : 1 - limits.min, maxAboveStable: limits.maxBelowStable },
  };
}

/** `counts` as `scale` times as many samples would give them at the same rate. */
function scaled(counts: Counts, scale: number): Counts {
  return { count: Math.round(counts.count * scale), of: Math.round(counts.of * scale) };
}

/** Whether bounds on a rate (or a difference of rates) settle it against `limit`: beyond it, or within it. */
function settles(lower: number | undefined, upper: number | undefined, limit: number): boolean {
  return lower !== undefined && upper !== undefined && (lower > limit || upper <= limit);
}

/**
 * The fewest more canary samples (`samples` now) after which counts at today's rates would settle
 * the verdict, by the very bounds that judge it (`settledAt(scale)`: are counts `scale` times as
 * large decisive?): a bound's width shrinks as 1/n with no event and as 1/√n with many, so no one
 * formula serves. Infinity when none would (exactly at the threshold).
 */
function samplesToDecide(samples: number, settledAt: (scale: number) => boolean): number {
  const MOST_TIMES = 10_000;
  if (samples <= 0) return Number.POSITIVE_INFINITY;
  let enough = 1;
  while (!settledAt((samples + enough) / samples)) {
    if (enough > samples * MOST_TIMES) return Number.POSITIVE_INFINITY;
    enough *= 2;
  }
  let tooFew = Math.floor(enough / 2);
  while (enough - tooFew > 1) {
    const middle = Math.floor((tooFew + enough) / 2);
    if (settledAt((samples + middle) / samples)) enough = middle;
    else tooFew = middle;
  }
  return enough;
}

/**
 * A rate of bad events judged against its limits at `confidence`: Failed when the counts show it
 * beyond one of them, Passed when they show it within all, else Inconclusive.
 */
export function judgeBadRate(canary: Counts, stable: Counts | null, limits: BadRateLimits, confidence: number): Judged {
  const outcomes: Judged[] = [];
  const { max, maxAboveStable } = limits;
  if (max !== undefined) {
    const [lower, upper] = [rateBound(canary, confidence, 'lower'), rateBound(canary, confidence, 'upper')];
    outcomes.push(
      lower > max
        ? { verdict: 'Failed' }
        : upper <= max
          ? { verdict: 'Passed' }
          : {
              verdict: 'Inconclusive',
              lacks: samplesToDecide(canary.of, (scale) =>
                settles(
                  rateBound(scaled(canary, scale), confidence, 'lower'),
                  rateBound(scaled(canary, scale), confidence, 'upper'),
                  max,
                ),
              ),
            },
    );
  }
  if (maxAboveStable !== undefined) {
    const lower = stable === null ? undefined : differenceBound(canary, stable, confidence, 'lower');
    const upper = stable === null ? undefined : differenceBound(canary, stable, confidence, 'upper');
    if (lower === undefined || upper === undefined || stable === null)
      outcomes.push({ verdict: 'Inconclusive', lacks: Number.POSITIVE_INFINITY });
    else {
      const settledAt = (scale: number): boolean => {
        const [canaryThen, stableThen] = [scaled(canary, scale), scaled(stable, scale)];
        return settles(
          differenceBound(canaryThen, stableThen, confidence, 'lower'),
          differenceBound(canaryThen, stableThen, confidence, 'upper'),
          maxAboveStable,
        );
      };
      outcomes.push(
        lower > maxAboveStable
          ? { verdict: 'Failed' }
          : upper <= maxAboveStable
            ? { verdict: 'Passed' }
            : { verdict: 'Inconclusive', lacks: samplesToDecide(canary.of, settledAt) },
      );
    }
  }
  if (outcomes.some((outcome) => outcome.verdict === 'Failed')) return { verdict: 'Failed' };
  const open = outcomes.filter((outcome) => outcome.verdict === 'Inconclusive');
  if (open.length === 0) return { verdict: 'Passed' };
  return {
    verdict: 'Inconclusive',
    lacks: Math.max(...open.map((outcome) => outcome.lacks ?? Number.POSITIVE_INFINITY)),
  };
}

/** Where a quantile of a latency histogram lies: its bucket's edges, and an estimate inside it. */
export interface QuantileMs {
  /** Interpolated within the bucket, as Prometheus' histogram_quantile does. */
  readonly estimate: number;
  readonly lower: number;
  readonly upper: number;
}

/** The `quantile` of the samples counted per upper bound in `boundsMs`; null without samples. */
export function quantileMs(
  latency: readonly number[],
  boundsMs: readonly number[],
  quantile: number,
): QuantileMs | null {
  const total = latency.reduce((sum, count) => sum + count, 0);
  if (total === 0) return null;
  const rank = quantile * total;
  let seen = 0;
  for (let index = 0; index < latency.length; index++) {
    const count = latency[index] ?? 0;
    if (count > 0 && seen + count >= rank) {
      const lower = index === 0 ? 0 : (boundsMs[index - 1] ?? 0);
      const upper = boundsMs[index] ?? lower;
      return { estimate: lower + (upper - lower) * ((rank - seen) / count), lower, upper };
    }
    seen += count;
  }
  const last = boundsMs.at(-1) ?? 0;
  return { estimate: last, lower: last, upper: last };
}

/**
 * Connects slower than `lineMs`, as the buckets can tell: `certain` counts only buckets wholly
 * above the line, `possible` also the one the line falls in.
 */
export function slowerThan(
  latency: readonly number[],
  boundsMs: readonly number[],
  lineMs: number,
): { certain: Counts; possible: Counts } {
  const of = latency.reduce((sum, count) => sum + count, 0);
  let [certain, possible] = [0, 0];
  latency.forEach((count, index) => {
    const lower = index === 0 ? 0 : (boundsMs[index - 1] ?? 0);
    const upper = boundsMs[index] ?? Number.POSITIVE_INFINITY;
    if (lower >= lineMs) certain += count;
    if (upper > lineMs) possible += count;
  });
  return { certain: { count: certain, of }, possible: { count: possible, of } };
}

/**
 * A 99th percentile against a line: Failed when the connects certainly slower than it are shown
 * more than 1 %, Passed when those possibly slower are shown at most 1 %.
 */
export function judgeSlowShare(
  slow: { certain: Counts; possible: Counts },
  slowShare: number,
  confidence: number,
): Judged {
  if (rateBound(slow.certain, confidence, 'lower') > slowShare) return { verdict: 'Failed' };
  const upper = rateBound(slow.possible, confidence, 'upper');
  if (upper <= slowShare) return { verdict: 'Passed' };
  const settledAt = (scale: number): boolean =>
    settles(
      rateBound(scaled(slow.certain, scale), confidence, 'lower'),
      rateBound(scaled(slow.possible, scale), confidence, 'upper'),
      slowShare,
    );
  return { verdict: 'Inconclusive', lacks: samplesToDecide(slow.possible.of, settledAt) };
}
