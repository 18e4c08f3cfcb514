// A connection that carried a bulk transfer reads into 64 KiB buffers, and idle it would keep them:
// ~70 KiB a connection where one that never carried data costs ~6. One timer for the whole data
// plane looks every interval for connections that read nothing since its last look, and lets go of
// their buffers (their next read lands in the shared one, as a new connection's first read does).
// Idleness is read off the sockets' own byte counts, so the data path does no extra work.

/** One proxied connection's two sockets, as far as their read buffers go. */
export interface ReadingPair {
  /** Bytes read so far by both sockets. */
  activity(): number;
  /** Bytes of read buffers of their own the two sockets hold. */
  heldReadBytes(): number;
  /** Lets go of both sockets' own read buffers (their next reads land in the shared one). */
  releaseReadBuffers(): void;
}

/** The open connections of a data plane, and the timer that looks for idle ones. */
export class IdleReadBuffers {
  /** Each pair with its byte count at the last look. */
  readonly #pairs = new Map<ReadingPair, number>();
  readonly #timer: NodeJS.Timeout;

  constructor(intervalMs: number) {
    this.#timer = setInterval(() => this.#sweep(), intervalMs);
    this.#timer.unref();
  }

  add(pair: ReadingPair): void {
    this.#pairs.set(pair, -1);
  }

  delete(pair: ReadingPair): void {
    this.#pairs.delete(pair);
  }

  /** Bytes of read buffers the open connections hold. */
  heldBytes(): number {
    let bytes = 0;
    for (const pair of this.#pairs.keys()) bytes += pair.heldReadBytes();
    return bytes;
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #sweep(): void {
    for (const [pair, seen] of this.#pairs) {
      const bytes = pair.activity();
      if (bytes === seen) pair.releaseReadBuffers();
      this.#pairs.set(pair, bytes);
    }
  }
}
