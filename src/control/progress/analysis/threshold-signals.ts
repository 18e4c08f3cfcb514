// The thresholds of spec.analysis judged on the pooled counts of both sides: each rate signal, and
// connectLatencyP99 as the share of connects slower than its line, each with what an inconclusive
// one lacks. Pure.

import type { AnalysisSpec } from '../../../api/spec-types.ts';
import type { PooledSide, SignalCounts, SignalResult, Verdict } from '../../../api/status-types.ts';
import { attributed } from './attribution.ts';
import { asBadRate, judgeBadRate, judgeSlowShare, quantileMs, RATE_SIGNALS, roundRate, slowerThan } from './signals.ts';

/** connectLatencyP99 speaks of the 99th percentile: at most this share of connects slower than the line. */
const SLOW_SHARE = 0.01;

const rateOf = (counts: SignalCounts | null): number | null =>
  counts === null || counts.of === 0 ? null : counts.count / counts.of;

function describe(threshold: Readonly<Record<string, number | undefined>>): string {
  return Object.entries(threshold)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key} ${value}`)
    .join(', ');
}

/** A judged signal, and what an inconclusive one lacks. */
export interface Judgement {
  readonly result: SignalResult;
  readonly lacks?: number;
}

/**
 * Events of samples, at most all of them: a reset (a reply) counts in the interval it happens, its
 * connection (flow) in the one it began, so an interval's events can outnumber its samples.
 */
const within = (counts: SignalCounts): SignalCounts => ({ count: Math.min(counts.count, counts.of), of: counts.of });

/** The thresholds of the spec judged on the pooled counts of both sides. */
export function thresholdSignals(
  spec: AnalysisSpec,
  stableCounted: PooledSide,
  canaryCounted: PooledSide,
  boundsMs: readonly number[],
  confidence: number,
): Judgement[] {
  const thresholds = (spec.thresholds ?? {}) as Readonly<
    Record<string, Readonly<Record<string, number | undefined>> | undefined>
  >;
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
      result: {
        name: signal.name,
        canary: roundRate(rateOf(counts.canary)),
        stable: roundRate(rateOf(counts.stable)),
        threshold: describe(threshold),
        verdict,
        counts,
        ...(heldOut > 0 ? { heldOut } : {}),
      },
      lacks,
    });
  }
  const latency = spec.thresholds?.connectLatencyP99;
  if (latency !== undefined && canary.established + stable.established > 0)
    judged.push(latencySignal(latency, stable, canary, boundsMs, confidence));
  return judged;
}

/**
 * connectLatencyP99 as a share of slow connects: a p99 above `maxMs` is more than 1 % of connects
 * slower than it; one above `maxRatioToStable` × the stable's p99 is more than 1 % slower than that.
 */
function latencySignal(
  latency: NonNullable<NonNullable<AnalysisSpec['thresholds']>['connectLatencyP99']>,
  stable: PooledSide,
  canary: PooledSide,
  boundsMs: readonly number[],
  confidence: number,
): Judgement {
  const [canaryP99, stableP99] = [
    quantileMs(canary.latency, boundsMs, 0.99),
    quantileMs(stable.latency, boundsMs, 0.99),
  ];
  // Against maxMs a connect in the bucket the line falls in may be slower; against the stable side
  // only what the buckets can tell apart counts (two p99s of ~1 ms in adjacent buckets are not 2× apart).
  const lines: { line: number; doubtful: boolean }[] = [];
  if (latency.maxMs !== undefined) lines.push({ line: latency.maxMs, doubtful: true });
  if (latency.maxRatioToStable !== undefined && stableP99 !== null)
    lines.push({ line: latency.maxRatioToStable * stableP99.estimate, doubtful: false });
  const outcomes = lines.map(({ line, doubtful }) => {
    const slow = slowerThan(canary.latency, boundsMs, line);
    return {
      line,
      ...judgeSlowShare(doubtful ? slow : { certain: slow.certain, possible: slow.certain }, SLOW_SHARE, confidence),
    };
  });
  if (latency.maxRatioToStable !== undefined && stableP99 === null)
    outcomes.push({ line: Number.NaN, verdict: 'Inconclusive', lacks: Number.POSITIVE_INFINITY });
  const failed = outcomes.find((outcome) => outcome.verdict === 'Failed');
  const open = outcomes.filter((outcome) => outcome.verdict === 'Inconclusive');
  const verdict: Verdict = failed !== undefined ? 'Failed' : open.length > 0 ? 'Inconclusive' : 'Passed';
  const line = (failed ?? open[0] ?? outcomes[0])?.line;
  const counts =
    line === undefined || Number.isNaN(line)
      ? undefined
      : {
          canary: slowerThan(canary.latency, boundsMs, line).certain,
          stable: slowerThan(stable.latency, boundsMs, line).certain,
        };
  const lacks =
    open.length === 0 ? undefined : Math.max(...open.map((outcome) => outcome.lacks ?? Number.POSITIVE_INFINITY));
  return {
    result: {
      name: 'connectLatencyP99',
      canary: roundRate(canaryP99?.estimate ?? null),
      stable: roundRate(stableP99?.estimate ?? null),
      threshold: describe({ ...latency }),
      verdict,
      ...(counts === undefined ? {} : { counts }),
    },
    lacks,
  };
}
