// Progressive delivery (spec.steps): every listed port takes the current step's weight; a step
// advances once its pause is over (its duration since it began, or a promotion: spec.promotedStep)
// and, with spec.analysis, the last interval since it began passed. A person's spec.paused holds
// it. The step and when it began live in status, so a restart or a new leader resumes the pause
// where it was, never from zero and never skipping. Pure.

import type { AnalysisStatus } from '../../api/status-types.ts';
import type { CanaryReleaseSpec } from '../../api/spec-types.ts';
import { formatStep, readStep } from '../../api/steps.ts';
import { MAX_INTERVAL_MS, MIN_INTERVAL_MS, parseDuration } from '../../api/validate.ts';

/** spec.analysis.interval in milliseconds; undefined when it is absent or out of bounds (validate.ts says why). */
export function analysisIntervalMs(spec: CanaryReleaseSpec | undefined): number | undefined {
  const interval = spec?.analysis?.interval;
  const ms = interval === undefined ? undefined : parseDuration(interval);
  return ms !== undefined && ms >= MIN_INTERVAL_MS && ms <= MAX_INTERVAL_MS ? ms : undefined;
}

/** An interval that ended this long after a step began (the reconcile that started the step came
 * just after it was counted) is still taken as judged at the step's weight. */
const GATE_SLACK_MS = 1_000;

/** Whether an interval (when it ended, how long it was) began once the step had: it was served at
 * the step's weight throughout, not partly at the previous step's. */
export function beganInStep(
  interval: { readonly at: string; readonly intervalMs: number },
  stepStartedAt: string,
): boolean {
  return Date.parse(interval.at) - interval.intervalMs >= Date.parse(stepStartedAt) - GATE_SLACK_MS;
}

/**
 * The mirror percent the step in force sets (spec.steps[].mirror), or undefined when it sets none
 * (then each port's own config.mirror.percent holds). Past the last step, the last step's.
 */
export function stepMirror(spec: CanaryReleaseSpec | undefined, currentStep: number | undefined): number | undefined {
  const steps = spec?.steps ?? [];
  return steps.length === 0 ? undefined : steps[Math.min(currentStep ?? 0, steps.length - 1)]!.mirror;
}

/** What status holds of the steps. */
export interface RecordedSteps {
  readonly currentStep?: number;
  readonly stepStartedAt?: string;
  readonly step?: string;
  readonly pause?: Pause | null;
}

/**
 * Every step is done: the step in force is past the last, and the steps are still the ones it went
 * through (status.step says every one of them done: `3/3 done (index 3)`, or 0.4's `3/3`).
 */
export function stepsComplete(spec: CanaryReleaseSpec | undefined, recorded: RecordedSteps): boolean {
  const count = spec?.steps?.length ?? 0;
  const said = readStep(recorded.step);
  return count > 0 && (recorded.currentStep ?? 0) >= count && said?.number === count && said.count === count;
}

/** Why the steps stand still, since when. */
export interface Pause {
  readonly reason: string;
  readonly since: string;
}

export interface StepPlan {
  /** The step in force, an index (0 the first step; steps.length once every step is done). */
  readonly currentStep: number;
  /** undefined until the release serves: the first step's clock starts then. */
  readonly stepStartedAt: string | undefined;
  /** The weight every listed port takes. */
  readonly weight: number;
  /** status.step, the STEP column: `2/3 (index 1)` (api/steps.ts). */
  readonly step: string;
  readonly pause: Pause | null;
  /** Reconcile again after this long (a timed pause running out). */
  readonly requeueAfterMs?: number;
}

/**
 * Where the steps stand after this pass. `recorded`: status.currentStep and stepStartedAt;
 * `analysis`: the latest judged interval (this pass's, if it judged one); `serving`: every Service
 * is taken over (no clock runs before).
 */
export function planSteps(
  spec: CanaryReleaseSpec,
  recorded: RecordedSteps,
  analysis: AnalysisStatus | undefined,
  serving: boolean,
  now: Date,
): StepPlan | undefined {
  const steps = spec.steps ?? [];
  if (steps.length === 0) return undefined;
  // Steps removed past the one in force: the last step is in force now, from the start.
  const cut = (recorded.currentStep ?? 0) >= steps.length && !stepsComplete(spec, recorded);
  const current = cut ? steps.length - 1 : Math.min(recorded.currentStep ?? 0, steps.length);
  if (cut) recorded = { ...recorded, stepStartedAt: undefined };
  const weightOf = (index: number) => steps[Math.min(index, steps.length - 1)]!.weight ?? 0;
  const shown = (index: number) => formatStep(index, steps.length);
  const held = (reason: string, startedAt: string | undefined, requeueAfterMs?: number): StepPlan => ({
    currentStep: current,
    stepStartedAt: startedAt,
    weight: weightOf(current),
    step: shown(current),
    pause: { reason, since: recorded.pause?.reason === reason ? recorded.pause.since : now.toISOString() },
    ...(requeueAfterMs === undefined ? {} : { requeueAfterMs }),
  });
  if (current >= steps.length) {
    return {
      currentStep: current,
      stepStartedAt: recorded.stepStartedAt,
      weight: weightOf(current),
      step: shown(current),
      pause: null,
    };
  }
  if (!serving)
    return held('the Services are not taken over yet; the first step starts once they are', recorded.stepStartedAt);
  const startedAt = recorded.stepStartedAt ?? now.toISOString();
  if (spec.paused === true) return held('paused (spec.paused); kubectl canary-l4 resume to go on', startedAt);
  const promoted = (spec.promotedStep ?? -1) >= current;
  if (!promoted) {
    const duration = steps[current]!.pause?.duration;
    if (steps[current]!.pause !== undefined && duration === undefined) {
      return held(
        `step ${shown(current)} waits for a promotion: kubectl canary-l4 promote (it writes spec.promotedStep: ${current})`,
        startedAt,
      );
    }
    const remaining = Date.parse(startedAt) + (parseDuration(duration ?? '0s') ?? 0) - now.getTime();
    if (remaining > 0)
      return held(
        `step ${shown(current)} holds until ${new Date(now.getTime() + remaining).toISOString()}`,
        startedAt,
        remaining,
      );
    // An interval judged at this step's weight: one that began once the step had.
    const judged = analysis !== undefined && beganInStep(analysis, startedAt) ? analysis : undefined;
    if (spec.analysis !== undefined && judged?.verdict !== 'Passed') {
      // The verdict, not its message: the reason (and so pause.since, and the Event) stays put from one interval to the next.
      const last = judged === undefined ? 'none yet' : `${judged.verdict}; see status.analysis`;
      return held(`step ${shown(current)} waits for an analysis interval that passes (last: ${last})`, startedAt);
    }
  }
  const next = current + 1;
  return {
    currentStep: next,
    stepStartedAt: now.toISOString(),
    weight: weightOf(next),
    step: shown(next),
    pause: null,
    requeueAfterMs: 0,
  };
}
