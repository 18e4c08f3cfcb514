// A connection that carried a bulk transfer reads into 64 KiB buffers, and idle it would keep them:
// ~70 KiB a connection where one that never carried data costs ~6. One timer for the whole data
// plane looks every interval for connections that read nothing since its last look, and lets go of
// their buffers (their next read lands in the shared one, as a new connection's first read does).
// Idleness is read off the sockets' own byte counts, so the data path does no extra work.
import type { Socket } from 'node:net';
import type { ReadForwarder } from './socket-reads.ts';

/** One proxied connection's two sockets and what they read through. */
export interface ReadingPair {
  readonly client: Socket;
  /** undefined when the client socket reads through 'data' events (no buffer of ours). */
  readonly clientReads: ReadForwarder | undefined;
  readonly upstream: Socket;
  readonly upstreamReads: ReadForwarder;
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
    for (const pair of this.#pairs.keys()) bytes += (pair.clientReads?.heldBytes() ?? 0) + pair.upstreamReads.heldBytes();
    return bytes;
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  #sweep(): void {
    for (const [pair, seen] of this.#pairs) {
      const bytes = pair.client.bytesRead + pair.upstream.bytesRead;
      if (bytes === seen) {
        pair.clientReads?.releaseBuffer(pair.client);
        pair.upstreamReads.releaseBuffer(pair.upstream);
      }
      this.#pairs.set(pair, bytes);
    }
  }
}
