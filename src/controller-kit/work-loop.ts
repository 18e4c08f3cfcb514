// The work queue's one-key case (work-queue.ts): the loop of a controller that reconciles one
// object (a proxy runs one CanaryRelease). Triggers that arrive while a reconcile runs are coalesced
// into one more run after it; a failure is retried with capped exponential backoff, forever; a
// success resets the backoff; a periodic resync repairs drift no event announced.

import { KeyedQueue } from './work-queue.ts';

export interface WorkLoopOptions {
  readonly reconcile: () => Promise<{ requeueAfterMs?: number } | undefined>;
  readonly onError: (err: unknown, retryInMs: number) => void;
  readonly resyncMs: number;
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

/** The one key. */
const KEY = '';

export class WorkLoop {
  readonly #queue: KeyedQueue;
  /** Triggers before start() are dropped: start() runs a reconcile anyway. */
  #started = false;
  /** Triggers of one turn of the event loop (a burst of informer events) make one reconcile, after it. */
  #soon: NodeJS.Timeout | undefined;

  constructor({ reconcile, onError, ...backoff }: WorkLoopOptions) {
    this.#queue = new KeyedQueue({
      ...backoff,
      workers: 1,
      reconcile: () => reconcile(),
      onError: (_key, err, retryInMs) => onError(err, retryInMs),
    });
  }

  start(): void {
    this.#started = true;
    this.#queue.start();
    this.trigger();
  }

  /** Ask for a reconcile as soon as possible (after the backoff, while one is under way). */
  trigger(): void {
    if (!this.#started) return;
    this.#soon ??= setTimeout(() => {
      this.#soon = undefined;
      this.#queue.add(KEY);
    }, 0);
  }

  /** The API answers again (a watch came back): end the backoff and reconcile now. */
  retryNow(): void {
    this.#queue.retryNow(KEY);
  }

  /** Stops scheduling and waits for a reconcile in flight to finish. */
  stop(): Promise<void> {
    clearTimeout(this.#soon);
    return this.#queue.stop();
  }
}
