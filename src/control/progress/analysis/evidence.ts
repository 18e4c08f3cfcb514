// What the proxies counted over one analysis interval, every serving replica summed: the input of
// the analysis (verdict.ts), of the achieved split and of the mirror's counts. Pure.

import type { BackendCounters } from '../../../counters/snapshot.ts';

/** What the proxies counted over one interval, every replica summed (see controller's collector). */
export interface Evidence {
  /** When the interval ended, RFC 3339 with milliseconds. */
  readonly at: string;
  readonly intervalMs: number;
  /** Replicas whose counters it holds. */
  readonly replicas: number;
  readonly latencyBucketsMs: readonly number[];
  /** Counts during the interval, by listener, then backend (`forked`, `canary`). */
  readonly listeners: Readonly<Record<string, Readonly<Record<string, BackendCounters>>>>;
  /** Listeners whose weights changed during the interval (a step, a weight edit, an override, a
   * side turning Ready): their shares are not judged. */
  readonly weightsMoved: readonly string[];
}

/** Whether any proxy counted anything during the interval. */
export function hasCounts(evidence: Evidence): boolean {
  return Object.values(evidence.listeners).some((backends) =>
    Object.values(backends).some(
      (counters) =>
        counters.connections +
          counters.connectErrors +
          counters.resets +
          counters.sessionsReplied +
          counters.markedDown +
          (counters.mirror?.mirrored ?? 0) >
        0,
    ),
  );
}
