// The worker of a level-triggered control loop with a single key (one proxy runs one
// CanaryRelease). Events only call `trigger()`; triggers that arrive while a reconcile runs are
// coalesced into one more run after it. A failure is retried with capped exponential backoff,
// forever; a success resets the backoff. A periodic resync repairs drift no event announced.

export interface WorkLoopOptions {
  readonly reconcile: () => Promise<{ requeueAfterMs?: number } | undefined>;
  readonly onError: (err: unknown, retryInMs: number) => void;
  readonly resyncMs: number;
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

export class WorkLoop {
  readonly #options: WorkLoopOptions;
  #running = false;
  #pending = false;
  #stopped = true;
  #timer: NodeJS.Timeout | undefined;
  #backoffMs: number;
  /** After a failure, triggers wait for the backoff rather than hammering a failing API. */
  #backingOff = false;
  #idle: Promise<void> = Promise.resolve();

  constructor(options: WorkLoopOptions) {
    this.#options = options;
    this.#backoffMs = options.initialBackoffMs ?? 200;
  }

  start(): void {
    this.#stopped = false;
    this.trigger();
  }

  /** Ask for a reconcile as soon as possible. */
  trigger(): void {
    if (this.#stopped) return;
    this.#pending = true;
    if (!this.#running && !this.#backingOff) this.#schedule(0);
  }

  /** The API answers again (a watch came back): end the backoff and reconcile now. */
  retryNow(): void {
    if (this.#stopped || !this.#backingOff) return;
    this.#backingOff = false;
    this.#backoffMs = this.#options.initialBackoffMs ?? 200;
    this.trigger();
  }

  /** Stops scheduling and waits for a reconcile in flight to finish. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#idle;
  }

  #schedule(delayMs: number): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#run(), delayMs);
  }

  #run(): void {
    if (this.#stopped || this.#running) return;
    this.#running = true;
    this.#pending = false;
    this.#idle = (async () => {
      let nextDelay = this.#options.resyncMs;
      try {
        const result = await this.#options.reconcile();
        this.#backoffMs = this.#options.initialBackoffMs ?? 200;
        this.#backingOff = false;
        if (result?.requeueAfterMs !== undefined) nextDelay = Math.min(nextDelay, result.requeueAfterMs);
      } catch (err) {
        nextDelay = this.#backoffMs;
        this.#backingOff = true;
        this.#options.onError(err, this.#backoffMs);
        this.#backoffMs = Math.min(this.#backoffMs * 2, this.#options.maxBackoffMs ?? 30_000);
      } finally {
        this.#running = false;
      }
      if (this.#stopped) return;
      // A trigger during the run means the world changed under it: go again now, unless backing off.
      this.#schedule(this.#pending && !this.#backingOff ? 0 : nextDelay);
    })();
  }
}
