// Conditions as the Gateway API spec asks them written: each with the generation it speaks for, and
// a lastTransitionTime that moves only when the status does (so a status rewritten every pass with the
// same verdict is the same status, and no write happens).
import type { Condition, ConditionStatus } from '../../api/gateway/types.ts';

export interface Verdict {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
}

export function verdict(type: string, ok: boolean, reason: string, message: string): Verdict {
  return { type, status: ok ? 'True' : 'False', reason, message };
}

/**
 * The conditions `verdicts` say, at `generation`; each keeps the lastTransitionTime of the same
 * type in `previous` while its status is unchanged, else takes `now`.
 */
export function conditionsOf(
  verdicts: readonly Verdict[],
  previous: readonly Condition[] | undefined,
  generation: number | undefined,
  now: string,
): Condition[] {
  return verdicts.map((v) => {
    const before = previous?.find((condition) => condition.type === v.type);
    const lastTransitionTime = before !== undefined && before.status === v.status ? before.lastTransitionTime : now;
    return {
      type: v.type,
      status: v.status,
      reason: v.reason,
      message: v.message,
      ...(generation === undefined ? {} : { observedGeneration: generation }),
      lastTransitionTime,
    };
  });
}
