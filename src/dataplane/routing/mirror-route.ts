// Mirroring (a dark canary): which new connections and flows are also sent to the mirror backend,
// and how its replies are judged against the stable's. No I/O: the legs that carry the bytes are
// tcp/tcp-mirror-leg.ts and udp/udp-mirror-leg.ts.
import type { MirrorConfig } from '../../config/types.ts';
import { MIRROR_LEG_DESCRIPTORS, type DescriptorAccount } from '../resources/descriptor-budget.ts';
import type { BackendRuntime } from './backend-runtime.ts';
import type { MirrorCounts } from '../stats/stats.ts';

/** A listener's mirror as its routing snapshot holds it: the backend, and the share taken so far. */
export class MirrorRoute {
  readonly config: MirrorConfig;
  readonly backend: BackendRuntime;
  /** Percent points owed: an exact share (every other flow at 50 %), not a coin per flow. */
  #credit = 0;

  constructor(config: MirrorConfig, backend: BackendRuntime) {
    this.config = config;
    this.backend = backend;
  }

  get counts(): MirrorCounts {
    return this.backend.stats.mirror;
  }

  /**
   * Whether the new connection or flow placed on `placed` is to be mirrored. One placed on the
   * mirror backend itself is not: it would be sent its own traffic twice.
   */
  take(placed: BackendRuntime): boolean {
    if (placed === this.backend) return false;
    this.#credit += this.config.percent;
    if (this.#credit < 100) return false;
    this.#credit -= 100;
    return true;
  }
}

/**
 * Opens a mirror leg (counted mirrored) with the descriptor it takes, released when the leg calls
 * `release`; undefined, counted dropped, when the listener's budget has none left for it.
 */
export function openMirrorLeg<Leg>(
  route: MirrorRoute,
  descriptors: DescriptorAccount,
  open: (release: () => void) => Leg,
): Leg | undefined {
  route.counts.mirrored++;
  if (!descriptors.tryAcquire(MIRROR_LEG_DESCRIPTORS)) {
    route.counts.dropped++;
    return undefined;
  }
  return open(() => descriptors.release(MIRROR_LEG_DESCRIPTORS));
}

export type ReplyVerdict = 'equal' | 'different' | 'missing';

/** Counts one judged reply. */
export function countVerdict(counts: MirrorCounts, verdict: ReplyVerdict): void {
  counts[verdict]++;
  if (verdict !== 'missing') counts.compared++;
}

/** TCP: how many of the first reply bytes of each side are compared. */
export const COMPARED_BYTES = 4096;

/** The first bytes a side sent back, up to COMPARED_BYTES. */
export class ReplyPrefix {
  #bytes: Buffer | undefined;
  length = 0;

  get full(): boolean {
    return this.length === COMPARED_BYTES;
  }

  add(chunk: Buffer, length: number): void {
    if (this.length === COMPARED_BYTES) return;
    this.#bytes ??= Buffer.allocUnsafe(COMPARED_BYTES);
    this.length += chunk.copy(this.#bytes, this.length, 0, Math.min(length, COMPARED_BYTES - this.length));
  }

  bytes(): Buffer {
    return this.#bytes === undefined ? Buffer.alloc(0) : this.#bytes.subarray(0, this.length);
  }
}

/**
 * TCP: the verdict on the first bytes each side sent back, once neither sends more of them. Null when
 * there is nothing to judge (neither sent a byte). The mirror must match as many of the stable's
 * first bytes as the stable sent (up to the bound): none is missing, fewer or other ones different.
 */
export function compareReplyPrefixes(stable: Buffer, mirror: Buffer): ReplyVerdict | null {
  if (stable.length === 0) return mirror.length === 0 ? null : 'different';
  if (mirror.length === 0) return 'missing';
  if (mirror.length < stable.length) return 'different';
  return mirror.subarray(0, stable.length).equals(stable) ? 'equal' : 'different';
}

/** UDP: replies of one side held for pairing, at most; past it the oldest is judged missing. */
export const MAX_UNPAIRED_REPLIES = 64;

/**
 * UDP: pairs the mirror's n-th reply of a flow with the stable's n-th and counts each pair equal or
 * different; a stable reply still unpaired when the flow's mirror ends is missing. Mirror replies
 * beyond the stable's are not judged (nothing to judge them against).
 */
export class ReplyPairing {
  readonly #counts: MirrorCounts;
  readonly #stable: Buffer[] = [];
  readonly #mirror: Buffer[] = [];

  constructor(counts: MirrorCounts) {
    this.#counts = counts;
  }

  stableReply(reply: Buffer): void {
    this.#pair(reply, this.#mirror, this.#stable);
  }

  mirrorReply(reply: Buffer): void {
    this.#pair(reply, this.#stable, this.#mirror);
  }

  /** The mirror will send no more: the stable's unpaired replies are missing. */
  finish(): void {
    this.#counts.missing += this.#stable.length;
    this.#stable.length = 0;
    this.#mirror.length = 0;
  }

  /** Pairs `reply` with the other side's oldest unpaired one, else holds it in `own`. */
  #pair(reply: Buffer, others: Buffer[], own: Buffer[]): void {
    const other = others.shift();
    if (other !== undefined) {
      countVerdict(this.#counts, other.equals(reply) ? 'equal' : 'different');
      return;
    }
    if (own.length === MAX_UNPAIRED_REPLIES) {
      // Only the stable's count as missing: a mirror far ahead has nothing to be judged against.
      if (own === this.#stable) this.#counts.missing++;
      own.shift();
    }
    own.push(reply);
  }
}
