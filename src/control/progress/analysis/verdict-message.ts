// The message of an interval's verdict (status.analysis.message), for a person: what failed, what
// passed on how many samples, or what an inconclusive interval lacks, and what passive health took
// from the canary meanwhile. Pure.

import type { PooledEvidence, SignalCounts, SignalResult, Verdict } from '../../../api/status-types.ts';
import { heldOutOf, samplesOf } from './pooling.ts';
import type { Judgement } from './threshold-signals.ts';

/** 2700 as `2 700`: counts a person reads at a glance. */
const grouped = (value: number) => String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
const percentOf = (confidence: number) => `${Math.round(confidence * 1000) / 10} % confidence`;
const countsText = (counts: SignalCounts | null) =>
  counts === null ? '-' : `${grouped(counts.count)} of ${grouped(counts.of)}`;

function signalText(result: SignalResult, confidence: number): string {
  const heldOut =
    result.heldOut === undefined ? '' : ` (${grouped(result.heldOut)} of them while passive health held it out)`;
  const counts =
    result.counts === undefined
      ? `canary ${result.canary ?? '-'}, stable ${result.stable ?? '-'}`
      : `canary ${countsText(result.counts.canary)}${heldOut}, stable ${countsText(result.counts.stable ?? null)}`;
  return `${result.name}: ${counts}, threshold ${result.threshold}, ${percentOf(confidence)}`;
}

function lacksText(lacks: number | undefined): string {
  return lacks === undefined || !Number.isFinite(lacks)
    ? 'not decided yet'
    : `about ${grouped(lacks)} more canary samples to decide`;
}

/** What judge() found on an interval, for the message that says it. */
export interface Findings {
  readonly verdict: Verdict;
  /** Set when the canary stays failed for want of a sample since it failed: the message it failed with. */
  readonly stillDeadAfter?: string;
  readonly failed: readonly SignalResult[];
  /** The thresholds not decided yet. */
  readonly open: readonly Judgement[];
  readonly pooled: PooledEvidence;
  readonly minSamples: number;
  readonly confidence: number;
}

/** The message of a verdict: the failed signals, the samples a pass rests on, or what is still open. */
export function verdictMessage(findings: Findings): string {
  const { verdict, stillDeadAfter, failed, open, pooled, minSamples, confidence } = findings;
  const enough = samplesOf(pooled.canary) >= minSamples;
  const over = `${pooled.intervals} interval(s) judged together`;
  const keptFrom = heldOutOf(pooled.canary);
  const takenOut =
    pooled.canary.markedDown === 0 && keptFrom === 0
      ? ''
      : `; passive health took the canary out ${pooled.canary.markedDown} time(s)${
          keptFrom === 0
            ? ''
            : `, and the ${grouped(keptFrom)} connections/flows its weight offered it meanwhile count as attempts it failed (it was still failing a passive-health timeout after it first failed)`
        }`;
  return stillDeadAfter !== undefined
    ? `no canary sample since it failed (passive health holds it out): ${stillDeadAfter}`
    : verdict === 'Failed'
      ? failed.map((result) => signalText(result, confidence)).join('; ') + takenOut
      : verdict === 'Passed'
        ? `${grouped(samplesOf(pooled.canary))} canary connections/flows judged (${over}), every threshold within at ${percentOf(confidence)}`
        : [
            ...(enough
              ? []
              : [
                  `too few samples: ${grouped(samplesOf(pooled.canary))} canary connections/flows over ${over.replace(' judged together', '')}, minSamples ${minSamples}`,
                ]),
            ...open.map((item) => `${signalText(item.result, confidence)}: ${lacksText(item.lacks)}`),
          ].join('; ') + takenOut;
}
