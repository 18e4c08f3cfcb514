// The applier's step runner both loops share: a pass's steps run against the apiserver in order,
// stopping at the first failure (the caller retries the whole pass, which plans only what is still
// missing). What a step does is the caller's (`apply`); nothing here reads or diffs an object.

import { isNotFound } from '../kube/patch.ts';

/** The first step that failed, and why. */
export interface StepFailure<Step> {
  readonly step: Step;
  readonly error: unknown;
}

/**
 * Runs the steps in order while `mayWrite()` holds (a leader that loses its Lease mid-pass stops
 * at once). `onDone` hears of each step as it succeeds (a later failure must not hide what already
 * changed). Resolves with the first failure, undefined once every step is done (or writing stopped).
 */
export async function runSteps<Step, Written>(
  steps: readonly Step[],
  apply: (step: Step) => Promise<Written>,
  onDone: (step: Step, written: Written) => void,
  mayWrite: () => boolean,
): Promise<StepFailure<Step> | undefined> {
  for (const step of steps) {
    if (!mayWrite()) return undefined;
    let written: Written;
    try {
      written = await apply(step);
    } catch (error) {
      return { step, error };
    }
    onDone(step, written);
  }
  return undefined;
}

/** Deleting what is already gone is done. */
export async function ignoringNotFound(call: Promise<unknown>): Promise<void> {
  try {
    await call;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}
