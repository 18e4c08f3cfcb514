// How a step of spec.steps is named to people, the one convention of every surface (status.step and
// the STEP column, `kubectl describe`, Events, the plugin's output and suggestions, the dashboard,
// the metric canary_l4_release_step, the docs): counted from 1 out of the steps (`2/3`), with the
// API's index beside it (`(index 1)`), because the fields a user writes or reads a step in,
// spec.promotedStep and status.currentStep, are indexes into spec.steps: 0 is the first step.

/**
 * The step at `index` of `count` steps: `2/3 (index 1)`; once every step is done (index = count),
 * `3/3 done (index 3)`. Say it as `step ${formatStep(…)}` in a sentence.
 */
export function formatStep(index: number, count: number): string {
  return index >= count ? `${count}/${count} done (index ${index})` : `${index + 1}/${count} (index ${index})`;
}

/** The step and the count a formatted step (status.step) names: `2/3 (index 1)` → 2 of 3; also 0.4's `2/3`. */
export function readStep(text: string | undefined): { readonly number: number; readonly count: number } | undefined {
  const match = /^(\d+)\/(\d+)/.exec(text ?? '');
  return match === null ? undefined : { number: Number(match[1]), count: Number(match[2]) };
}
