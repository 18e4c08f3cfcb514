// The leader's collector of evidence: every interval it reads the per-backend counters of every
// serving proxy replica (its own directly, the others' from their admin server's /stats) and hands
// the interval's counts, every replica summed, to the control loop. A replica that restarted counts
// from zero again (its instance changed); one that does not answer is left out of that interval
// and the status says how many replicas contributed.

import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { BackendCounters, CounterSnapshot } from '../dataplane/counters.ts';
import type { Evidence } from './analysis.ts';
import { readyPods, selectorMatches } from './selectors.ts';
import type { Labels } from './types.ts';

const ADMIN_PORT_NAME = 'admin';
const ADMIN_PORT_ENV = 'CANARY_L4_ADMIN_PORT';
const DEFAULT_ADMIN_PORT = 9090;
const FETCH_TIMEOUT_MS = 2_000;
const TICK_MS = 1_000;

/** Where the other replicas' counters are: `http://<podIP>:<admin port>/stats` of each Ready proxy pod. */
export function replicaStatsUrls(pods: readonly V1Pod[], proxySelector: Labels): string[] {
  return readyPods(pods).filter((pod) => selectorMatches(proxySelector, pod.metadata?.labels) && pod.status?.podIP !== undefined)
    .flatMap((pod) => {
      const container = pod.spec?.containers.find((item) => [...(item.command ?? []), ...(item.args ?? [])].includes('proxy'));
      return container === undefined ? [] : [`http://${formatHost(pod.status!.podIP!)}:${adminPortOf(container)}/stats`];
    });
}

function adminPortOf(container: V1Container): number {
  const named = container.ports?.find((port) => port.name === ADMIN_PORT_NAME)?.containerPort;
  const fromEnv = Number(container.env?.find((variable) => variable.name === ADMIN_PORT_ENV)?.value);
  return named ?? (Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : DEFAULT_ADMIN_PORT);
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
  };
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
  };
}

/**
 * The counts of one interval, every replica summed: each snapshot less the same instance's previous
 * one. An instance seen for the first time (a replica that just started, or just answered) only
 * sets its baseline: its counts since it started are not all of this interval. Pure.
 */
export function intervalCounts(previous: ReadonlyMap<string, CounterSnapshot>, current: readonly CounterSnapshot[]): { listeners: Evidence['listeners']; replicas: number } {
  const sums: Record<string, Record<string, BackendCounters>> = {};
  let replicas = 0;
  for (const snapshot of current) {
    const before = previous.get(snapshot.instance);
    if (before === undefined) continue;
    replicas++;
    for (const [listener, backends] of Object.entries(snapshot.listeners)) {
      const sum = (sums[listener] ??= {});
      for (const [backend, counters] of Object.entries(backends)) sum[backend] = plus(sum[backend], minus(counters, before.listeners[listener]?.[backend]));
    }
  }
  return { listeners: sums, replicas };
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
    this.#timer = setTimeout(() => {
      this.#collecting = this.#tick().finally(() => this.#schedule());
    }, Math.min(TICK_MS, this.#options.intervalMs()));
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
    const fetched = await Promise.all(this.#options.replicas().map((url) => this.#fetch(url)));
    const snapshots = new Map<string, CounterSnapshot>([[local.instance, local]]);
    for (const snapshot of fetched) if (snapshot !== undefined && !snapshots.has(snapshot.instance)) snapshots.set(snapshot.instance, snapshot);
    const now = Date.now();
    const { listeners, replicas } = intervalCounts(this.#previous, [...snapshots.values()]);
    const intervalMs = now - this.#previousAt;
    this.#previous = snapshots;
    this.#previousAt = now;
    // The first look only sets the baseline: what came before it is not an interval of ours.
    if (replicas === 0) return;
    this.#options.onEvidence({ at: new Date(now).toISOString(), intervalMs, replicas, latencyBucketsMs: local.latencyBucketsMs, listeners });
  }

  async #fetch(url: string): Promise<CounterSnapshot | undefined> {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      return await response.json() as CounterSnapshot;
    } catch (err) {
      this.#options.log.debug({ url, error: (err as Error).message }, 'a replica\'s counters could not be read; it is left out of this interval');
      return undefined;
    }
  }
}
