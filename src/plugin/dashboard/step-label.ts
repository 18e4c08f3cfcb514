// How the dashboard names a step: `step 2/3`, 1-based as `kubectl canary-l4 status` and the STEP
// column count, from status.currentStep (0 the first; steps.length once every step is done).

/** `step N/M` for the step at `index` (0-based) of `total`; past the last, the last. */
export function stepLabel(index: number, total: number): string {
  return `step ${Math.min(index + 1, total)}/${total}`;
}
