// How the dashboard names a step in a sentence or on a chart: `step 2/3 (index 1)`, the one
// convention of every surface (api/steps.ts).
import { formatStep } from '../../api/steps.ts';

/** `step N/M (index k)` for the step at `index` (0-based) of `total`. */
export function stepLabel(index: number, total: number): string {
  return `step ${formatStep(index, total)}`;
}
