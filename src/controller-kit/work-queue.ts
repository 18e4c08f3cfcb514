// The work queue of a level-triggered control loop: the manager's has one key per CanaryRelease
// (namespace/name), the proxy's one key only (work-loop.ts). Events only add keys; a key added while
// it is queued is queued once; added while it runs, it runs once more after. A few workers, never two
// on the same key. A failed key is retried with capped exponential backoff of its own, forever (other
// keys go on); a success resets it; events for it meanwhile wait for that retry instead of hammering
// a failing API. With a resync, every key that ran is run again that long after its last success.
// controller-runtime's workqueue, in small.

export interface KeyedQueueOptions {
  readonly reconcile: (key: string) => Promise<{ requeueAfterMs?: number } | undefined>;
  readonly onError: (key: string, err: unknown, retryInMs: number) => void;
  readonly workers: number;
  /** Run a key again this long after each success (drift no event announced); none: only on events. */
  readonly resyncMs?: number;
  readonly initialBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

export class KeyedQueue {
  readonly #options: KeyedQueueOptions;
  /** Keys waiting for a worker, in order. */
  readonly #ready = new Set<string>();
  readonly #running = new Set<string>();
  /** Keys added while they ran: they run again once done. */
  readonly #dirty = new Set<string>();
  /** Keys waiting for a timer (a backoff or a requeueAfter). */
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #backoffMs = new Map<string, number>();
  /** Keys are taken from start() on; queued before, they wait for it. */
  #started = false;
  #stopped = false;
  #busy = 0;
  /** Settles once every reconcile started so far has finished. */
  #idle: Promise<void> = Promise.resolve();

  constructor(options: KeyedQueueOptions) {
    this.#options = options;
  }

  start(): void {
    this.#started = true;
    this.#pump();
  }

  /** Reconcile `key` soon (unless it is backing off: then at its retry). */
  add(key: string): void {
    if (this.#stopped) return;
    if (this.#running.has(key)) {
      this.#dirty.add(key);
      return;
    }
    if (this.#backoffMs.has(key) && this.#timers.has(key)) return;
    this.#enqueue(key);
  }

  /** Reconcile `key` after `delayMs` (an earlier add wins). */
  addAfter(key: string, delayMs: number): void {
    if (this.#stopped || this.#timers.has(key)) return;
    this.#timers.set(
      key,
      setTimeout(() => {
        this.#timers.delete(key);
        if (this.#running.has(key)) this.#dirty.add(key);
        else this.#enqueue(key);
      }, delayMs),
    );
  }

  /** The API answers again (a watch came back): end `key`'s backoff and run it now. */
  retryNow(key: string): void {
    if (this.#stopped || !this.#backoffMs.delete(key)) return;
    this.add(key);
  }

  /** Stops taking keys, forgets the queued ones and waits for those running. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
    this.#ready.clear();
    this.#dirty.clear();
    while (this.#busy > 0) await this.#idle;
  }

  #enqueue(key: string): void {
    clearTimeout(this.#timers.get(key));
    this.#timers.delete(key);
    this.#ready.add(key);
    this.#pump();
  }

  #pump(): void {
    while (this.#started && !this.#stopped && this.#busy < this.#options.workers && this.#ready.size > 0) {
      const key = this.#ready.values().next().value as string;
      this.#ready.delete(key);
      void this.#work(key);
    }
  }

  async #work(key: string): Promise<void> {
    this.#busy++;
    this.#running.add(key);
    let settle!: () => void;
    const done = new Promise<void>((resolve) => (settle = resolve));
    this.#idle = Promise.all([this.#idle, done]).then(() => undefined);
    try {
      const result = await this.#options.reconcile(key);
      this.#backoffMs.delete(key);
      const againMs = Math.min(result?.requeueAfterMs ?? Infinity, this.#options.resyncMs ?? Infinity);
      if (againMs !== Infinity) this.addAfter(key, againMs);
    } catch (err) {
      const delayMs = this.#backoffMs.get(key) ?? this.#options.initialBackoffMs ?? 200;
      this.#backoffMs.set(key, Math.min(delayMs * 2, this.#options.maxBackoffMs ?? 30_000));
      this.#options.onError(key, err, delayMs);
      this.#dirty.delete(key);
      this.addAfter(key, delayMs);
    } finally {
      this.#running.delete(key);
      this.#busy--;
      settle();
      if (this.#dirty.delete(key) && !this.#stopped) this.#enqueue(key);
      this.#pump();
    }
  }
}
