// The data plane's per-backend counters as one JSON document (`/stats`): what a canary's analysis
// judges, from every replica. Cumulative since the process started; `instance` tells a restarted
// process (whose counters began again at zero) from the one before.

import { randomUUID } from 'node:crypto';
import type { L4Config } from '../../config/types.ts';
import { DURATION_BUCKETS, type MirrorCounts, type StatsRegistry } from './stats.ts';
import type { TakeOutCause } from './held-out.ts';

export interface BackendCounters {
  /** TCP: established connections; UDP: sessions opened. */
  readonly connections: number;
  /** TCP connects that failed (every reason). */
  readonly connectErrors: number;
  /** Established TCP connections the backend reset. */
  readonly resets: number;
  /** Connect durations: counts per upper bound of `latencyBucketsMs`. */
  readonly connectLatency: readonly number[];
  /** UDP sessions that got at least one reply. */
  readonly sessionsReplied: number;
  /** Times passive health took the backend out of rotation. */
  readonly markedDown: number;
  /** Milliseconds passive health held it out of rotation, each take-out counted to its scheduled end
   * (absent from a version before it: 0). */
  readonly outMs?: number;
  /** New connections and flows its weight offered it while passive health held it out, by what took
   * it out (absent from a version before it: none). */
  readonly heldOut?: Readonly<Record<TakeOutCause, number>>;
  /** Of connectErrors, the connects the backend reset before they completed (absent from a version
   * before it: none told apart) — a reset, to the user, whatever the socket calls it. */
  readonly connectResets?: number;
  /** Mirroring to this backend (a listener's `mirror.to`); absent: none counted. */
  readonly mirror?: Readonly<MirrorCounts>;
}

export interface CounterSnapshot {
  readonly instance: string;
  /** Upper bounds, in milliseconds, of the connect latency buckets. */
  readonly latencyBucketsMs: readonly number[];
  /** By listener, then backend. */
  readonly listeners: Readonly<Record<string, Readonly<Record<string, BackendCounters>>>>;
  /** The weights served when the snapshot was taken, by listener, then backend: an interval in
   * which they moved is not judged on each side's share. */
  readonly weights: Readonly<Record<string, Readonly<Record<string, number>>>>;
}

/** One per process: counters that start again from zero belong to another instance. */
const INSTANCE = randomUUID();

/** `now`: the time the take-outs are counted to (a simulation gives its own clock). */
export function snapshotCounters(stats: StatsRegistry, config: L4Config, now = Date.now()): CounterSnapshot {
  const listeners: Record<string, Record<string, BackendCounters>> = {};
  for (const [listener, backends] of stats.backends) {
    const byName: Record<string, BackendCounters> = {};
    for (const [name, backend] of backends) {
      byName[name] = {
        connections: backend.connections,
        connectErrors: Object.values(backend.connectErrors).reduce((sum, count) => sum + count, 0),
        resets: backend.resets,
        connectLatency: [...backend.connectDuration.counts],
        sessionsReplied: backend.sessionsReplied,
        markedDown: backend.markedDown,
        outMs: backend.outMs(now),
        heldOut: { ...backend.heldOut.failed },
        connectResets: backend.connectErrors.reset,
        mirror: { ...backend.mirror },
      };
    }
    listeners[listener] = byName;
  }
  const weights = Object.fromEntries(config.listeners.map((listener) =>
    [listener.name, Object.fromEntries(listener.backends.map((backend) => [backend.name, backend.weight]))]));
  return { instance: INSTANCE, latencyBucketsMs: DURATION_BUCKETS.map((seconds) => seconds * 1000), listeners, weights };
}
