// The split achieved at the step in force (status.ports[].achievedStep). The release's split
// (ports[].achieved) counts from its start, so at the second step of 10 % → 50 % it still shows
// mostly the first step's share; this one starts from zero at each step and counts only the
// intervals served at its weight throughout, as the analysis gate does. Pure.

import type { AchievedSplit, StepAchievedSplit } from '../../api/status-types.ts';

/** What a pass knows of one port's counts. */
export interface PortCounts {
  /** ports[].achievedStep as recorded. */
  readonly recordedStep: StepAchievedSplit | undefined;
  /** ports[].achieved as recorded, and as this pass leaves it (with the interval it counted, if any). */
  readonly before: AchievedSplit | undefined;
  readonly after: AchievedSplit | undefined;
}

/**
 * A port's split at `currentStep`, the step in force after this pass. The interval this pass
 * counted (`after` less `before`) was served at the step status recorded, `countedStep`: it adds to
 * that step's counts if it began once the step had (`inStep`); a step that begins in this pass
 * starts from zero.
 */
export function achievedAtStep(
  counts: PortCounts,
  countedStep: number | undefined,
  currentStep: number,
  inStep: boolean,
): StepAchievedSplit {
  if (countedStep !== currentStep) return stepSplit(currentStep, 0, 0);
  const base = counts.recordedStep?.step === currentStep ? counts.recordedStep : undefined;
  const added = (side: 'stable' | 'canary') =>
    inStep ? Math.max(0, (counts.after?.[side] ?? 0) - (counts.before?.[side] ?? 0)) : 0;
  return stepSplit(currentStep, (base?.stable ?? 0) + added('stable'), (base?.canary ?? 0) + added('canary'));
}

function stepSplit(step: number, stable: number, canary: number): StepAchievedSplit {
  const whole = stable + canary;
  return { step, stable, canary, canaryPercent: whole === 0 ? 0 : Math.round((canary / whole) * 1000) / 10 };
}
