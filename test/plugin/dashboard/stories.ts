// Releases with a story for the dashboard's browser test and screenshots: each one run through the
// proxy's own reconcile (the pure pass of test/control/reconcile/world.ts), interval by interval over
// the last minutes, so that its status (status.history included) is what a proxy would have written.
// A stepping release (its first step held past its pause while the analysis pools low traffic), one a
// person paused, and one its analysis rolled back.

import type { CanaryReleaseSpec } from '../../../src/api/spec-types.ts';
import type { CanaryReleaseStatus } from '../../../src/api/status-types.ts';
import type { Evidence } from '../../../src/control/progress/analysis/evidence.ts';
import { BUCKETS_MS, counters } from '../../control/reconcile/steps-world.ts';
import { converge, options, WEB_SPEC, webWorld, type World } from '../../control/reconcile/world.ts';

const INTERVAL_MS = 30_000;
const MINUTE = 60_000;

export interface Story {
  readonly spec: CanaryReleaseSpec;
  readonly status: CanaryReleaseStatus;
}

/** One interval's counters: `stable` and `canary` new connections, the canary resetting `resets` of them. */
function interval(at: Date, stable: number, canary: number, resets = 0): Evidence {
  const latency = (connections: number) => [
    Math.round(connections * 0.9),
    connections - Math.round(connections * 0.9),
    0,
    0,
    0,
  ];
  return {
    at: at.toISOString(),
    intervalMs: INTERVAL_MS,
    replicas: 2,
    latencyBucketsMs: BUCKETS_MS,
    listeners: {
      'web-80-tcp': {
        forked: counters({ connections: stable, resets: Math.round(stable * 0.001), connectLatency: latency(stable) }),
        canary: counters({ connections: canary, resets, connectLatency: latency(canary) }),
      },
    },
    weightsMoved: [],
  };
}

/** Runs the release from `start`, an interval at a time: `traffic` gives each interval's counters (or a change of spec). */
function run(
  spec: CanaryReleaseSpec,
  start: Date,
  intervals: number,
  traffic: (index: number, world: World, at: Date) => Evidence | undefined,
): Story {
  let world = webWorld({ ...WEB_SPEC, ...spec });
  world = converge(world, options({ now: start })).world;
  for (let index = 1; index <= intervals && world.release?.status?.phase !== 'Deprecated'; index++) {
    const at = new Date(start.getTime() + index * INTERVAL_MS);
    world.evidence = traffic(index, world, at);
    world = converge(world, options({ now: at })).world;
  }
  return { spec: world.release!.spec!, status: world.release!.status as CanaryReleaseStatus };
}

const ANALYSIS = {
  interval: '30s',
  minSamples: 100,
  failureLimit: 2,
  thresholds: { connectErrorRate: { max: 0.01 }, resetRate: { max: 0.02, maxAboveStable: 0.01 } },
};

/** ~100 new connections a second, `weight` % to the canary. */
const split = (at: Date, weight: number, perInterval = 3000, resets = 0) =>
  interval(at, Math.round(perInterval * (1 - weight / 100)), Math.round((perInterval * weight) / 100), resets);

/**
 * Step 1 of 3 held past its 1m pause while the analysis pooled a quiet start, then passed; step 2
 * held past its 2m pause now, as traffic went quiet again: nothing wrong, and nothing for a person.
 */
export function stepping(now: Date): Story {
  const start = new Date(now.getTime() - 6 * MINUTE - 10_000);
  return run(
    {
      steps: [
        { weight: 10, pause: { duration: '1m' } },
        { weight: 25, pause: { duration: '2m' } },
        { weight: 50, pause: {} },
      ],
      analysis: ANALYSIS,
    },
    start,
    12,
    (index, world, at) => {
      const weight = world.release?.status?.ports?.[0]?.served ?? 10;
      // ~1 new connection a second but in intervals 5 to 7: too few canary samples to decide.
      return split(at, weight, index >= 5 && index <= 7 ? 3000 : 120);
    },
  );
}

/** Step 2 of 3, paused by a person a minute in, and still paused. */
export function paused(now: Date): Story {
  const start = new Date(now.getTime() - 7 * MINUTE - 10_000);
  return run(
    {
      steps: [
        { weight: 20, pause: { duration: '1m' } },
        { weight: 50, pause: { duration: '5m' } },
        { weight: 100, pause: {} },
      ],
      analysis: ANALYSIS,
    },
    start,
    14,
    (index, world, at) => {
      if (index === 6) world.release = { ...world.release!, spec: { ...world.release!.spec!, paused: true } };
      return split(at, world.release?.status?.ports?.[0]?.served ?? 20);
    },
  );
}

/** Step 2 of 3 at 30 %: its canary starts resetting a third of its connections; two failed intervals roll it back. */
export function rolledBack(now: Date): Story {
  const start = new Date(now.getTime() - 5 * MINUTE);
  return run(
    {
      steps: [
        { weight: 10, pause: { duration: '1m' } },
        { weight: 30, pause: { duration: '2m' } },
        { weight: 60, pause: { duration: '2m' } },
      ],
      analysis: ANALYSIS,
    },
    start,
    10,
    (index, world, at) => {
      const weight = world.release?.status?.ports?.[0]?.served ?? 10;
      const canary = Math.round((3000 * weight) / 100);
      return split(at, weight, 3000, index >= 5 ? Math.round(canary / 3) : 0);
    },
  );
}
