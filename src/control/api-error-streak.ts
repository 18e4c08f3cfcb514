// When an API error is said in status: a pass's failure that persists (the same message this many
// passes in a row) reaches the Failure condition; one pass may be a blip. A conflict or an existing
// object only means the cache was behind, and anything but an API failure (a refused config) is
// said by the pass itself: either ends the streak, as a pass that succeeds does. Pure.

import { apiFailure, describeError, isAlreadyExists, isConflict } from '../kube/patch.ts';
import { StepError } from './loop/apply.ts';

/** An API error is said in status once it has failed this many passes in a row (one may be a blip). */
export const API_ERROR_PASSES = 2;

export class ApiErrorStreak {
  /** The last pass's API failure and how many passes in a row failed with it. */
  #last: { message: string; passes: number } | undefined;

  /** A pass succeeded. */
  passed(): void {
    this.#last = undefined;
  }

  /** A pass failed with `err`: the message to say in status once the failure persists, else undefined. */
  failed(err: unknown): string | undefined {
    const cause = err instanceof StepError ? err.cause : err;
    if (apiFailure(cause) === undefined || isConflict(cause) || isAlreadyExists(cause)) {
      this.#last = undefined;
      return undefined;
    }
    const message = describeError(err);
    this.#last = { message, passes: this.#last?.message === message ? this.#last.passes + 1 : 1 };
    return this.#last.passes < API_ERROR_PASSES ? undefined : message;
  }
}
