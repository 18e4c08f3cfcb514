// Applies whole L4 configs to the running listeners: new listeners are bound first, and only when
// all of them are bound does the new config take over; a bind failure leaves the old config
// serving untouched. Listeners are identified by protocol and address, not by name, so renaming a
// listener or changing its backends never re-binds its socket or cuts its connections.
import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { BackendConfig, L4Config, ListenerConfig } from '../config/types.ts';
import { BindError } from '../errors.ts';
import { configsEqual } from '../config/equal.ts';
import { Slicer } from '../util/slicer.ts';
import { ThrottledWarning } from '../log.ts';
import type { DescriptorBudget } from './resources/descriptor-budget.ts';
import { budgetForThisProcess } from './resources/open-file-limit.ts';
import { IdleReadBuffers } from './resources/idle-read-buffers.ts';
import { BackendHealth } from './choice/passive-health.ts';
import { buildSnapshot, type ListenerSnapshot } from './routing/routing.ts';
import type { LocalRefusal, StatsRegistry } from './stats/stats.ts';
import type { Listener, ListenerContext } from './routing/listener.ts';
import { TcpListener } from './tcp/listener.ts';
import { UdpListener } from './udp/listener.ts';

export interface DataPlaneOptions {
  readonly log: Logger;
  readonly stats: StatsRegistry;
  /** How long a listener removed by a reload keeps serving its live connections. */
  readonly listenerGraceMs: number;
  /** Share listening ports with other worker processes (SO_REUSEPORT). */
  readonly reusePort?: boolean;
  /** Plain TCP pipes on the runtime's own handles where it has them (tcp/raw-handles.ts). Default true. */
  readonly tcpFastPath?: boolean;
  /** The descriptors listeners may hold; default: the process's open-file limit less what it keeps for itself. */
  readonly descriptors?: DescriptorBudget;
  /** How often idle connections are looked for, to let go of their read buffers. Default 5 s. */
  readonly idleBufferSweepMs?: number;
}

export interface BackendState {
  readonly listener: string;
  readonly backend: string;
  readonly weight: number;
  readonly healthy: boolean;
}

interface RunningListener {
  readonly listener: Listener;
  snapshot: ListenerSnapshot;
}

export class DataPlane {
  readonly #options: DataPlaneOptions;
  readonly #running = new Map<string, RunningListener>();
  readonly #health = new Map<string, BackendHealth>();
  /** Listeners removed by a reload, still finishing their connections. */
  readonly #draining = new Set<Listener>();
  /** undefined until the first config is applied. */
  #config: L4Config | undefined;
  readonly descriptors: DescriptorBudget;
  readonly #idleReadBuffers: IdleReadBuffers;
  readonly #shortOfResources: ThrottledWarning;
  #queue: Promise<unknown> = Promise.resolve();
  #stopped = false;

  constructor(options: DataPlaneOptions) {
    this.#options = options;
    this.descriptors = options.descriptors ?? budgetForThisProcess(0);
    this.#idleReadBuffers = new IdleReadBuffers(options.idleBufferSweepMs ?? DEFAULT_IDLE_BUFFER_SWEEP_MS);
    this.#shortOfResources = new ThrottledWarning(
      options.log,
      'new connections and UDP sessions refused for want of file descriptors or other local resources; raise the open-file limit (ulimit -n) or see docs/operations.md "File descriptors"',
    );
  }

  /** The config being served. */
  get config(): L4Config {
    return this.#config ?? NO_CONFIG;
  }

  /** Ports with a bound listener of the current config, per protocol. */
  listeningPorts(): { tcp: Set<number>; udp: Set<number> } {
    const ports = { tcp: new Set<number>(), udp: new Set<number>() };
    for (const { snapshot } of this.#running.values()) ports[snapshot.config.protocol].add(snapshot.config.listen.port);
    return ports;
  }

  /** Live TCP connections plus UDP sessions, across listeners (draining ones included). */
  get activeConnections(): number {
    let total = 0;
    for (const { listener } of this.#running.values()) total += listener.activeConnections;
    for (const listener of this.#draining) total += listener.activeConnections;
    return total;
  }

  /** The counters of every listener and backend served so far. */
  get stats(): StatsRegistry {
    return this.#options.stats;
  }

  /** Bytes of read buffers the open TCP connections hold. */
  readBufferBytes(): number {
    return this.#idleReadBuffers.heldBytes();
  }

  /** Every listener of the running config with its affinity setting. */
  *listenerAffinities(): Generator<readonly [listener: string, clientIP: boolean]> {
    for (const { snapshot } of this.#running.values())
      yield [snapshot.config.name, snapshot.config.affinity === 'clientIP'] as const;
  }

  /** Weight and health of every backend of the running config. */
  *backendStates(now = Date.now()): Generator<BackendState> {
    for (const { snapshot } of this.#running.values()) {
      for (const backend of snapshot.backends) {
        yield {
          listener: snapshot.config.name,
          backend: backend.config.name,
          weight: backend.config.weight,
          healthy: backend.health.isAvailable(now),
        };
      }
    }
  }

  /**
   * Applies configs one at a time, in call order. Resolves false, touching nothing, when the config
   * equals the running one; rejects (old config kept) if a listener cannot bind.
   */
  apply(config: L4Config): Promise<boolean> {
    const next = this.#queue.then(() => this.#apply(config));
    this.#queue = next.catch(() => {});
    return next;
  }

  /** Stop accepting everywhere and let live traffic finish for up to graceMs. */
  async shutdown(graceMs: number): Promise<void> {
    await this.#queue;
    this.#stopped = true;
    const running = [...this.#running.values()];
    this.#running.clear();
    // Listeners a reload removed may have a longer grace than the shutdown's: drain(graceMs) shortens it.
    await Promise.all(
      [...running.map(({ listener }) => listener), ...this.#draining].map((listener) => listener.drain(graceMs)),
    );
    this.#idleReadBuffers.stop();
  }

  async #apply(config: L4Config): Promise<boolean> {
    if (this.#stopped) throw new Error('the data plane is shutting down; config not applied');
    if (this.#config !== undefined && (await configsEqual(config, this.#config))) return false;
    const wanted = new Map(config.listeners.map((listener, index) => [listenerKey(listener), { listener, index }]));
    const added: [string, RunningListener][] = [];
    const newSeries = this.#options.stats.recordCreations();
    // A bind completes on the same tick: 10 000 of them in a row would hold the event loop.
    const slicer = new Slicer();
    for (const [key, { listener: listenerConfig, index }] of wanted) {
      if (slicer.due()) await slicer.pause();
      if (this.#running.has(key)) continue;
      const snapshot = this.#snapshot(listenerConfig);
      const context = this.#listenerContext(listenerConfig);
      const listener =
        listenerConfig.protocol === 'tcp' ? new TcpListener(snapshot, context) : new UdpListener(snapshot, context);
      added.push([key, { listener, snapshot }]);
      try {
        await listener.listen();
      } catch (err) {
        await Promise.all(added.map(([, { listener }]) => listener.drain(0)));
        newSeries.remove();
        await this.#pruneHealth(this.config);
        const { message, code } = err as NodeJS.ErrnoException;
        throw new BindError({ listener: listenerConfig.name, field: `listeners[${index}].listen` }, message, code, {
          cause: err,
        });
      }
    }
    newSeries.keep();

    // The running listeners' new snapshots are built in slices, then all swapped in at once.
    const updated: [RunningListener, ListenerSnapshot][] = [];
    const removed: string[] = [];
    for (const [key, running] of this.#running) {
      const listenerConfig = wanted.get(key)?.listener;
      if (listenerConfig === undefined) removed.push(key);
      else if (!isDeepStrictEqual(listenerConfig, running.snapshot.config))
        updated.push([running, this.#snapshot(listenerConfig, running.snapshot)]);
      if (slicer.due()) await slicer.pause();
    }
    for (const key of removed) {
      this.#drainInBackground(this.#running.get(key)!);
      this.#running.delete(key);
    }
    for (const [running, snapshot] of updated) {
      running.snapshot = snapshot;
      running.listener.update(snapshot);
    }
    for (const [key, running] of added) this.#running.set(key, running);
    this.#config = config;
    await this.#pruneHealth(config);
    return true;
  }

  #listenerContext(config: ListenerConfig): ListenerContext {
    const { log, reusePort = false, tcpFastPath = true } = this.#options;
    const budget = this.descriptors;
    const onLocalRefusal = (reason: LocalRefusal, err?: NodeJS.ErrnoException) =>
      this.#shortOfResources.note(() => ({
        listener: config.name,
        reason,
        error: err?.code,
        descriptorsInUse: budget.inUse,
        descriptorBudget: budget.capacity,
      }));
    return {
      log,
      reusePort,
      tcpFastPath,
      descriptors: budget.open(),
      onLocalRefusal,
      idleReadBuffers: this.#idleReadBuffers,
    };
  }

  /** `previous`: the listener's snapshot so far, whose balancing state carries over. */
  #snapshot(config: ListenerConfig, previous?: ListenerSnapshot): ListenerSnapshot {
    const { stats } = this.#options;
    return buildSnapshot(
      config,
      stats.listener(config.name),
      (backend) => ({ health: this.#healthOf(config, backend), stats: stats.backend(config.name, backend.name) }),
      previous,
    );
  }

  /** Health follows the backend across reloads as long as its name and address stay the same. */
  #healthOf(listener: ListenerConfig, backend: BackendConfig): BackendHealth {
    const key = backendKey(listener, backend);
    let health = this.#health.get(key);
    if (!health) this.#health.set(key, (health = new BackendHealth()));
    return health;
  }

  /** Forgets the health of backends `config` no longer has (in slices: 20 000 backends take a while). */
  async #pruneHealth(config: L4Config): Promise<void> {
    const slicer = new Slicer();
    const kept = new Set<string>();
    for (const listener of config.listeners) {
      for (const backend of listener.backends) kept.add(backendKey(listener, backend));
      if (slicer.due()) await slicer.pause();
    }
    for (const key of this.#health.keys()) {
      if (!kept.has(key)) this.#health.delete(key);
      if (slicer.due()) await slicer.pause();
    }
  }

  #drainInBackground(running: RunningListener): void {
    const { name } = running.snapshot.config;
    const { log, listenerGraceMs } = this.#options;
    log.info(
      { listener: name, active: running.listener.activeConnections },
      'listener removed; draining its connections',
    );
    this.#draining.add(running.listener);
    void running.listener.drain(listenerGraceMs).then(() => {
      this.#draining.delete(running.listener);
      log.info({ listener: name }, 'listener drained');
    });
  }
}

/** A connection idle between one and two of these lets go of its read buffers. */
const DEFAULT_IDLE_BUFFER_SWEEP_MS = 5_000;

const NO_CONFIG: L4Config = Object.freeze({ listeners: Object.freeze([]) });

function listenerKey(listener: ListenerConfig): string {
  return `${listener.protocol}|${listener.listen.host ?? '*'}|${listener.listen.port}`;
}

function backendKey(listener: ListenerConfig, backend: BackendConfig): string {
  return `${listener.name}|${backend.name}|${backend.host}|${backend.port}`;
}
