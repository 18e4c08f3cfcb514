// `npm run bench -- --only analysis [--releases N] [--seed N]`: the analysis' operating
// characteristics, measured by simulating releases through the real judging code
// (src/control/progress/verdict.ts) with binomial counts from a seeded PRNG. Pure: no proxy, no
// network; seconds. Prints the first table of docs/analysis.md; then the second one, releases simulated
// connection by connection through the data path (analysis-path.ts; minutes).
//
// A release: 30 intervals, the canary at weight 10 % (the stable side gets 9 samples for each of
// the canary's), judged on resetRate with maxAboveStable 0.01 (the margin), minSamples 10,
// failureLimit 2, confidence 0.99. An equal canary resets as often as its stable: any rollback is
// a false one. A canary worse by k × the margin resets at base + margin + k × margin: beyond its
// threshold by k margins.

import { parseArgs } from 'node:util';
import { judge } from '../src/control/progress/analysis/verdict.ts';
import type { Evidence } from '../src/control/progress/analysis/evidence.ts';
import type { AnalysisSpec } from '../src/api/spec-types.ts';
import type { AnalysisStatus, PortStatus } from '../src/api/status-types.ts';
import { printPathTable } from './analysis-path.ts';
import { grouped, percent, rollbacks } from './simulated-releases.ts';

export const INTERVALS = 30;
const WEIGHT = 10;
const STABLE_PER_CANARY = (100 - WEIGHT) / WEIGHT;
const PORT: PortStatus = {
  service: 'web',
  port: 80,
  protocol: 'TCP',
  proxyPort: 8080,
  weight: WEIGHT,
  override: null,
  served: WEIGHT,
};
const BUCKETS_MS = [1, 10];
export const FAILURE_LIMIT = 2;

/** A binomial draw by inversion, in chunks small enough that (1 − p)^chunk stays a double. */
export function binomial(random: () => number, trials: number, p: number): number {
  if (p <= 0) return 0;
  if (p >= 1) return trials;
  const chunk = Math.max(1, Math.floor(600 / -Math.log(1 - p)));
  let successes = 0;
  for (let left = trials; left > 0; left -= chunk) {
    const n = Math.min(chunk, left);
    let pmf = (1 - p) ** n;
    let cdf = pmf;
    let k = 0;
    const u = random();
    while (u > cdf && k < n) {
      pmf *= ((n - k) / (k + 1)) * (p / (1 - p));
      cdf += pmf;
      k++;
    }
    successes += k;
  }
  return successes;
}

export interface Scenario {
  /** The stable side's reset rate. */
  readonly base: number;
  /** Canary samples (connections) per interval. */
  readonly samples: number;
  /** How far beyond its threshold the canary is, in margins; null: an equal canary. */
  readonly worseBy: number | null;
}

export const MARGIN = 0.01;
export const SPEC: AnalysisSpec = {
  interval: '30s',
  minSamples: 10,
  failureLimit: FAILURE_LIMIT,
  confidence: 0.99,
  thresholds: { resetRate: { maxAboveStable: MARGIN } },
};

function interval(random: () => number, scenario: Scenario, canaryRate: number, index: number): Evidence {
  const counters = (connections: number, rate: number) => ({
    connections,
    connectErrors: 0,
    resets: binomial(random, connections, rate),
    connectLatency: [connections, 0],
    sessionsReplied: 0,
    markedDown: 0,
  });
  const stable = scenario.samples * STABLE_PER_CANARY;
  return {
    at: new Date(Date.UTC(2026, 0, 1) + index * 30_000).toISOString(),
    intervalMs: 30_000,
    replicas: 1,
    latencyBucketsMs: BUCKETS_MS,
    weightsMoved: [],
    listeners: {
      'web-80-tcp': { forked: counters(stable, scenario.base), canary: counters(scenario.samples, canaryRate) },
    },
  };
}

/** The interval (1-based) a release is rolled back at, or null when it lasts its 30 intervals. */
export function simulateRelease(random: () => number, scenario: Scenario): number | null {
  const canaryRate = scenario.worseBy === null ? scenario.base : scenario.base + MARGIN + scenario.worseBy * MARGIN;
  let status: AnalysisStatus | undefined;
  for (let index = 1; index <= INTERVALS; index++) {
    status = judge(interval(random, scenario, canaryRate, index), SPEC, [PORT], status);
    if (status.failures >= FAILURE_LIMIT) return index;
  }
  return null;
}

export interface Outcome {
  readonly releases: number;
  /** Releases rolled back, by the interval they were rolled back at. */
  readonly rolledBackAt: readonly number[];
}

export function simulate(scenario: Scenario, releases: number, seed: number): Outcome {
  return { releases, rolledBackAt: rollbacks((random) => simulateRelease(random, scenario), releases, seed) };
}

/** Share of releases rolled back within `intervals`. */
export const withinShare = (outcome: Outcome, intervals: number) =>
  outcome.rolledBackAt.filter((at) => at <= intervals).length / outcome.releases;

export const BASES = [0.001, 0.01, 0.05];
export const SAMPLES = [10, 100, 1_000, 10_000];
export const WORSE_BY = [1, 2, 5];

function detectionCell(outcome: Outcome): string {
  const within = withinShare(outcome, FAILURE_LIMIT + 2);
  const all = outcome.rolledBackAt.length / outcome.releases;
  const median = outcome.rolledBackAt[Math.floor(outcome.releases / 2)];
  return `${percent(within)} · ${median === undefined ? `>${INTERVALS}` : median} · ${percent(all)}`;
}

/** Prints the table, from `npm run bench -- --only analysis [--releases N] [--seed N]`. */
export function runAnalysisBench(argv: readonly string[]): void {
  const { values } = parseArgs({
    args: [...argv],
    options: { only: { type: 'string' }, releases: { type: 'string' }, seed: { type: 'string' } },
    strict: false,
  });
  const releases = Number(values.releases ?? 1_000);
  const seed = Number(values.seed ?? 1);
  if (!Number.isInteger(releases) || releases < 1 || !Number.isInteger(seed))
    throw new Error('--releases must be a positive integer and --seed an integer');
  const started = performance.now();
  console.log(
    `Analysis operating characteristics: ${releases} simulated releases of ${INTERVALS} intervals per cell (equal canary), ${Math.max(200, releases / 10)} per cell (worse canary), seed ${seed}`,
  );
  console.log(
    `resetRate maxAboveStable ${MARGIN} (the margin), minSamples 10, failureLimit 2, confidence 0.99, canary at weight 10 %; worse by k× margin: stable rate + (1 + k) × margin.`,
  );
  console.log(
    'Worse cells: rolled back within failureLimit + 2 intervals · median interval of the rollback · rolled back within 30 intervals.\n',
  );
  console.log(
    '| stable rate | canary samples / interval | false rollbacks, equal canary | worse by 1× margin | 2× | 5× |',
  );
  console.log('|---|---|---|---|---|---|');
  let cell = 0;
  for (const base of BASES) {
    for (const samples of SAMPLES) {
      const equal = simulate({ base, samples, worseBy: null }, releases, seed + cell++);
      const worse = WORSE_BY.map((worseBy) =>
        detectionCell(simulate({ base, samples, worseBy }, Math.max(200, releases / 10), seed + cell++)),
      );
      console.log(
        `| ${base * 100}% | ${grouped(samples)} | ${equal.rolledBackAt.length} in ${grouped(releases)} | ${worse.join(' | ')} |`,
      );
    }
  }
  printPathTable(releases, seed);
  console.log(`\n${Math.round(performance.now() - started) / 1000} s`);
}
