// The mirror leg of a TCP connection: a second upstream connection, to the mirror backend, written
// the same client bytes (up to maxBytes); its replies are read and dropped (compare: replies keeps
// their first bytes to judge against the stable's). The leg never slows the real connection: it
// never pauses the client, and a mirror that falls behind by more than a bounded buffer, or fails,
// is dropped and counted while the real connection goes on.
import net from 'node:net';
import { ReplyPrefix, compareReplyPrefixes, countVerdict, type MirrorRoute } from '../routing/mirror-route.ts';
import type { MirrorCounts } from '../stats/stats.ts';

/** Client bytes queued for a mirror that is connecting or reading slowly; past this it is dropped. */
export const MIRROR_BUFFER_BYTES = 256 * 1024;
/** Once the real connection closed, how long the mirror gets to finish its reply. */
export const MIRROR_LINGER_MS = 1_000;

export class TcpMirrorLeg {
  readonly #socket: net.Socket;
  readonly #counts: MirrorCounts;
  readonly #maxBytes: number;
  readonly #release: () => void;
  /** compare: replies — the first bytes each side sent back; null otherwise. */
  readonly #prefixes: { readonly stable: ReplyPrefix; readonly mirror: ReplyPrefix } | null;
  #copied = 0;
  #judged = false;
  #realClosed = false;
  #closed = false;
  #timer: NodeJS.Timeout;

  /** `release`: called once when the leg is over (its descriptor). */
  constructor(route: MirrorRoute, connectTimeoutMs: number, release: () => void) {
    this.#counts = route.counts;
    this.#maxBytes = route.config.maxBytes;
    this.#release = release;
    const prefixes =
      route.config.compare === 'replies' ? { stable: new ReplyPrefix(), mirror: new ReplyPrefix() } : null;
    this.#prefixes = prefixes;
    const { host, port } = route.backend.config;
    const socket = (this.#socket = net.connect({ host, port, noDelay: true }));
    this.#timer = setTimeout(() => this.#drop(), connectTimeoutMs).unref();
    socket.once('connect', () => clearTimeout(this.#timer));
    socket.on('data', (chunk: Buffer) => {
      if (prefixes === null) return;
      prefixes.mirror.add(chunk, chunk.length);
      this.#judgeWhenKnown();
    });
    socket.on('error', () => this.#drop());
    // The mirror sends no more: what it sent is its whole reply.
    socket.once('close', () => {
      if (this.#realClosed) this.#settle();
    });
  }

  /** Client bytes that went to the stable (the leg copies them: `buffer` is reused). */
  copy(buffer: Buffer, bytes: number): void {
    // A mirror that ended its side (its FIN ends ours) takes no more: that is its answer, not a failure.
    if (this.#closed || this.#copied >= this.#maxBytes || this.#socket.writableEnded) return;
    const length = Math.min(bytes, this.#maxBytes - this.#copied);
    this.#copied += length;
    // Written while still connecting, too: the socket queues it, and the bound below holds it.
    this.#socket.write(Buffer.copyBytesFrom(buffer, 0, length));
    if (this.#socket.writableLength > MIRROR_BUFFER_BYTES) this.#drop();
  }

  /** Bytes the stable sent the client. */
  stableReply(buffer: Buffer, bytes: number): void {
    if (this.#prefixes === null || this.#prefixes.stable.full) return;
    this.#prefixes.stable.add(buffer, bytes);
    this.#judgeWhenKnown();
  }

  /** The client sent its FIN: so does the mirror's connection. */
  clientEnded(): void {
    if (!this.#closed) this.#socket.end();
  }

  /** The real connection is over: the mirror gets MIRROR_LINGER_MS to finish its reply, then is judged and closed. */
  realClosed(): void {
    if (this.#closed) return;
    this.#realClosed = true;
    // The mirror closed first: what it sent is all it will send.
    if (this.#socket.destroyed) return this.#settle();
    this.#socket.end();
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#settle(), MIRROR_LINGER_MS).unref();
    this.#judgeWhenKnown();
  }

  /**
   * Judged as soon as the outcome cannot change: both sides sent the compared bytes
   * (routing/mirror-route.ts), or the stable is done and the mirror matched its length.
   */
  #judgeWhenKnown(): void {
    const prefixes = this.#prefixes;
    if (prefixes === null || this.#judged || this.#closed) return;
    if (prefixes.stable.full && prefixes.mirror.full) this.#judge();
    else if (this.#realClosed && prefixes.mirror.length >= prefixes.stable.length) this.#settle();
  }

  #judge(): void {
    if (this.#prefixes === null || this.#judged) return;
    this.#judged = true;
    const verdict = compareReplyPrefixes(this.#prefixes.stable.bytes(), this.#prefixes.mirror.bytes());
    if (verdict !== null) countVerdict(this.#counts, verdict);
  }

  #settle(): void {
    if (this.#closed) return;
    this.#judge();
    this.#close();
  }

  /** Failed, or fell behind: given up unjudged (a leg already judged is only closed). */
  #drop(): void {
    if (this.#closed) return;
    if (!this.#judged) this.#counts.dropped++;
    this.#close();
  }

  #close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#socket.destroy();
    this.#release();
  }
}
