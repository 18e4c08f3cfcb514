// What every mode runs: the data plane, its counters, the admin server, and a graceful shutdown on
// SIGTERM/SIGINT (readiness false, stop accepting, drain up to the timeout, exit 0).
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { DataPlane } from './dataplane/dataplane.ts';
import { StatsRegistry } from './dataplane/stats.ts';
import { createMetricsRegistry } from './admin/metrics.ts';
import { startAdminServer, type AdminServer } from './admin/server.ts';

export interface RuntimeOptions {
  readonly log: Logger;
  readonly adminHost: string | undefined;
  readonly adminPort: number;
  readonly listenerGraceMs: number;
  /** What /config shows; defaults to the data plane's running config. */
  readonly configView?: () => unknown;
}

export class Runtime {
  readonly log: Logger;
  readonly stats = new StatsRegistry();
  readonly dataplane: DataPlane;
  readonly registry: Registry;
  #admin: AdminServer | undefined;
  #ready = false;
  #stopping: Promise<void> | undefined;

  constructor(options: RuntimeOptions) {
    this.log = options.log;
    this.dataplane = new DataPlane({ log: options.log, stats: this.stats, listenerGraceMs: options.listenerGraceMs });
    this.registry = createMetricsRegistry(
      { stats: this.stats, backendStates: () => this.dataplane.backendStates() },
      { processMetrics: true },
    );
  }

  get adminPort(): number {
    return this.#admin?.port ?? 0;
  }

  static async start(options: RuntimeOptions): Promise<Runtime> {
    const runtime = new Runtime(options);
    runtime.#admin = await startAdminServer(
      options.adminHost,
      options.adminPort,
      {
        registry: runtime.registry,
        isReady: () => runtime.#ready,
        config: options.configView ?? (() => runtime.dataplane.config),
      },
      options.log,
    );
    return runtime;
  }

  setReady(ready: boolean): void {
    this.#ready = ready && this.#stopping === undefined;
  }

  /** Applies a config and counts it as a reload; rejects, leaving the old config serving, on failure. */
  async applyConfig(config: Parameters<DataPlane['apply']>[0]): Promise<void> {
    try {
      await this.dataplane.apply(config);
      this.stats.reloadsSucceeded++;
      this.stats.lastReloadSuccessSeconds = Date.now() / 1000;
    } catch (err) {
      this.stats.reloadsFailed++;
      throw err;
    }
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

  /** SIGTERM/SIGINT drain then exit 0; a second signal exits at once. */
  exitOnSignals(drainMs: number, beforeStop: () => Promise<void> = async () => {}): void {
    let signalled = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (signalled) {
        this.log.warn({ signal }, 'second signal: exiting without waiting for the drain');
        process.exit(1);
      }
      signalled = true;
      this.log.info({ signal }, 'signal received');
      beforeStop()
        .catch((err: Error) => this.log.error({ err }, 'error while stopping'))
        .then(() => this.stop(drainMs))
        .then(() => process.exit(0));
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  }
}
