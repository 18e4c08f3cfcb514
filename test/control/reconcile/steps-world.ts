// The worlds of progressive delivery the reconcile tests share: a release of three steps, the
// proxies' counters over an interval (healthy, or resetting enough to fail), and an analysis that
// judges them. test/control/reconcile/steps.test.ts and test/deploy/argocd.test.ts run them.

import type { AnalysisSpec, CanaryReleaseSpec } from '../../../src/api/spec-types.ts';
import type { Evidence } from '../../../src/control/progress/analysis/evidence.ts';
import type { BackendCounters } from '../../../src/counters/snapshot.ts';
import { converge, NOW, options, WEB_SPEC, webWorld, type World } from './world.ts';

export const MINUTE = 60_000;
export const BUCKETS_MS = [1, 5, 25, 100, 1000];

export function counters(values: Partial<BackendCounters> = {}): BackendCounters {
  return {
    connections: 0,
    connectErrors: 0,
    resets: 0,
    connectLatency: [0, 0, 0, 0, 0],
    sessionsReplied: 0,
    markedDown: 0,
    ...values,
  };
}

/** An interval of `web-80-tcp` ending `atMs` after NOW. */
export function evidence(
  atMs: number,
  stable: Partial<BackendCounters>,
  canary: Partial<BackendCounters>,
  listener = 'web-80-tcp',
  weightsMoved: string[] = [],
): Evidence {
  return {
    at: new Date(NOW.getTime() + atMs).toISOString(),
    intervalMs: 30_000,
    replicas: 2,
    latencyBucketsMs: BUCKETS_MS,
    listeners: { [listener]: { forked: counters(stable), canary: counters(canary) } },
    weightsMoved,
  };
}

export const at = (ms: number) => options({ now: new Date(NOW.getTime() + ms) });

export function stepped(extra: Partial<CanaryReleaseSpec> = {}): World {
  return webWorld({
    ...WEB_SPEC,
    steps: [
      { weight: 5, pause: { duration: '2m' } },
      { weight: 25, pause: {} },
      { weight: 50, pause: { duration: '1m' } },
    ],
    ...extra,
  });
}

/** Converge at `ms` after NOW, returning the new world and the last pass. */
export function settle(world: World, ms: number) {
  const result = converge(world, at(ms));
  return { world: result.world, last: result.last! };
}

export const ANALYSIS: AnalysisSpec = {
  interval: '30s',
  minSamples: 50,
  failureLimit: 2,
  thresholds: {
    connectErrorRate: { max: 0.05 },
    resetRate: { max: 0.02, maxAboveStable: 0.01 },
    connectLatencyP99: { maxMs: 250, maxRatioToStable: 2 },
  },
};
/** Two steps, 10 % for 30 s then 50 % until promoted, each gated by ANALYSIS. */
export const analysed = () =>
  stepped({
    analysis: ANALYSIS,
    steps: [
      { weight: 10, pause: { duration: '30s' } },
      { weight: 50, pause: {} },
    ],
  });
// Enough samples to show every threshold within at 99 %: no reset in 1 000 canary connections.
export const healthy = (ms: number) =>
  evidence(
    ms,
    { connections: 9000, connectLatency: [8000, 1000, 0, 0, 0] },
    { connections: 1000, connectLatency: [900, 100, 0, 0, 0] },
  );
export const resetting = (ms: number) =>
  evidence(
    ms,
    { connections: 900, resets: 2, connectLatency: [900, 0, 0, 0, 0] },
    { connections: 100, resets: 30, connectLatency: [100, 0, 0, 0, 0] },
  );
