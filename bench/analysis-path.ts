// The analysis' operating characteristics through the data path (`npm run bench -- --only
// analysis`, its second table): releases simulated connection by connection through the code a
// release's proxy runs — the listener a release renders (buildL4Config: weight 50, maxFails 1,
// failTimeout 10 s, recovery probes every second), its balancer and the held-out offers
// (chooseBackend), passive health (BackendHealth), failover to the other side, the probes' effect
// (probed), the counters (BackendStats, snapshotCounters), the leader's interval counts
// (intervalCounts) and the judge. What is simulated is only what sockets would do: each connection
// is refused, or served and then reset, or served, at its backend's rates, on a clock of its own.
// A refused connection takes its backend out and is failed over, as the listener does; so the
// more broken a canary, the less it serves — the evidence the binomial table never lacks.

import type { V1Service } from '@kubernetes/client-node';
import { judge } from '../src/control/progress/analysis/verdict.ts';
import type { Evidence } from '../src/control/progress/analysis/evidence.ts';
import { intervalCounts } from '../src/control/progress/collector.ts';
import { buildL4Config } from '../src/control/service/l4.ts';
import { copyName } from '../src/control/service/copies.ts';
import type { AnalysisSpec } from '../src/api/spec-types.ts';
import type { AnalysisStatus, PortStatus } from '../src/api/status-types.ts';
import { BackendHealth } from '../src/dataplane/choice/passive-health.ts';
import { buildSnapshot, chooseBackend } from '../src/dataplane/routing/routing.ts';
import type { BackendRuntime } from '../src/dataplane/routing/backend-runtime.ts';
import type { CounterSnapshot } from '../src/counters/snapshot.ts';
import { snapshotCounters } from '../src/dataplane/stats/counters.ts';
import { StatsRegistry } from '../src/dataplane/stats/stats.ts';
import { probed } from '../src/dataplane/tcp/recovery-probe.ts';
import { grouped, percent, rollbacks } from './simulated-releases.ts';

export const PATH_INTERVALS = 30;
export const PATH_INTERVAL_MS = 10_000;
export const PATH_FAILURE_LIMIT = 2;
/** The margin of both thresholds. */
export const PATH_MARGIN = 0.02;
export const PATH_SPEC: AnalysisSpec = {
  interval: `${PATH_INTERVAL_MS / 1000}s`,
  minSamples: 10,
  failureLimit: PATH_FAILURE_LIMIT,
  confidence: 0.99,
  thresholds: { connectErrorRate: { maxAboveStable: PATH_MARGIN }, resetRate: { maxAboveStable: PATH_MARGIN } },
};
const PORT: PortStatus = {
  service: 'web',
  port: 80,
  protocol: 'TCP',
  proxyPort: 8080,
  weight: 50,
  override: null,
  served: 50,
};
const service = (name: string, clusterIP: string): V1Service => ({
  metadata: { name },
  spec: { clusterIP, ports: [{ port: 80 }] },
});
/** The listener a release at weight 50 runs (its failTimeout, maxFails and probes as rendered). */
const CONFIG = buildL4Config(
  [PORT],
  new Map([
    [copyName('web', 'forked'), service(copyName('web', 'forked'), '10.96.0.10')],
    [copyName('web', 'canary'), service(copyName('web', 'canary'), '10.96.0.11')],
  ]),
);
const LISTENER = CONFIG.listeners[0]!;
const FAIL_TIMEOUT_MS = LISTENER.failTimeoutMs;
const PROBE_INTERVAL_MS = LISTENER.probeIntervalMs ?? 0;
const CONNECT_SECONDS = 0.001;

/** What a side does to each connection: refuse it (a connect failure), or serve it and then reset it. */
export interface Behaviour {
  readonly refuse: number;
  readonly reset: number;
}

export interface PathScenario {
  readonly stable: Behaviour;
  readonly canary: Behaviour;
  /** New connections per interval the canary's weight offers it (as many go to the stable's). */
  readonly offered: number;
}

interface SimulatedBackend {
  readonly runtime: BackendRuntime;
  readonly behaviour: Behaviour;
  /** When its next recovery probe runs (Infinity: none). */
  nextProbeAt: number;
}

/** A release through the data path: when it was rolled back (ms from its start), or null when it lasted its 30 intervals. */
export function simulatePathRelease(random: () => number, scenario: PathScenario): number | null {
  const registry = new StatsRegistry();
  const snapshot = buildSnapshot(LISTENER, registry.listener(LISTENER.name), (backend) => ({
    health: new BackendHealth(),
    stats: registry.backend(LISTENER.name, backend.name),
  }));
  const backends: SimulatedBackend[] = snapshot.backends.map((runtime) => ({
    runtime,
    behaviour: runtime.config.name === 'canary' ? scenario.canary : scenario.stable,
    nextProbeAt: Infinity,
  }));
  const spacingMs = PATH_INTERVAL_MS / (2 * scenario.offered);
  let previous = new Map<string, CounterSnapshot>();
  const look = (now: number) => {
    const counters = snapshotCounters(registry, CONFIG, now);
    const counted = intervalCounts(previous, [counters]);
    previous = new Map([[counters.instance, counters]]);
    return counted;
  };
  look(0);
  let status: AnalysisStatus | undefined;
  let connection = 0;
  for (let index = 1; index <= PATH_INTERVALS; index++) {
    const end = index * PATH_INTERVAL_MS;
    for (let now = connection * spacingMs; now < end; now = ++connection * spacingMs) {
      runProbes(backends, now, random);
      const first = chooseBackend(snapshot, null, now, connection, null);
      if (attempt(backends[first]!, now, random)) continue;
      // Refused: the listener fails the client over to a backend not yet tried.
      const other = chooseBackend(snapshot, new Set([first]), now, connection, null);
      if (other !== -1 && other !== first) attempt(backends[other]!, now, random);
    }
    runProbes(backends, end, random);
    const counted = look(end);
    const evidence: Evidence = {
      at: new Date(Date.UTC(2026, 0, 1) + end).toISOString(),
      intervalMs: PATH_INTERVAL_MS,
      latencyBucketsMs: previous.values().next().value!.latencyBucketsMs,
      ...counted,
    };
    status = judge(evidence, PATH_SPEC, [PORT], status);
    if (status.failures >= PATH_FAILURE_LIMIT) return end;
  }
  return null;
}

/** One connection attempt on `backend`, as the listener counts it: whether it connected. */
function attempt(backend: SimulatedBackend, now: number, random: () => number): boolean {
  const { health, stats } = backend.runtime;
  if (random() < backend.behaviour.refuse) {
    stats.connectErrors.refused++;
    if (health.recordFailure(now, LISTENER.maxFails, FAIL_TIMEOUT_MS)) {
      stats.takenOut(now, FAIL_TIMEOUT_MS, 'connect');
      if (PROBE_INTERVAL_MS > 0 && backend.nextProbeAt === Infinity) backend.nextProbeAt = now + PROBE_INTERVAL_MS;
    }
    return false;
  }
  stats.connections++;
  stats.connectDuration.observe(CONNECT_SECONDS);
  health.recordSuccess();
  stats.heldOut.succeeded();
  if (random() < backend.behaviour.reset) stats.resets++;
  return true;
}

/** The recovery probes due by `now`, as RecoveryProbes runs them: one per interval while the backend is out, stopping once it is back. */
function runProbes(backends: readonly SimulatedBackend[], now: number, random: () => number): void {
  for (const backend of backends) {
    while (backend.nextProbeAt <= now) {
      const at = backend.nextProbeAt;
      if (backend.runtime.health.isAvailable(at)) {
        backend.nextProbeAt = Infinity;
        break;
      }
      const again = probed(backend.runtime, random() >= backend.behaviour.refuse, at, FAIL_TIMEOUT_MS);
      backend.nextProbeAt = again ? at + PROBE_INTERVAL_MS : Infinity;
    }
  }
}

export interface PathOutcome {
  readonly releases: number;
  /** Rollback times, ms from the start, sorted. */
  readonly rolledBackAtMs: readonly number[];
}

export function simulatePath(scenario: PathScenario, releases: number, seed: number): PathOutcome {
  return { releases, rolledBackAtMs: rollbacks((random) => simulatePathRelease(random, scenario), releases, seed) };
}

/** Share of releases rolled back within `ms`. */
export const withinMs = (outcome: PathOutcome, ms: number) =>
  outcome.rolledBackAtMs.filter((at) => at <= ms).length / outcome.releases;

const NOISE: Behaviour = { refuse: 0, reset: 0.03 };
/** The table's rows: the stable side resets 3 % (the noise) throughout; the first two are equal canaries. */
export const PATH_ROWS: ReadonlyArray<{
  readonly label: string;
  readonly stable: Behaviour;
  readonly canary: Behaviour;
}> = [
  { label: 'equal: both reset 3 %', stable: NOISE, canary: NOISE },
  {
    label: 'equal: both refuse 1 % and reset 3 %',
    stable: { refuse: 0.01, reset: 0.03 },
    canary: { refuse: 0.01, reset: 0.03 },
  },
  ...[1, 2, 5].map((k) => ({
    label: `resets worse by ${k}× margin (${Math.round((0.03 + (1 + k) * PATH_MARGIN) * 100)} %)`,
    stable: NOISE,
    canary: { refuse: 0, reset: 0.03 + (1 + k) * PATH_MARGIN },
  })),
  ...[0.2, 0.5, 1].map((share) => ({
    label: `refuses ${share * 100} %`,
    stable: NOISE,
    canary: { refuse: share, reset: 0.03 },
  })),
  ...[0.2, 0.5, 1].map((share) => ({
    label: `resets ${share * 100} %`,
    stable: NOISE,
    canary: { refuse: 0, reset: share },
  })),
];
export const PATH_OFFERED = [10, 25, 100, 1_000, 10_000];
/** A dead canary's promise: failureLimit × interval plus one failTimeout. */
export const PROMISED_MS = PATH_FAILURE_LIMIT * PATH_INTERVAL_MS + FAIL_TIMEOUT_MS;

function pathCell(outcome: PathOutcome, equal: boolean): string {
  if (equal) return `${outcome.rolledBackAtMs.length} in ${grouped(outcome.releases)}`;
  const median = outcome.rolledBackAtMs[Math.floor(outcome.releases / 2)];
  return `${median === undefined ? `>${(PATH_INTERVALS * PATH_INTERVAL_MS) / 1000}` : median / 1000} s · ${percent(withinMs(outcome, PROMISED_MS))} · ${percent(withinMs(outcome, 10 * PATH_INTERVAL_MS))}`;
}

/** Prints the second table of `npm run bench -- --only analysis`. */
export function printPathTable(releases: number, seed: number): void {
  const worseReleases = Math.max(200, releases / 10);
  console.log(
    `\nThrough the data path: ${releases} simulated releases of ${PATH_INTERVALS} intervals per cell (equal canary), ${worseReleases} per cell (the others), seed ${seed}.`,
  );
  console.log(
    `A release's listener (weight 50, maxFails ${LISTENER.maxFails}, failTimeout ${FAIL_TIMEOUT_MS / 1000} s, a recovery probe every ${PROBE_INTERVAL_MS / 1000} s), connection by connection through`,
  );
  console.log(
    'the balancer, passive health and failover; judged every 10 s on connectErrorRate and resetRate maxAboveStable 0.02, minSamples 10, failureLimit 2, confidence 0.99.',
  );
  console.log(
    `Other cells: median time to the rollback · rolled back within failureLimit × interval + one failTimeout (${PROMISED_MS / 1000} s) · within 10 intervals.\n`,
  );
  console.log(
    `| canary (the stable resets 3 %) | ${PATH_OFFERED.map((offered) => `${grouped(offered)} offered / interval`).join(' | ')} |`,
  );
  console.log(`|---|${PATH_OFFERED.map(() => '---|').join('')}`);
  let cell = 0;
  for (const row of PATH_ROWS) {
    const equal = row.label.startsWith('equal');
    const cells = PATH_OFFERED.map((offered) =>
      pathCell(
        simulatePath(
          { stable: row.stable, canary: row.canary, offered },
          equal ? releases : worseReleases,
          seed + 1_000 + cell++,
        ),
        equal,
      ),
    );
    console.log(`| ${row.label} | ${cells.join(' | ')} |`);
  }
}
