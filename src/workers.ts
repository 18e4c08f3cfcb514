// `--workers N`: N processes serve the same listeners through SO_REUSEPORT (the kernel spreads TCP
// connections and keeps each UDP flow on one worker), as nginx's worker_processes. The primary
// loads and validates configs, hands them to every worker, serves the admin endpoints with the
// workers' metrics summed, replaces a worker that dies, and drains them all on SIGTERM.
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { AggregatorRegistry, Registry } from 'prom-client';
import type { L4Config } from './config/types.ts';
import { StatsRegistry } from './dataplane/stats.ts';
import { registerReloadMetrics } from './admin/metrics.ts';
import { startAdminServer, type AdminServer } from './admin/server.ts';
import { Runtime, exitOnSignals, type ConfigTarget, type RuntimeOptions } from './runtime.ts';

type ToWorker = { type: 'canary-l4:apply'; id: number; config: L4Config } | { type: 'canary-l4:shutdown'; drainMs: number };
type FromWorker = { type: 'canary-l4:applied'; id: number; error?: string };

/** How long past the drain timeout the primary waits for a worker before killing it. */
const WORKER_EXIT_MARGIN_MS = 5_000;

export class WorkerPool implements ConfigTarget {
  readonly log: Logger;
  readonly #count: number;
  readonly #stats = new StatsRegistry();
  readonly #pending = new Map<number, { waiting: Set<Worker>; errors: string[]; done: () => void }>();
  #nextId = 0;
  #config: L4Config | undefined;
  #ready = false;
  #stopping: Promise<void> | undefined;
  #admin: AdminServer | undefined;

  constructor(count: number, log: Logger) {
    this.#count = count;
    this.log = log;
  }

  get adminPort(): number {
    return this.#admin?.port ?? 0;
  }

  async start(adminHost: string | undefined, adminPort: number, metrics: boolean): Promise<void> {
    const aggregator = new AggregatorRegistry();
    const own = new Registry();
    registerReloadMetrics(own, this.#stats);
    const summed = { metrics: async () => `${await aggregator.clusterMetrics()}\n${await own.metrics()}`, contentType: own.contentType };
    this.#admin = await startAdminServer(
      adminHost,
      adminPort,
      {
        metrics: metrics ? summed : undefined,
        isReady: () => this.#ready,
        config: () => this.#config ?? { listeners: [] },
      },
      this.log,
    );
    this.log.info({ adminPort: this.adminPort, workers: this.#count }, 'admin server listening');
    cluster.on('message', (worker, message: FromWorker) => this.#onMessage(worker, message));
    cluster.on('exit', (worker, code, signal) => this.#onExit(worker, code, signal));
    await Promise.all(Array.from({ length: this.#count }, () => this.#fork()));
  }

  setReady(ready: boolean): void {
    this.#ready = ready && this.#stopping === undefined;
  }

  recordRefusedConfig(): void {
    this.#stats.reloadsFailed++;
  }

  /** Every worker applies the config; any refusal (e.g. a port in use) rejects with its reason. */
  async applyConfig(config: L4Config): Promise<void> {
    const errors = await this.#broadcast(config, Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined));
    if (errors.length > 0) {
      this.#stats.reloadsFailed++;
      throw new Error([...new Set(errors)].join('; '));
    }
    this.#config = config;
    this.#stats.reloadsSucceeded++;
    this.#stats.lastReloadSuccessSeconds = Date.now() / 1000;
  }

  stop(drainMs: number): Promise<void> {
    this.#stopping ??= (async () => {
      this.#ready = false;
      this.log.info({ drainMs }, 'shutting down: not ready; workers stop accepting and drain');
      const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
      await Promise.all(workers.map((worker) => this.#stopWorker(worker, drainMs)));
      await this.#admin?.close();
      this.log.info('all workers drained; exiting');
    })();
    return this.#stopping;
  }

  async #fork(): Promise<void> {
    const worker = cluster.fork();
    await new Promise<void>((resolve, reject) => {
      worker.once('online', resolve);
      worker.once('exit', (code) => reject(new Error(`worker ${worker.process.pid} exited with code ${code} while starting`)));
    });
    if (this.#config !== undefined) {
      const errors = await this.#broadcast(this.#config, [worker]);
      if (errors.length > 0) this.log.error({ worker: worker.process.pid, error: errors[0] }, 'replacement worker refused the running config');
    }
  }

  #broadcast(config: L4Config, workers: Worker[]): Promise<string[]> {
    const id = this.#nextId++;
    return new Promise((resolve) => {
      const entry = { waiting: new Set(workers), errors: [] as string[], done: () => resolve(entry.errors) };
      this.#pending.set(id, entry);
      for (const worker of workers) worker.send({ type: 'canary-l4:apply', id, config } satisfies ToWorker);
      if (workers.length === 0) entry.done();
    });
  }

  #onMessage(worker: Worker, message: FromWorker): void {
    if (message?.type !== 'canary-l4:applied') return;
    const entry = this.#pending.get(message.id);
    if (entry === undefined) return;
    if (message.error !== undefined) entry.errors.push(message.error);
    this.#settle(message.id, worker);
  }

  #settle(id: number, worker: Worker): void {
    const entry = this.#pending.get(id)!;
    entry.waiting.delete(worker);
    if (entry.waiting.size > 0) return;
    this.#pending.delete(id);
    entry.done();
  }

  #onExit(worker: Worker, code: number | null, signal: string | null): void {
    for (const [id, entry] of this.#pending) {
      if (!entry.waiting.has(worker)) continue;
      entry.errors.push(`worker ${worker.process.pid} exited before applying the config`);
      this.#settle(id, worker);
    }
    if (this.#stopping !== undefined) return;
    this.log.error({ worker: worker.process.pid, code, signal }, 'worker died; starting a replacement');
    this.#fork().catch((err: Error) => this.log.error({ err }, 'could not start a replacement worker'));
  }

  #stopWorker(worker: Worker, drainMs: number): Promise<void> {
    return new Promise((resolve) => {
      if (worker.isDead()) return resolve();
      const kill = setTimeout(() => worker.process.kill('SIGKILL'), drainMs + WORKER_EXIT_MARGIN_MS);
      worker.once('exit', () => {
        clearTimeout(kill);
        resolve();
      });
      worker.send({ type: 'canary-l4:shutdown', drainMs } satisfies ToWorker);
    });
  }
}

/** The worker side: a data plane on shared ports, steered by the primary over IPC. */
export async function runWorker(options: Omit<RuntimeOptions, 'adminPort' | 'reusePort'>, drainMs: number): Promise<void> {
  const runtime = await Runtime.start({ ...options, adminPort: null, reusePort: true });
  AggregatorRegistry.setRegistries([runtime.registry]);
  new AggregatorRegistry(); // answers the primary's metric requests
  const stop = (ms: number) => runtime.stop(ms).then(() => process.exit(0));
  process.on('message', (message: ToWorker) => {
    if (message?.type === 'canary-l4:apply') {
      runtime.applyConfig(message.config).then(
        () => process.send?.({ type: 'canary-l4:applied', id: message.id } satisfies FromWorker),
        (err: Error) => process.send?.({ type: 'canary-l4:applied', id: message.id, error: err.message } satisfies FromWorker),
      );
    } else if (message?.type === 'canary-l4:shutdown') {
      void stop(message.drainMs);
    }
  });
  // The primary is gone (killed outright): nobody will steer this worker any more.
  process.on('disconnect', () => void stop(drainMs));
  exitOnSignals(runtime.log, () => runtime.stop(drainMs), ['SIGTERM']);
  process.on('SIGINT', () => {});
}

export const isWorkerProcess = (): boolean => cluster.isWorker;
