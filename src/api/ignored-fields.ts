// What a valid CanaryRelease spec sets that does nothing as written: said by `kubectl canary-l4
// plan` as notes (not problems: the release runs), one line each naming the field. Pure.

import type { CanaryReleaseSpec } from './spec-types.ts';
import { formatStep } from './steps.ts';

/**
 * What a valid spec sets that does nothing as written, one line each naming the field: with
 * spec.steps, every listed port takes the step's weight, so a port's config.weight is ignored, and a
 * step that sets `mirror` replaces the port's config.mirror.percent while it is in force.
 */
export function ignoredFieldNotes(spec: CanaryReleaseSpec | undefined): string[] {
  const steps = spec?.steps ?? [];
  if (steps.length === 0) return [];
  const mirroring = steps.flatMap((step, index) => (step.mirror === undefined ? [] : [index]));
  return (spec?.services ?? []).flatMap((entry, serviceIndex) =>
    (entry.ports ?? []).flatMap((port, portIndex) => {
      const at = `spec.services[${serviceIndex}].ports[${portIndex}].config`;
      const notes: string[] = [];
      if (port.config?.weight !== undefined)
        notes.push(
          `${at}.weight: ${port.config.weight} is ignored: with spec.steps every listed port takes the step's weight (${steps.map((step) => `${step.weight ?? 0}%`).join(' → ')}); remove it, or remove spec.steps to set weights by hand`,
        );
      const percent = port.config?.mirror?.percent;
      if (percent !== undefined && mirroring.length > 0)
        notes.push(
          `${at}.mirror.percent: ${percent} holds only at the steps that set no mirror: ${mirroring.map((index) => `step ${formatStep(index, steps.length)}`).join(', ')} ${mirroring.length === 1 ? 'sets its' : 'set their'} own`,
        );
      return notes;
    }),
  );
}
