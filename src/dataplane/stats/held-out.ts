// What passive health kept from a backend: the new connections and flows its weight offered it
// while it was held out (they went to the others). They are the evidence a failing canary leaves
// when failover hides it, so the analysis counts them as attempts it failed — but only once its
// failing has outlasted a blip. The rules, for one backend:
//   - Offers are counted by the check that ends their stretch of the take-out: a failed one (a
//     recovery probe, or the backend's next attempt, refused again) makes them failed, a good one
//     (a probe or a connection served) clears them.
//   - Failed offers are held back while the failing episode is younger than failTimeoutMs (the
//     grace passive health itself gives a backend): a canary that refused for a moment and then
//     serves, the blip, has them cleared once it has served EPISODE_END_SUCCESSES in a row; one
//     still failing after the grace has them all counted, and every later failed check's at once.
// So a dead canary's offers count from one failTimeout after it died (docs/analysis.md's
// failureLimit × interval plus one failTimeout), a flapping one's too (it never serves long
// enough in a row to end its episode), and a blip's never.

import type { TakeOutCause } from '../../counters/snapshot.ts';

/** Successes in a row that end a failing episode: a backend failing at random 3 % of the time ends its episodes (74 % of runs of 10 succeed), one failing half of the time does not (0.1 %). */
export const EPISODE_END_SUCCESSES = 10;
/** A recovery probe's timer may fire a millisecond or two before its interval: the grace's end is taken this much early. */
const TIMER_SLACK_MS = 5;

type ByCause = Record<TakeOutCause, number>;
const none = (): ByCause => ({ connect: 0, reset: 0 });
const total = (counts: ByCause) => counts.connect + counts.reset;

export class HeldOutOffers {
  /** Offers counted against it, by what had taken it out. */
  readonly failed: ByCause = none();
  /** Offers it was cleared of: a check after them succeeded, or its episode ended with it serving. */
  cleared = 0;
  /** Offered since the last check. */
  readonly #pending = none();
  /** Offered before a failed check, within the episode's grace. */
  readonly #held = none();
  #cause: TakeOutCause = 'connect';
  /** When the failing episode began (Date.now()); -1: none under way. */
  #episodeSince = -1;
  #successesInARow = 0;

  /** Passive health took the backend out at `now` after failures of `cause`: a failed check of what it was offered before. */
  takenOut(now: number, failTimeoutMs: number, cause: TakeOutCause): void {
    if (this.#episodeSince < 0) this.#episodeSince = now;
    this.#failedCheck(now, failTimeoutMs);
    this.#cause = cause;
  }

  /** A new connection or flow its weight offered it went elsewhere. */
  offered(): void {
    this.#pending[this.#cause]++;
  }

  /** A recovery probe failed at `now`. */
  probeFailed(now: number, failTimeoutMs: number): void {
    if (this.#episodeSince < 0) this.#episodeSince = now;
    this.#failedCheck(now, failTimeoutMs);
  }

  /** A connection, a UDP reply or a recovery probe succeeded. Called for every connection: one comparison when no episode is under way. */
  succeeded(): void {
    if (this.#episodeSince < 0) return;
    this.#clear(this.#pending);
    if (++this.#successesInARow < EPISODE_END_SUCCESSES) return;
    this.#clear(this.#held);
    this.#episodeSince = -1;
  }

  #failedCheck(now: number, failTimeoutMs: number): void {
    this.#successesInARow = 0;
    this.#move(this.#pending, this.#held);
    if (now - this.#episodeSince >= failTimeoutMs - TIMER_SLACK_MS) this.#move(this.#held, this.failed);
  }

  #clear(counts: ByCause): void {
    this.cleared += total(counts);
    counts.connect = 0;
    counts.reset = 0;
  }

  #move(from: ByCause, to: ByCause): void {
    to.connect += from.connect;
    to.reset += from.reset;
    from.connect = 0;
    from.reset = 0;
  }
}
