// The leader's collector of evidence: every interval it reads the per-backend counters of every
// serving proxy replica (its own directly, the others' from their admin server's /stats) and hands
// the interval's counts, every replica summed, to the control loop. A replica that restarted counts
// from zero again (its instance changed); one that does not answer is left out of that interval
// and the status says how many replicas contributed.

import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  MIRROR_OUTCOMES,
  TAKE_OUT_CAUSES,
  type BackendCounters,
  type CounterSnapshot,
} from '../../counters/snapshot.ts';
import type { Evidence } from './analysis/evidence.ts';
import { readyPods, selectorMatches } from '../service/selectors.ts';
import type { Labels } from '../../api/names.ts';

const ADMIN_PORT_NAME = 'admin';
const ADMIN_PORT_ENV = 'CANARY_L4_ADMIN_PORT';
const DEFAULT_ADMIN_PORT = 9090;
const FETCH_TIMEOUT_MS = 2_000;
const TICK_MS = 1_000;

/** Where the other replicas' counters are: `http://<podIP>:<admin port>/stats` of each Ready proxy pod. */
export function replicaStatsUrls(pods: readonly V1Pod[], proxySelector: Labels): string[] {
  return readyPods(pods)
    .filter((pod) => selectorMatches(proxySelector, pod.metadata?.labels) && pod.status?.podIP !== undefined)
    .flatMap((pod) => {
      const container = pod.spec?.containers.find((item) =>
        [...(item.command ?? []), ...(item.args ?? [])].includes('proxy'),
      );
      return container === undefined
        ? []
        : [`http://${formatHost(pod.status!.podIP!)}:${adminPortOf(container)}/stats`];
    });
}

/** The admin port as the container sets it: `--admin-port` in its args, a port named admin, the environment, else the default. */
function adminPortOf(container: V1Container): number {
  const args = [...(container.command ?? []), ...(container.args ?? [])];
  const flagAt = args.findIndex((arg) => arg === '--admin-port' || arg.startsWith('--admin-port='));
  const flag =
    flagAt < 0 ? undefined : Number(args[flagAt]!.includes('=') ? args[flagAt]!.split('=')[1] : args[flagAt + 1]);
  const named = container.ports?.find((port) => port.name === ADMIN_PORT_NAME)?.containerPort;
  const fromEnv = Number(container.env?.find((variable) => variable.name === ADMIN_PORT_ENV)?.value);
  const valid = (port: number | undefined) => port !== undefined && Number.isInteger(port) && port > 0 && port < 65536;
  return [flag, named, fromEnv].find(valid) ?? DEFAULT_ADMIN_PORT;
}

function formatHost(ip: string): string {
  return ip.includes(':') ? `[${ip}]` : ip;
}

function minus(now: BackendCounters, before: BackendCounters | undefined): BackendCounters {
  if (before === undefined) return now;
  return {
    connections: now.connections - before.connections,
    connectErrors: now.connectErrors - before.connectErrors,
    resets: now.resets - before.resets,
    connectLatency: now.connectLatency.map((count, index) => count - (before.connectLatency[index] ?? 0)),
    sessionsReplied: now.sessionsReplied - before.sessionsReplied,
    markedDown: now.markedDown - before.markedDown,
    outMs: (now.outMs ?? 0) - (before.outMs ?? 0),
    connectResets: (now.connectResets ?? 0) - (before.connectResets ?? 0),
    ...byKey('heldOut', TAKE_OUT_CAUSES, now.heldOut, before.heldOut, -1),
    ...byKey('mirror', MIRROR_OUTCOMES, now.mirror, before.mirror, -1),
  };
}

/** `a + sign × b`, key by key, as the counters' `field` (`mirror`, `heldOut`; left out when neither has one: a version before it). */
function byKey<Field extends 'mirror' | 'heldOut', Key extends string>(
  field: Field,
  keys: readonly Key[],
  a: Readonly<Record<Key, number>> | undefined,
  b: Readonly<Record<Key, number>> | undefined,
  sign: 1 | -1,
): Partial<Record<Field, Record<Key, number>>> {
  if (a === undefined && b === undefined) return {};
  return { [field]: Object.fromEntries(keys.map((key) => [key, (a?.[key] ?? 0) + sign * (b?.[key] ?? 0)])) } as Partial<
    Record<Field, Record<Key, number>>
  >;
}

function plus(a: BackendCounters | undefined, b: BackendCounters): BackendCounters {
  if (a === undefined) return b;
  return {
    connections: a.connections + b.connections,
    connectErrors: a.connectErrors + b.connectErrors,
    resets: a.resets + b.resets,
    connectLatency: b.connectLatency.map((count, index) => count + (a.connectLatency[index] ?? 0)),
    sessionsReplied: a.sessionsReplied + b.sessionsReplied,
    markedDown: a.markedDown + b.markedDown,
    outMs: (a.outMs ?? 0) + (b.outMs ?? 0),
    connectResets: (a.connectResets ?? 0) + (b.connectResets ?? 0),
    ...byKey('heldOut', TAKE_OUT_CAUSES, a.heldOut, b.heldOut, 1),
    ...byKey('mirror', MIRROR_OUTCOMES, a.mirror, b.mirror, 1),
  };
}

/**
 * The counts of one interval, every replica summed: each snapshot less the same instance's previous
 * one. An instance seen for the first time (a replica that just started, or just answered) only
 * sets its baseline: its counts since it started are not all of this interval. A listener whose
 * weights differ between a replica's two snapshots moved during the interval. Pure.
 */
export function intervalCounts(
  previous: ReadonlyMap<string, CounterSnapshot>,
  current: readonly CounterSnapshot[],
): { listeners: Evidence['listeners']; replicas: number; weightsMoved: string[] } {
  const sums: Record<string, Record<string, BackendCounters>> = {};
  const moved = new Set<string>();
  let replicas = 0;
  for (const snapshot of current) {
    const before = previous.get(snapshot.instance);
    if (before === undefined) continue;
    replicas++;
    for (const [listener, backends] of Object.entries(snapshot.listeners)) {
      const sum = (sums[listener] ??= {});
      for (const [backend, counters] of Object.entries(backends))
        sum[backend] = plus(sum[backend], minus(counters, before.listeners[listener]?.[backend]));
    }
    for (const listener of new Set([...Object.keys(snapshot.weights), ...Object.keys(before.weights)])) {
      if (!sameWeights(snapshot.weights[listener], before.weights[listener])) moved.add(listener);
    }
  }
  return { listeners: sums, replicas, weightsMoved: [...moved].sort() };
}

function sameWeights(
  a: Readonly<Record<string, number>> | undefined,
  b: Readonly<Record<string, number>> | undefined,
): boolean {
  const keys = new Set([...Object.keys(a ?? {}), ...Object.keys(b ?? {})]);
  return [...keys].every((key) => a?.[key] === b?.[key]);
}

/** Two intervals in a row as one (one not yet counted when the next came): counts summed, weights as at the end. Pure. */
export function mergeEvidence(earlier: Evidence, later: Evidence): Evidence {
  const listeners: Record<string, Record<string, BackendCounters>> = {};
  for (const evidence of [earlier, later]) {
    for (const [listener, backends] of Object.entries(evidence.listeners)) {
      const sum = (listeners[listener] ??= {});
      for (const [backend, counters] of Object.entries(backends)) sum[backend] = plus(sum[backend], counters);
    }
  }
  return {
    ...later,
    intervalMs: earlier.intervalMs + later.intervalMs,
    replicas: Math.min(earlier.replicas, later.replicas),
    listeners,
    weightsMoved: [...new Set([...earlier.weightsMoved, ...later.weightsMoved])].sort(),
  };
}

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A replica's /stats as a snapshot, or undefined when it is not one this version can sum (another
 * version's, a broken one): that replica is left out of the interval, never let to crash the leader.
 */
export function parseSnapshot(value: unknown, latencyBucketsMs: readonly number[]): CounterSnapshot | undefined {
  if (!isObject(value) || typeof value.instance !== 'string' || !isObject(value.listeners) || !isObject(value.weights))
    return undefined;
  const buckets = value.latencyBucketsMs;
  if (
    !Array.isArray(buckets) ||
    buckets.length !== latencyBucketsMs.length ||
    buckets.some((bound, index) => bound !== latencyBucketsMs[index])
  )
    return undefined;
  for (const backends of Object.values(value.listeners)) {
    if (!isObject(backends)) return undefined;
    for (const counters of Object.values(backends)) {
      if (!isObject(counters)) return undefined;
      const latency = counters.connectLatency;
      if (
        !(['connections', 'connectErrors', 'resets', 'sessionsReplied', 'markedDown'] as const).every((field) =>
          isCount(counters[field]),
        )
      )
        return undefined;
      if (
        (['outMs', 'connectResets'] as const).some(
          (field) => counters[field] !== undefined && !isCount(counters[field]),
        )
      )
        return undefined;
      if (!Array.isArray(latency) || latency.length !== latencyBucketsMs.length || !latency.every(isCount))
        return undefined;
      if (!countsByKey(counters.mirror, MIRROR_OUTCOMES) || !countsByKey(counters.heldOut, TAKE_OUT_CAUSES))
        return undefined;
    }
  }
  for (const weights of Object.values(value.weights)) {
    if (!isObject(weights) || !Object.values(weights).every(isCount)) return undefined;
  }
  return value as unknown as CounterSnapshot;
}

/** Absent (a version before it), or a count for each key. */
function countsByKey(value: unknown, keys: readonly string[]): boolean {
  return value === undefined || (isObject(value) && keys.every((key) => isCount(value[key])));
}

export interface CollectorOptions {
  readonly local: () => CounterSnapshot;
  /** The other replicas' /stats URLs (this replica's own may be among them: it is told by its instance). */
  readonly replicas: () => readonly string[];
  readonly intervalMs: () => number;
  /** Collect only while this holds (the leader). */
  readonly active: () => boolean;
  readonly onEvidence: (evidence: Evidence) => void;
  readonly log: Logger;
}

export class EvidenceCollector {
  readonly #options: CollectorOptions;
  #previous = new Map<string, CounterSnapshot>();
  #previousAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;
  #collecting: Promise<void> = Promise.resolve();

  constructor(options: CollectorOptions) {
    this.#options = options;
  }

  start(): void {
    this.#schedule();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#collecting;
  }

  /** Ticks at least every second, so that an interval the release shortens (or a release that
   * appears, with its own) takes effect at once, not after the old interval. */
  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(
      () => {
        this.#collecting = this.#tick()
          .catch((err: unknown) => {
            this.#previous = new Map();
            this.#previousAt = 0;
            this.#options.log.warn(
              { error: (err as Error).message },
              'counting an analysis interval failed; the next one starts afresh',
            );
          })
          .finally(() => this.#schedule());
      },
      Math.min(TICK_MS, this.#options.intervalMs()),
    );
    this.#timer.unref();
  }

  async #tick(): Promise<void> {
    if (!this.#options.active()) {
      // Not leading: a later interval must not count what another leader counted meanwhile.
      this.#previous = new Map();
      this.#previousAt = 0;
      return;
    }
    // A tick's worth of slack: an interval is never stretched by almost a whole tick.
    if (Date.now() - this.#previousAt >= this.#options.intervalMs() - TICK_MS / 2) await this.#collect();
  }

  async #collect(): Promise<void> {
    const local = this.#options.local();
    const fetched = await Promise.all(this.#options.replicas().map((url) => this.#fetch(url, local.latencyBucketsMs)));
    const snapshots = new Map<string, CounterSnapshot>([[local.instance, local]]);
    for (const snapshot of fetched)
      if (snapshot !== undefined && !snapshots.has(snapshot.instance)) snapshots.set(snapshot.instance, snapshot);
    const now = Date.now();
    const { listeners, replicas, weightsMoved } = intervalCounts(this.#previous, [...snapshots.values()]);
    const intervalMs = now - this.#previousAt;
    this.#previous = snapshots;
    this.#previousAt = now;
    // The first look only sets the baseline: what came before it is not an interval of ours.
    if (replicas === 0) return;
    this.#options.onEvidence({
      at: new Date(now).toISOString(),
      intervalMs,
      replicas,
      latencyBucketsMs: local.latencyBucketsMs,
      listeners,
      weightsMoved,
    });
  }

  async #fetch(url: string, latencyBucketsMs: readonly number[]): Promise<CounterSnapshot | undefined> {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const snapshot = parseSnapshot(await response.json(), latencyBucketsMs);
      if (snapshot === undefined) throw new Error("not counters this version can sum (another version's?)");
      return snapshot;
    } catch (err) {
      this.#options.log.debug(
        { url, error: (err as Error).message },
        "a replica's counters could not be read; it is left out of this interval",
      );
      return undefined;
    }
  }
}
