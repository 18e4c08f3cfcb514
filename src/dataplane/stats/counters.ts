// The data plane's per-backend counters as one JSON document (`/stats`, shaped as
// counters/snapshot.ts says): what a canary's analysis judges, from every replica. Cumulative since
// the process started; `instance` tells a restarted process (whose counters began again at zero)
// from the one before.

import { randomUUID } from 'node:crypto';
import type { L4Config } from '../../config/types.ts';
import type { BackendCounters, CounterSnapshot } from '../../counters/snapshot.ts';
import { DURATION_BUCKETS, type StatsRegistry } from './stats.ts';

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
        refused: backend.refused,
        mirror: { ...backend.mirror },
      };
    }
    listeners[listener] = byName;
  }
  const weights = Object.fromEntries(
    config.listeners.map((listener) => [
      listener.name,
      Object.fromEntries(listener.backends.map((backend) => [backend.name, backend.weight])),
    ]),
  );
  return {
    instance: INSTANCE,
    latencyBucketsMs: DURATION_BUCKETS.map((seconds) => seconds * 1000),
    listeners,
    weights,
  };
}
