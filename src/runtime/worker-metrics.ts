// `--workers`: the primary's /metrics. On a scrape it asks every live worker for its counters,
// which arrive in parts (worker-counters.ts) and are summed so that they never go backwards, and
// for its process metrics, which keep a `worker` label (a process's own CPU seconds cannot be
// summed across a restart). Then it renders as a single data plane would.
import type { Worker } from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';
import type { L4Config } from '../config/types.ts';
import type { BackendState } from '../dataplane/dataplane.ts';
import { metricsEndpoint, type MetricsEndpoint } from '../admin/metrics.ts';
import type { DataPlaneView } from '../admin/exposition.ts';
import { WorkerCounters, countersInParts, type CountersPart, type WorkerGauges } from './worker-counters.ts';
import type { Runtime } from './runtime.ts';

/** Primary to worker: send your counters. */
export type CollectRequest = { type: 'canary-l4:collect'; id: number };
/** Worker to primary: its counters in parts, then `collected` with its gauges and process metrics. */
export type CollectReply =
  | { type: 'canary-l4:counters'; id: number; part: CountersPart }
  | { type: 'canary-l4:collected'; id: number; gauges: WorkerGauges; processMetrics: object[] };

/** A scrape renders with what has arrived by then, should a worker be stuck. */
const COLLECT_TIMEOUT_MS = 5_000;

interface MetricJson {
  readonly values?: { labels?: Record<string, string | number> }[];
}

/** The primary's side of /metrics in `--workers` mode. */
export class WorkerMetrics {
  readonly #counters = new WorkerCounters();
  readonly #own: Registry;
  readonly #config: () => L4Config | undefined;
  readonly #slotOf: (worker: Worker) => number;
  readonly #workers: () => Worker[];
  readonly #waiting = new Map<Worker, () => void>();
  readonly #processMetrics = new Map<Worker, object[]>();
  #collecting: Promise<void> | undefined;
  #nextId = 0;

  /**
   * `own`: the primary's registry (config reloads); `slotOf`: a worker's number, the same for its
   * replacement, for the `worker` label; `workers`: the live workers.
   */
  constructor(
    own: Registry,
    config: () => L4Config | undefined,
    slotOf: (worker: Worker) => number,
    workers: () => Worker[],
  ) {
    this.#own = own;
    this.#config = config;
    this.#slotOf = slotOf;
    this.#workers = workers;
  }

  get endpoint(): MetricsEndpoint {
    const counters = this.#counters;
    const config = this.#config;
    const view: DataPlaneView = {
      stats: counters.total,
      *backendStates(): Generator<BackendState> {
        for (const listener of config()?.listeners ?? []) {
          for (const backend of listener.backends) {
            yield {
              listener: listener.name,
              backend: backend.name,
              weight: backend.weight,
              healthy: counters.healthy(listener.name, backend.name),
            };
          }
        }
      },
      get descriptors() {
        return { capacity: counters.gauge('descriptorBudget'), inUse: counters.gauge('descriptorsInUse') };
      },
      readBufferBytes: () => counters.gauge('readBufferBytes'),
      *listenerAffinities() {
        for (const listener of config()?.listeners ?? [])
          yield [listener.name, listener.affinity === 'clientIP'] as const;
      },
    };
    return metricsEndpoint(async () => {
      await this.#collect();
      return `${await this.#own.metrics()}\n${await this.#workersProcessMetrics()}`;
    }, view);
  }

  /** Handles a worker's reply; false for any other message. */
  onMessage(worker: Worker, message: CollectReply): boolean {
    if (message?.type === 'canary-l4:counters') {
      this.#counters.add(worker.id, message.part);
      return true;
    }
    if (message?.type === 'canary-l4:collected') {
      this.#counters.setGauges(worker.id, message.gauges);
      this.#processMetrics.set(worker, message.processMetrics);
      this.#waiting.get(worker)?.();
      return true;
    }
    return false;
  }

  onExit(worker: Worker): void {
    this.#counters.retire(worker.id);
    this.#processMetrics.delete(worker);
    this.#waiting.get(worker)?.();
  }

  /** One collection at a time: scrapes that come meanwhile share it. */
  #collect(): Promise<void> {
    this.#collecting ??= (async () => {
      const id = this.#nextId++;
      const replies = this.#workers().map(
        (worker) =>
          new Promise<void>((resolve) => {
            this.#waiting.set(worker, resolve);
            worker.send({ type: 'canary-l4:collect', id } satisfies CollectRequest);
          }),
      );
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(replies),
        new Promise((resolve) => (timer = setTimeout(resolve, COLLECT_TIMEOUT_MS))),
      ]);
      clearTimeout(timer);
      this.#waiting.clear();
    })().finally(() => (this.#collecting = undefined));
    return this.#collecting;
  }

  async #workersProcessMetrics(): Promise<string> {
    const labelled = [...this.#processMetrics].map(([worker, metrics]) => {
      const slot = String(this.#slotOf(worker));
      return (metrics as MetricJson[]).map((metric) => ({
        ...metric,
        values: metric.values?.map((value) => ({ ...value, labels: { ...value.labels, worker: slot } })),
      }));
    });
    return labelled.length === 0 ? '' : AggregatorRegistry.aggregate(labelled).metrics();
  }
}

/** The worker side of a collection: its counters in parts, then its gauges and process metrics. */
export async function answerCollect(runtime: Runtime, id: number): Promise<void> {
  const { dataplane } = runtime;
  for await (const part of countersInParts(dataplane.stats, dataplane.backendStates())) {
    process.send?.({ type: 'canary-l4:counters', id, part } satisfies CollectReply);
  }
  const gauges: WorkerGauges = {
    descriptorBudget: dataplane.descriptors.capacity,
    descriptorsInUse: dataplane.descriptors.inUse,
    readBufferBytes: dataplane.readBufferBytes(),
  };
  process.send?.({
    type: 'canary-l4:collected',
    id,
    gauges,
    processMetrics: await runtime.registry.getMetricsAsJSON(),
  } satisfies CollectReply);
}
