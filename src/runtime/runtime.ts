// What every mode runs: the data plane, its counters, the admin server, and a graceful shutdown on
// SIGTERM/SIGINT (readiness false, stop accepting, drain up to the timeout, exit 0).
import { ConfigError } from '../errors.ts';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { L4Config } from '../config/types.ts';
import type { CounterSnapshot } from '../counters/snapshot.ts';
import { ADMIN_MAX_CONNECTIONS } from '../defaults.ts';
import { snapshotCounters } from '../dataplane/stats/counters.ts';
import { DataPlane } from '../dataplane/dataplane.ts';
import { budgetForThisProcess, openFileLimit } from '../dataplane/resources/open-file-limit.ts';
import { StatsRegistry } from '../dataplane/stats/stats.ts';
import { createRegistry, metricsEndpoint, registerReloadMetrics, type MetricsEndpoint } from '../admin/metrics.ts';
import { startAdminServer, type AdminServer } from '../admin/server.ts';

export interface RuntimeOptions {
  readonly log: Logger;
  /** The admin server's address; undefined: every address, IPv4 and IPv6. */
  readonly adminHost: string | undefined;
  /** null: no admin server of its own (a `--workers` process; the primary serves it). */
  readonly adminPort: number | null;
  readonly listenerGraceMs: number;
  /** false: no /metrics and no process-metrics sampling (the data plane's counters are plain numbers either way). Default true. */
  readonly metrics?: boolean;
  readonly reusePort?: boolean;
  /** false: every TCP listener on net.Socket, not the fast path (--no-tcp-fast-path). Default true. */
  readonly tcpFastPath?: boolean;
  /** false: no /config (it shows every backend's address). Default true. */
  readonly configEndpoint?: boolean;
}

/** Something a config can be applied to: one data plane, or a pool of worker processes. */
export interface ConfigTarget {
  readonly log: Logger;
  /**
   * Resolves false when the config equals the one served (nothing is touched); rejects, leaving the
   * previous config serving, when it cannot be applied. Counted in every case.
   */
  applyConfig(config: L4Config): Promise<boolean>;
  /** Counts a new config refused before it reached applyConfig (it did not load or validate). */
  recordRefusedConfig(): void;
  setReady(ready: boolean): void;
}

export class Runtime implements ConfigTarget {
  readonly log: Logger;
  readonly stats = new StatsRegistry();
  readonly dataplane: DataPlane;
  /** prom-client's: process metrics (unless --no-metrics), config reloads, and what the control loop registers. */
  readonly registry: Registry;
  /** /metrics: the registry, then the data plane's counters; undefined with --no-metrics. */
  readonly metrics: MetricsEndpoint | undefined;
  #admin: AdminServer | undefined;
  #ready = false;
  /** A config was applied: the next ones are reloads. */
  #loaded = false;
  #stopping: Promise<void> | undefined;

  private constructor(options: RuntimeOptions) {
    this.log = options.log;
    // The admin server's connections (and its listening socket) stay out of the data plane's reach.
    const limit = openFileLimit();
    const descriptors = budgetForThisProcess(options.adminPort === null ? 0 : ADMIN_MAX_CONNECTIONS + 1, limit);
    if (descriptors.capacity === 0) {
      // It would start, say it is ready, and refuse every connection.
      throw new ConfigError('open files', [
        `the limit of ${limit} (ulimit -n) leaves no descriptor for connections once the process and the admin server have theirs; raise it, e.g. ulimit -n 65536 (a container's nofile limit)`,
      ]);
    }
    options.log.info(
      { openFileLimit: limit, descriptorBudget: descriptors.capacity },
      'file descriptors for listeners, connections and UDP sessions',
    );
    this.dataplane = new DataPlane({
      log: options.log,
      stats: this.stats,
      listenerGraceMs: options.listenerGraceMs,
      reusePort: options.reusePort ?? false,
      tcpFastPath: options.tcpFastPath ?? true,
      descriptors,
    });
    const serveMetrics = options.metrics ?? true;
    this.registry = createRegistry({ processMetrics: serveMetrics });
    // In a `--workers` process (no admin server of its own) the primary counts reloads.
    if (options.adminPort !== null) registerReloadMetrics(this.registry, this.stats);
    this.metrics = serveMetrics ? metricsEndpoint(() => this.registry.metrics(), this.dataplane) : undefined;
  }

  get adminPort(): number {
    return this.#admin?.port ?? 0;
  }

  get ready(): boolean {
    return this.#ready;
  }

  static async start(options: RuntimeOptions): Promise<Runtime> {
    const runtime = new Runtime(options);
    if (options.adminPort === null) return runtime;
    runtime.#admin = await startAdminServer(
      { host: options.adminHost, port: options.adminPort },
      {
        metrics: runtime.metrics,
        isReady: () => runtime.#ready,
        config: options.configEndpoint === false ? undefined : () => runtime.dataplane.config,
        stats: () => runtime.counters(),
      },
      options.log,
    );
    // With --admin-port 0 this line is the only way to learn where /metrics and /readyz are.
    options.log.info(
      { adminAddress: options.adminHost ?? '*', adminPort: runtime.adminPort },
      'admin server listening',
    );
    return runtime;
  }

  /** The data plane's counters as the `/stats` document: what the leader's analysis reads of this replica. */
  counters(): CounterSnapshot {
    return snapshotCounters(this.stats, this.dataplane.config);
  }

  setReady(ready: boolean): void {
    this.#ready = ready && this.#stopping === undefined;
  }

  async applyConfig(config: L4Config): Promise<boolean> {
    try {
      const first = !this.#loaded;
      const changed = await this.dataplane.apply(config);
      this.#loaded = true;
      if (first) this.stats.recordFirstLoad();
      else this.stats.recordReload(changed);
      return changed;
    } catch (err) {
      this.stats.reloadsFailed++;
      throw err;
    }
  }

  recordRefusedConfig(): void {
    this.stats.reloadsFailed++;
  }

  /** Idempotent: the first call drains; later calls wait for it. */
  stop(drainMs: number): Promise<void> {
    this.#stopping ??= (async () => {
      this.#ready = false;
      const active = this.dataplane.activeConnections;
      this.log.info({ active, drainMs }, 'shutting down: not ready, no longer accepting, draining live connections');
      await this.dataplane.shutdown(drainMs);
      await this.#admin?.close();
      this.log.info('drained; exiting');
    })();
    return this.#stopping;
  }
}

/**
 * SIGTERM/SIGINT: `stop` (which drains), then exit 0; a second signal exits at once.
 * `signals` lets a `--workers` process leave SIGINT (a terminal's Ctrl-C reaches the whole process
 * group) to its primary.
 */
export function exitOnSignals(
  log: Logger,
  stop: () => Promise<void>,
  signals: readonly NodeJS.Signals[] = ['SIGTERM', 'SIGINT'],
): void {
  let signalled = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (signalled) {
      log.warn({ signal }, 'second signal: exiting without waiting for the drain');
      process.exit(1);
    }
    signalled = true;
    log.info({ signal }, 'signal received');
    stop()
      .catch((err: Error) => log.error({ err }, 'error while stopping'))
      .then(() => process.exit(0));
  };
  for (const signal of signals) process.on(signal, onSignal);
}
