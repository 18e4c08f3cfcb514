// Plain-number counters owned by the data plane. Incrementing a number costs nanoseconds where a
// labelled prom-client inc() costs ~160 ns (notes/performance.md), so the hot path only touches
// these; the admin server turns them into Prometheus metrics at scrape time. Counters live as long
// as the process, across reloads, so they stay monotonic.
import type { MirrorOutcome, TakeOutCause } from '../../counters/snapshot.ts';
import { HeldOutOffers } from './held-out.ts';

/** Upper bounds in seconds, shared by every duration histogram. */
export const DURATION_BUCKETS: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 600, 1800, 3600,
];

export class DurationHistogram {
  readonly counts: number[] = DURATION_BUCKETS.map(() => 0);
  count = 0;
  sum = 0;

  observe(seconds: number): void {
    this.count++;
    this.sum += seconds;
    for (let i = 0; i < DURATION_BUCKETS.length; i++) {
      if (seconds <= DURATION_BUCKETS[i]!) {
        this.counts[i]!++;
        return;
      }
    }
  }
}

export type BackendFailureReason = 'reset' | 'first_byte_timeout';
/** Why the proxy ended a live connection or session itself (the opt-in lifetime policies). */
export type EndReason = 'max_age' | 'rebalance' | 'drain';
export type ConnectErrorReason = 'timeout' | 'refused' | 'reset' | 'unreachable' | 'other';
/** How a failed backend connect is counted in connect_errors_total. */
export function connectErrorReason(err: NodeJS.ErrnoException): ConnectErrorReason {
  switch (err.code) {
    case 'ETIMEDOUT':
      return 'timeout';
    case 'ECONNREFUSED':
      return 'refused';
    case 'ECONNRESET':
      return 'reset';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'unreachable';
    default:
      return 'other';
  }
}

/**
 * Errors that say this process ran short of something (descriptors, memory, buffers, local ports),
 * not that the backend failed: they must not count against a backend or its health.
 */
export function isLocalResourceError(err: NodeJS.ErrnoException): boolean {
  switch (err.code) {
    case 'EMFILE':
    case 'ENFILE':
    case 'ENOBUFS':
    case 'ENOMEM':
    case 'EADDRNOTAVAIL':
      return true;
    default:
      return false;
  }
}

/**
 * Why new connections or UDP sessions were refused. fd_limit: the descriptor budget is spent;
 * local_error: the system refused a socket anyway (EMFILE, ENOBUFS, no free local port...).
 */
export type LocalRefusal = 'fd_limit' | 'local_error';
/** backend_refused: the pick was a backend with `refuse: true` (its share refused, config/types.ts). */
export type RefusalReason = 'no_backend' | 'max_connections' | 'draining' | 'backend_refused' | LocalRefusal;
export type UdpDropReason = 'no_backend' | 'max_sessions' | 'queue_full' | 'backend_refused' | LocalRefusal;

/** What mirroring to a backend did, outcome by outcome (counters/snapshot.ts says what each one is). */
export type MirrorCounts = Record<MirrorOutcome, number>;
export const noMirrorCounts = (): MirrorCounts => ({
  mirrored: 0,
  compared: 0,
  equal: 0,
  different: 0,
  missing: 0,
  dropped: 0,
});

export class BackendStats {
  /** TCP connections established to this backend, or UDP sessions opened to it. */
  connections = 0;
  active = 0;
  bytesToBackend = 0;
  bytesToClient = 0;
  datagramsToBackend = 0;
  datagramsToClient = 0;
  readonly connectErrors: Record<ConnectErrorReason, number> = {
    timeout: 0,
    refused: 0,
    reset: 0,
    unreachable: 0,
    other: 0,
  };
  /** Established connections counted against the backend's health (the opt-in failOnReset, firstByteTimeoutMs). */
  readonly failures: Record<BackendFailureReason, number> = { reset: 0, first_byte_timeout: 0 };
  /** Connections and sessions the proxy ended gracefully, by policy (maxConnectionAgeMs, rebalanceWindowMs, drainTimeoutMs). */
  readonly ended: Record<EndReason, number> = { max_age: 0, rebalance: 0, drain: 0 };
  readonly connectDuration = new DurationHistogram();
  /** Established TCP connections the backend reset (whether or not that counts against its health). */
  resets = 0;
  /** UDP sessions that got at least one reply. */
  sessionsReplied = 0;
  /** New TCP connections refused and UDP flows dropped as its share (`refuse: true`). */
  refused = 0;
  /** Times passive health took the backend out of rotation. */
  markedDown = 0;
  /** What passive health kept from it: the connections and flows its weight offered it while held out, counted against it or cleared (held-out.ts). */
  readonly heldOut = new HeldOutOffers();
  /** Recovery probes while held out (a listener's probeIntervalMs). */
  readonly probes = { ok: 0, failed: 0 };
  #outMsBefore = 0;
  #outSince = 0;
  #outUntil = 0;

  /** TCP connection or UDP session lifetime. */
  readonly sessionDuration = new DurationHistogram();

  /** Passive health took the backend out at `now` (Date.now()) for `ms`, after failures of this `cause`. */
  takenOut(now: number, ms: number, cause: TakeOutCause): void {
    this.heldOut.takenOut(now, ms, cause);
    this.markedDown++;
    this.#outMsBefore = this.outMs(now);
    this.#outSince = now;
    this.#outUntil = now + ms;
  }

  /** A recovery probe failed at `now`: it stays out `ms` more. */
  probeFailed(now: number, ms: number): void {
    this.probes.failed++;
    this.heldOut.probeFailed(now, ms);
    this.#outUntil = Math.max(this.#outUntil, now + ms);
  }

  /** A recovery probe succeeded at `now`: the take-out ends. */
  probeSucceeded(now: number): void {
    this.probes.ok++;
    this.heldOut.succeeded();
    this.#outUntil = Math.min(this.#outUntil, now);
  }

  /** Milliseconds out of rotation until `now`, each take-out to its end: as scheduled, extended by failed probes, cut short by a successful one (a connection's success ending it early is not seen here: the path of every connection stays untouched). */
  outMs(now: number): number {
    return this.#outMsBefore + Math.max(0, Math.min(now, this.#outUntil) - this.#outSince);
  }
  /** Mirroring to this backend (a listener's `mirror.to`). */
  readonly mirror: MirrorCounts = noMirrorCounts();
}

export class ListenerStats {
  /** Client connections accepted (TCP) or sessions opened (UDP; a datagram refused a session is a drop). */
  accepted = 0;
  readonly refused: Record<RefusalReason, number> = {
    no_backend: 0,
    max_connections: 0,
    draining: 0,
    backend_refused: 0,
    fd_limit: 0,
    local_error: 0,
  };
  readonly udpDropped: Record<UdpDropReason, number> = {
    no_backend: 0,
    max_sessions: 0,
    queue_full: 0,
    backend_refused: 0,
    fd_limit: 0,
    local_error: 0,
  };
}

export class StatsRegistry {
  readonly listeners = new Map<string, ListenerStats>();
  /** Keyed by listener name, then backend name. */
  readonly backends = new Map<string, Map<string, BackendStats>>();
  reloadsSucceeded = 0;
  reloadsFailed = 0;
  /** Configs equal to the one served, so nothing was applied. */
  reloadsUnchanged = 0;
  lastReloadSuccessSeconds = 0;

  /** The first config applied is a load, not a reload: only its time is kept. */
  recordFirstLoad(): void {
    this.lastReloadSuccessSeconds = Date.now() / 1000;
  }

  recordReload(changed: boolean): void {
    if (!changed) {
      this.reloadsUnchanged++;
      return;
    }
    this.reloadsSucceeded++;
    this.lastReloadSuccessSeconds = Date.now() / 1000;
  }

  /** Entries created since recordCreations(), for a config that may yet be refused. */
  #created: (() => void)[] | undefined;

  listener(name: string): ListenerStats {
    let stats = this.listeners.get(name);
    if (!stats) {
      this.listeners.set(name, (stats = new ListenerStats()));
      this.#created?.push(() => this.listeners.delete(name));
    }
    return stats;
  }

  backend(listener: string, backend: string): BackendStats {
    let byName = this.backends.get(listener);
    if (!byName) {
      this.backends.set(listener, (byName = new Map()));
      this.#created?.push(() => this.backends.delete(listener));
    }
    let stats = byName.get(backend);
    if (!stats) {
      byName.set(backend, (stats = new BackendStats()));
      const created = byName;
      this.#created?.push(() => created.delete(backend));
    }
    return stats;
  }

  /**
   * Records the entries created from now on. `remove` takes them away again (a config that was
   * refused must leave no series behind); `keep` keeps them. Either ends the recording.
   */
  recordCreations(): { keep(): void; remove(): void } {
    const created: (() => void)[] = [];
    this.#created = created;
    return {
      keep: () => (this.#created = undefined),
      remove: () => {
        this.#created = undefined;
        for (const undo of created.reverse()) undo();
      },
    };
  }
}
