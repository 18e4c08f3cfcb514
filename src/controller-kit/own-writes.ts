// Read-your-writes for informer caches. A pass that runs before the watch has delivered the
// previous pass's writes sees stale objects: it would repeat a create (AlreadyExists) or send a
// write whose resourceVersion precondition is already old (409). Both are safe but are failures,
// logged and counted, on every rollout. So the next pass waits, for a bounded time, until the
// caches show what the writes returned; past the bound it goes on, and the preconditions keep it safe.

export interface OwnWritesOptions<Written, View> {
  readonly maxWaitMs: number;
  /** The object a write is to: an object written twice is current once it shows the second write. */
  readonly objectOf: (written: Written) => string;
  /** Whether the caches, as `view` sees them, show the write (showsResourceVersion for most). */
  readonly shown: (written: Written, view: View) => boolean;
}

export class OwnWrites<Written, View> {
  readonly #options: OwnWritesOptions<Written, View>;
  /** The last write per object. */
  readonly #pending = new Map<string, Written>();
  #deadline = 0;

  constructor(options: OwnWritesOptions<Written, View>) {
    this.#options = options;
  }

  /** A write the caches are to show; the bound runs from the last one. */
  record(written: Written, now: number): void {
    this.#pending.set(this.#options.objectOf(written), written);
    this.#deadline = now + this.#options.maxWaitMs;
  }

  /** How long to wait before the caches can be trusted; 0 once they show every write (or the wait is over). */
  waitMs(view: View, now: number): number {
    for (const [object, written] of this.#pending) if (this.#options.shown(written, view)) this.#pending.delete(object);
    if (this.#pending.size === 0 || now >= this.#deadline) {
      this.#pending.clear();
      return 0;
    }
    return this.#deadline - now;
  }
}
