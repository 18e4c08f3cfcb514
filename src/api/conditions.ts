// Conditions: exactly one of each type, updated in place (the seed appended two per sync, forever:
// defect D21). lastTransitionTime moves only when a condition's status flips, so an unchanged world
// gives an unchanged status and no write.

import type { CanaryReleaseCondition, ConditionStatus, ConditionType } from './status-types.ts';

export interface ConditionDraft {
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
}

export type ConditionDrafts = Readonly<Record<ConditionType, ConditionDraft>>;

/** Every condition type, in the order status lists them. */
export const CONDITION_TYPES: readonly ConditionType[] = ['Ready', 'Available', 'Progressing', 'Failure', 'Archived'];

export function condition(status: boolean, reason: string, message = ''): ConditionDraft {
  return { status: status ? 'True' : 'False', reason, message };
}

/** Kubernetes writes times as RFC 3339 in whole seconds. */
export function formatTime(now: Date): string {
  return now.toISOString().replace(/\.\d+Z$/, 'Z');
}

export function buildConditions(
  previous: readonly CanaryReleaseCondition[] | undefined,
  drafts: ConditionDrafts,
  generation: number,
  now: Date,
): readonly CanaryReleaseCondition[] {
  const own = CONDITION_TYPES.map((type) => {
    const draft = drafts[type];
    const before = previous?.find((item) => item.type === type);
    const lastTransitionTime =
      before !== undefined && before.status === draft.status ? before.lastTransitionTime : formatTime(now);
    return { type, ...draft, lastTransitionTime, observedGeneration: generation };
  });
  // Another controller's conditions (the manager's ProxyAvailable) are kept as they are: the
  // status write replaces the whole list, and dropping them would start a tug of war.
  return [...own, ...(previous ?? []).filter((item) => !CONDITION_TYPES.includes(item.type))];
}
