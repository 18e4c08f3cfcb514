// The proxies' own analysis of a canary (spec.analysis): over one interval, the counters every
// serving replica kept for each side (the forked copy is stable, the canary copy is canary) are
// summed over the release's ports, added to those of the intervals still undecided (pooling.ts),
// and judged, canary against stable, with confidence: the thresholds (threshold-signals.ts) and the
// canary's share (share-signal.ts), said in a message (verdict-message.ts). Pure.

import type { AnalysisSpec } from '../../../api/spec-types.ts';
import type { AnalysisStatus, PooledEvidence, PortStatus, Verdict } from '../../../api/status-types.ts';
import type { Evidence } from './evidence.ts';
import { addSides, poolOf, samplesOf, sides } from './pooling.ts';
import { shareSignals } from './share-signal.ts';
import { thresholdSignals } from './threshold-signals.ts';
import { verdictMessage } from './verdict-message.ts';

/** spec.analysis's defaults. */
export const DEFAULT_INTERVAL_MS = 30_000;
const DEFAULT_MIN_SAMPLES = 50;
export const DEFAULT_FAILURE_LIMIT = 2;
const DEFAULT_CONFIDENCE = 0.99;

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
export function judge(
  evidence: Evidence,
  spec: AnalysisSpec,
  ports: readonly PortStatus[],
  previous: AnalysisStatus | undefined,
  affinity: ReadonlySet<string> = new Set(),
): AnalysisStatus {
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
  const alone =
    pooled.intervals === 1
      ? []
      : thresholdSignals(spec, interval.stable, interval.canary, evidence.latencyBucketsMs, 1 - (1 - confidence) / 10);
  const judged = thresholdSignals(spec, pooled.stable, pooled.canary, evidence.latencyBucketsMs, confidence).map(
    (item) =>
      alone.find(
        (fresh) =>
          fresh.result.name === item.result.name &&
          fresh.result.verdict === 'Failed' &&
          item.result.verdict !== 'Failed',
      ) ?? item,
  );
  const signals = [...shareSignals(evidence, ports, affinity, confidence), ...judged.map((item) => item.result)];
  const failed = signals.filter((result) => result.verdict === 'Failed');
  const open = judged.filter((item) => item.result.verdict === 'Inconclusive');
  const stillDead = failed.length === 0 && samples === 0 && previous?.verdict === 'Failed';
  const enough = samplesOf(pooled.canary) >= minSamples;
  const verdict: Verdict =
    failed.length > 0 || stillDead ? 'Failed' : open.length === 0 && enough ? 'Passed' : 'Inconclusive';
  const failures =
    verdict === 'Failed' ? (previous?.failures ?? 0) + 1 : verdict === 'Passed' ? 0 : (previous?.failures ?? 0);
  const message = verdictMessage({
    verdict,
    failed,
    open,
    pooled,
    minSamples,
    confidence,
    ...(stillDead ? { stillDeadAfter: previous.message } : {}),
  });
  return {
    at: evidence.at,
    intervalMs: evidence.intervalMs,
    replicas: evidence.replicas,
    samples,
    verdict,
    confidence,
    signals,
    failures,
    message,
    ...(verdict === 'Inconclusive' ? { pooled } : {}),
  };
}
