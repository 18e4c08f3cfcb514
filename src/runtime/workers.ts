// `--workers N`: N processes serve the same listeners through SO_REUSEPORT (the kernel spreads TCP
// connections and keeps each UDP flow on one worker), as nginx's worker_processes. The primary
// loads and validates configs, hands them to every worker, serves the admin endpoints with the
// workers' metrics summed (worker-metrics.ts), replaces a worker that dies, and drains them all on
// SIGTERM.
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { L4Config } from '../config/types.ts';
import { configsEqual } from '../config/equal.ts';
import { BindError, type UnboundListener } from '../errors.ts';
import { StatsRegistry } from '../dataplane/stats/stats.ts';
import { registerReloadMetrics } from '../admin/metrics.ts';
import { startAdminServer, type AdminAddress, type AdminServer } from '../admin/server.ts';
import { Runtime, exitOnSignals, type ConfigTarget, type RuntimeOptions } from './runtime.ts';
import { WorkerMetrics, answerCollect, type CollectReply, type CollectRequest } from './worker-metrics.ts';

type ToWorker =
  | { type: 'canary-l4:apply'; id: number; config: L4Config }
  | { type: 'canary-l4:shutdown'; drainMs: number }
  | CollectRequest;
/** `unbound`: the listener that could not bind. */
type FromWorker =
  | { type: 'canary-l4:applied'; id: number; error?: string; unbound?: UnboundListener }
  | { type: 'canary-l4:ready' };
interface Refusal {
  readonly message: string;
  readonly unbound?: UnboundListener;
}

/** How long past the drain timeout the primary waits for a worker before killing it. */
const WORKER_EXIT_MARGIN_MS = 5_000;
/** A worker that has not answered an apply by then counts as refusing it (a stuck event loop). */
const APPLY_TIMEOUT_MS = 15_000;

export class WorkerPool implements ConfigTarget {
  readonly log: Logger;
  readonly #count: number;
  readonly #stats = new StatsRegistry();
  readonly #pending = new Map<number, { waiting: Set<Worker>; errors: Refusal[]; done: () => void }>();
  /** Each worker's number, 0 to count - 1; a replacement takes the number of the worker it replaces. */
  readonly #slots = new Map<Worker, number>();
  /** Workers that said they listen for messages (one sent earlier is lost). */
  readonly #steerable = new Set<Worker>();
  #metrics: WorkerMetrics | undefined;
  #nextId = 0;
  /** The config every worker serves. */
  #config: L4Config | undefined;
  /** The config being applied, which a worker started meanwhile must get too. */
  #wanted: L4Config | undefined;
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

  async start(admin: AdminAddress, endpoints: { metrics: boolean; config: boolean }): Promise<void> {
    const own = new Registry();
    registerReloadMetrics(own, this.#stats);
    this.#metrics = new WorkerMetrics(
      own,
      () => this.#config,
      (worker) => this.#slots.get(worker) ?? -1,
      () => [...this.#steerable],
    );
    this.#admin = await startAdminServer(
      admin,
      {
        metrics: endpoints.metrics ? this.#metrics.endpoint : undefined,
        isReady: () => this.#ready,
        config: endpoints.config ? () => this.#config ?? { listeners: [] } : undefined,
      },
      this.log,
    );
    this.log.info(
      { adminAddress: admin.host ?? '*', adminPort: this.adminPort, workers: this.#count },
      'admin server listening',
    );
    cluster.on('message', (worker, message: FromWorker | CollectReply) => {
      if (!this.#metrics?.onMessage(worker, message as CollectReply)) this.#onMessage(worker, message as FromWorker);
    });
    cluster.on('exit', (worker, code, signal) => this.#onExit(worker, code, signal));
    await Promise.all(Array.from({ length: this.#count }, () => this.#fork()));
  }

  setReady(ready: boolean): void {
    this.#ready = ready && this.#stopping === undefined;
  }

  recordRefusedConfig(): void {
    this.#stats.reloadsFailed++;
  }

  /**
   * Every worker applies the config. Any refusal (e.g. a port in use) rejects with its reason, and
   * the workers that took the new config go back to the previous one, so all serve the same.
   */
  async applyConfig(config: L4Config): Promise<boolean> {
    if (this.#config !== undefined && (await configsEqual(config, this.#config))) {
      this.#stats.recordReload(false);
      return false;
    }
    this.#wanted = config;
    const errors = await this.#broadcast(config, liveWorkers());
    if (errors.length > 0) {
      this.#stats.reloadsFailed++;
      this.#wanted = this.#config;
      if (this.#config !== undefined) await this.#broadcast(this.#config, liveWorkers());
      const message = [...new Set(errors.map((error) => error.message))].join('; ');
      const { unbound } = errors[0]!;
      throw unbound === undefined ? new Error(message) : new BindError(unbound, message);
    }
    if (this.#config === undefined) this.#stats.recordFirstLoad();
    else this.#stats.recordReload(true);
    this.#config = config;
    return true;
  }

  stop(drainMs: number): Promise<void> {
    this.#stopping ??= (async () => {
      this.#ready = false;
      this.log.info({ drainMs }, 'shutting down: not ready; workers stop accepting and drain');
      await Promise.all(liveWorkers().map((worker) => this.#stopWorker(worker, drainMs)));
      await this.#admin?.close();
      this.log.info('all workers drained; exiting');
    })();
    return this.#stopping;
  }

  async #fork(): Promise<void> {
    const worker = cluster.fork();
    const taken = new Set(this.#slots.values());
    let slot = 0;
    while (taken.has(slot)) slot++;
    this.#slots.set(worker, slot);
    // 'online' comes before the worker listens for messages, and a message sent earlier is lost.
    await new Promise<void>((resolve, reject) => {
      worker.on('message', (message: FromWorker) => message?.type === 'canary-l4:ready' && resolve());
      worker.once('exit', (code) =>
        reject(new Error(`worker ${worker.process.pid} exited with code ${code} while starting`)),
      );
    });
    this.#steerable.add(worker);
    // Until it has what the others serve or are being given (a reload may start meanwhile).
    for (let given: L4Config | undefined; this.#wanted !== given && this.#wanted !== undefined && !worker.isDead(); ) {
      given = this.#wanted;
      const errors = await this.#broadcast(given, [worker]);
      if (errors.length > 0)
        this.log.error(
          { worker: worker.process.pid, error: errors[0]!.message },
          'a new worker refused the config the others serve',
        );
    }
  }

  #broadcast(config: L4Config, workers: Worker[]): Promise<Refusal[]> {
    const id = this.#nextId++;
    return new Promise((resolve) => {
      const timeout = setTimeout(() => {
        for (const worker of entry.waiting)
          entry.errors.push({
            message: `worker ${worker.process.pid} did not answer within ${APPLY_TIMEOUT_MS / 1000} s`,
          });
        this.#pending.delete(id);
        resolve(entry.errors);
      }, APPLY_TIMEOUT_MS);
      const entry = {
        waiting: new Set(workers),
        errors: [] as Refusal[],
        done: () => {
          clearTimeout(timeout);
          resolve(entry.errors);
        },
      };
      this.#pending.set(id, entry);
      for (const worker of workers) worker.send({ type: 'canary-l4:apply', id, config } satisfies ToWorker);
      if (workers.length === 0) entry.done();
    });
  }

  #onMessage(worker: Worker, message: FromWorker): void {
    if (message?.type !== 'canary-l4:applied') return;
    const entry = this.#pending.get(message.id);
    if (entry === undefined) return;
    if (message.error !== undefined) entry.errors.push({ message: message.error, unbound: message.unbound });
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
    // Not a refusal: its replacement is given the config being applied (#wanted).
    for (const [id, entry] of this.#pending) if (entry.waiting.has(worker)) this.#settle(id, worker);
    this.#metrics?.onExit(worker);
    this.#slots.delete(worker);
    this.#steerable.delete(worker);
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
export async function runWorker(
  options: Omit<RuntimeOptions, 'adminPort' | 'reusePort'>,
  drainMs: number,
): Promise<void> {
  const runtime = await Runtime.start({ ...options, adminPort: null, reusePort: true });
  const stop = (ms: number) => runtime.stop(ms).then(() => process.exit(0));
  process.on('message', (message: ToWorker) => {
    if (message?.type === 'canary-l4:apply') {
      runtime.applyConfig(message.config).then(
        () => process.send?.({ type: 'canary-l4:applied', id: message.id } satisfies FromWorker),
        (err: Error) =>
          process.send?.({
            type: 'canary-l4:applied',
            id: message.id,
            error: err.message,
            unbound: err instanceof BindError ? { listener: err.listener, field: err.field } : undefined,
          } satisfies FromWorker),
      );
    } else if (message?.type === 'canary-l4:shutdown') {
      void stop(message.drainMs);
    } else if (message?.type === 'canary-l4:collect') {
      answerCollect(runtime, message.id).catch((err: Error) =>
        runtime.log.error({ err }, 'could not report the counters'),
      );
    }
  });
  process.send?.({ type: 'canary-l4:ready' } satisfies FromWorker);
  // The primary is gone (killed outright): nobody will steer this worker any more.
  process.on('disconnect', () => void stop(drainMs));
  exitOnSignals(runtime.log, () => runtime.stop(drainMs), ['SIGTERM']);
  process.on('SIGINT', () => {});
}

export const isWorkerProcess = (): boolean => cluster.isWorker;

const liveWorkers = (): Worker[] =>
  Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined && !w.isDead());
