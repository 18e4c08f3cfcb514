// `--workers`: the primary's sum of its workers' data-plane counters. Each worker reports its own
// counters (in parts, so neither side holds its event loop for long at 10 000 listeners); the
// primary adds what changed since that worker's previous report to a running total. A worker that
// dies takes its live connections (the gauges) with it, but what it counted stays in the total,
// so the sums Prometheus sees never go backwards.
import type { BackendState } from '../dataplane/dataplane.ts';
import { StatsRegistry, type BackendStats, type ListenerStats } from '../dataplane/stats/stats.ts';
import { Slicer } from '../util/slicer.ts';

/** Entries (listeners, backends, health) per part: a few hundred kilobytes of JSON over IPC. */
const ENTRIES_PER_PART = 500;

/** A slice of one worker's counters, as it crosses the IPC channel (JSON). */
export interface CountersPart {
  readonly listeners: [name: string, stats: ListenerStats][];
  readonly backends: [listener: string, backend: string, stats: BackendStats][];
  /** Passive health of the backends of the worker's running config. */
  readonly health: [listener: string, backend: string, healthy: boolean][];
}

/** A worker's gauges of the whole process, sent with its last part. */
export interface WorkerGauges {
  readonly descriptorBudget: number;
  readonly descriptorsInUse: number;
  readonly readBufferBytes: number;
}

/** The worker side: its counters in parts, the event loop running between slices. */
export async function* countersInParts(
  stats: StatsRegistry,
  states: Iterable<BackendState>,
): AsyncGenerator<CountersPart> {
  const slicer = new Slicer();
  let part = emptyPart();
  let count = 0;
  for (const addTo of entries(stats, states)) {
    addTo(part);
    if (++count % ENTRIES_PER_PART === 0) {
      yield part;
      part = emptyPart();
    }
    if (slicer.due()) await slicer.pause();
  }
  yield part;
}

/** Every entry of a report, as what adds it to a part. */
function* entries(stats: StatsRegistry, states: Iterable<BackendState>): Generator<(part: CountersPart) => void> {
  for (const entry of stats.listeners) yield (part) => part.listeners.push(entry);
  for (const [listener, backends] of stats.backends) {
    for (const [backend, backendStats] of backends)
      yield (part) => part.backends.push([listener, backend, backendStats]);
  }
  for (const state of states) yield (part) => part.health.push([state.listener, state.backend, state.healthy]);
}

const emptyPart = (): CountersPart => ({ listeners: [], backends: [], health: [] });

interface WorkerReport {
  /** Each entry's values as of the worker's previous report. */
  readonly listeners: Map<string, ListenerStats>;
  readonly backends: Map<string, BackendStats>;
  readonly health: Map<string, boolean>;
  gauges: WorkerGauges;
}

/** The primary's running total of its workers' counters (see above). */
export class WorkerCounters {
  /** The sum over every worker that ever reported, the dead ones included. */
  readonly total = new StatsRegistry();
  readonly #workers = new Map<number, WorkerReport>();

  /** Adds what changed in this part of `worker`'s counters since its previous report. */
  add(worker: number, part: CountersPart): void {
    const report = this.#reportOf(worker);
    for (const [name, next] of part.listeners) {
      addDifference(this.total.listener(name), next, report.listeners.get(name));
      report.listeners.set(name, next);
    }
    for (const [listener, backend, next] of part.backends) {
      const key = backendKey(listener, backend);
      addDifference(this.total.backend(listener, backend), next, report.backends.get(key));
      report.backends.set(key, next);
    }
    for (const [listener, backend, healthy] of part.health) report.health.set(backendKey(listener, backend), healthy);
  }

  /** The worker's process-wide gauges, replacing its previous ones. */
  setGauges(worker: number, gauges: WorkerGauges): void {
    this.#reportOf(worker).gauges = gauges;
  }

  /** The worker is gone: its open connections with it; its counts stay in the total. */
  retire(worker: number): void {
    const report = this.#workers.get(worker);
    if (report === undefined) return;
    for (const [key, last] of report.backends) {
      const [listener, backend] = key.split('\0') as [string, string];
      this.total.backend(listener, backend).active -= last.active;
    }
    this.#workers.delete(worker);
  }

  /** Healthy unless a live worker has taken the backend out of rotation. */
  healthy(listener: string, backend: string): boolean {
    const key = backendKey(listener, backend);
    for (const report of this.#workers.values()) if (report.health.get(key) === false) return false;
    return true;
  }

  /** The sum of one gauge over the live workers. */
  gauge(name: keyof WorkerGauges): number {
    let sum = 0;
    for (const report of this.#workers.values()) sum += report.gauges[name];
    return sum;
  }

  #reportOf(worker: number): WorkerReport {
    let report = this.#workers.get(worker);
    if (report === undefined) {
      report = {
        listeners: new Map(),
        backends: new Map(),
        health: new Map(),
        gauges: { descriptorBudget: 0, descriptorsInUse: 0, readBufferBytes: 0 },
      };
      this.#workers.set(worker, report);
    }
    return report;
  }
}

const backendKey = (listener: string, backend: string) => `${listener}\0${backend}`;

type Numbers = { [key: string]: number | Numbers };

/** target += next - previous, for every number in `next` (nested records and arrays included). */
function addDifference(target: object, next: object, previous: object | undefined): void {
  const into = target as Numbers;
  const now = next as Numbers;
  const before = previous as Numbers | undefined;
  for (const key of Object.keys(now)) {
    const value = now[key]!;
    if (typeof value === 'number') (into[key] as number) += value - ((before?.[key] as number | undefined) ?? 0);
    else addDifference(into[key] as Numbers, value, before?.[key] as Numbers | undefined);
  }
}
