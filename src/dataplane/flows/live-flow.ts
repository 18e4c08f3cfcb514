// A live flow: a TCP connection or a UDP session as the lifetime policies (lifetimes.ts) see it, the
// base both protocols' flows extend: its backend, when it started, the end scheduled for it, and how
// it is ended gracefully (each protocol's own business).
import type { BackendRuntime } from '../routing/backend-runtime.ts';
import type { EndReason } from '../stats/stats.ts';

/** A TCP connection or a UDP session, as the lifetime policies see it. */
export abstract class LiveFlow {
  readonly backend: BackendRuntime;
  /** performance.now() when it was established. */
  readonly startedAt: number;
  /** Its place in the max-age jitter, in [0, 1); drawn when first needed. */
  ageJitter = -1;
  /** performance.now() at which a rebalance or a drain ends it; Infinity: not scheduled. */
  endAt = Infinity;
  endReason: EndReason = 'rebalance';
  /** Set once an end has begun; the flow leaves its set when it is closed. */
  ending = false;
  /** activity() at the last sweep, and when it last changed (performance.now()). */
  seenActivity = -1;
  activeAt: number;

  constructor(backend: BackendRuntime, startedAt: number) {
    this.backend = backend;
    this.startedAt = startedAt;
    this.activeAt = startedAt;
  }

  /** clientAddressHash of its client (affinity.ts). */
  abstract clientHash(): number;

  /** A count that grows with traffic either way (bytes read by its sockets); for the idle timeout. */
  activity(): number {
    return 0;
  }

  /** Idle past the listener's idleTimeoutMs: closed at once, as an idle timer would. */
  expireIdle(): void {}

  /** Begins a graceful end, once; counted by reason. */
  end(reason: EndReason): void {
    if (this.ending) return;
    this.ending = true;
    this.backend.stats.ended[reason]++;
    this.endGracefully();
  }

  /** Ends without losing what was already read: the subclass knows how for its protocol. */
  protected abstract endGracefully(): void;
}
