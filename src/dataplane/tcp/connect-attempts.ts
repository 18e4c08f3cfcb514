// A TCP listener's connect attempts, whichever accept path took the client: the next backend to try,
// what a failed connect means (fail over, or refuse the client when the fault is this process's own),
// passive health and its recovery probes, and the counters of an established connection and its end.
import type { Logger } from 'pino';
import { chooseBackend, type ListenerSnapshot } from '../routing/routing.ts';
import type { BackendRuntime } from '../routing/backend-runtime.ts';
import { connectErrorReason, isLocalResourceError, type LocalRefusal } from '../stats/stats.ts';
import type { TakeOutCause } from '../../counters/snapshot.ts';
import type { FlowLifetimes } from '../flows/lifetimes.ts';
import type { LiveFlow } from '../flows/live-flow.ts';
import type { ListenerContext } from '../routing/listener.ts';
import type { ReadingPair } from '../resources/idle-read-buffers.ts';
import { RecoveryProbes } from './recovery-probe.ts';

export class ConnectAttempts {
  readonly #context: ListenerContext;
  readonly #lifetimes: FlowLifetimes;
  readonly #log: Logger;
  readonly #probes: RecoveryProbes;

  constructor(context: ListenerContext, lifetimes: FlowLifetimes, log: Logger, snapshot: () => ListenerSnapshot) {
    this.#context = context;
    this.#lifetimes = lifetimes;
    this.#log = log;
    this.#probes = new RecoveryProbes(snapshot);
  }

  /** The listener is draining: no more recovery probes. */
  stop(): void {
    this.#probes.stop();
  }

  /**
   * Chooses the next backend to try, or undefined (counted) when the client is to be reset: none is
   * left, or the pick (a failover's too) is a backend with `refuse: true`, whose share is refused
   * rather than given to the others (Gateway API: rejections must respect weight). No connect is
   * tried to it, so passive health never sees it fail.
   */
  pick(snapshot: ListenerSnapshot, tried: Set<number>, clientHash: number): BackendRuntime | undefined {
    const index = chooseBackend(snapshot, tried, Date.now(), clientHash, this.#lifetimes.steering);
    if (index === -1) {
      snapshot.stats.refused.no_backend++;
      return undefined;
    }
    tried.add(index);
    const backend = snapshot.backends[index]!;
    if (backend.config.refuse === true) {
      snapshot.stats.refused.backend_refused++;
      backend.stats.refused++;
      return undefined;
    }
    return backend;
  }

  /**
   * A connect to `backend` failed: true when the next backend is to be tried. A failure of this
   * process's own (not the backend's fault, and the next would fail the same way) refuses the client.
   */
  failed(err: NodeJS.ErrnoException, backend: BackendRuntime, snapshot: ListenerSnapshot, refuse: () => void): boolean {
    if (isLocalResourceError(err)) {
      this.refuseLocally(refuse, snapshot, 'local_error', err);
      return false;
    }
    const reason = connectErrorReason(err);
    backend.stats.connectErrors[reason]++;
    this.recordFailure(
      backend,
      snapshot,
      `connect failure (${reason})`,
      err.message,
      reason === 'reset' ? 'reset' : 'connect',
    );
    return true;
  }

  established(backend: BackendRuntime, started: number): void {
    const { stats } = backend;
    stats.connectDuration.observe((performance.now() - started) / 1000);
    stats.connections++;
    stats.active++;
  }

  /** Registers an established connection for its idle read buffers and lifetime policies. */
  joined(connection: LiveFlow & ReadingPair): void {
    this.#context.idleReadBuffers.add(connection);
    this.#lifetimes.add(connection);
  }

  flowClosed(connection: LiveFlow & ReadingPair, backend: BackendRuntime, started: number): void {
    this.#context.idleReadBuffers.delete(connection);
    this.#lifetimes.delete(connection);
    backend.stats.active--;
    backend.stats.sessionDuration.observe((performance.now() - started) / 1000);
  }

  /** `reset` resets the client's connection. */
  refuseLocally(
    reset: () => void,
    snapshot: ListenerSnapshot,
    reason: LocalRefusal,
    err?: NodeJS.ErrnoException,
  ): void {
    snapshot.stats.refused[reason]++;
    this.#context.onLocalRefusal(reason, err);
    reset();
  }

  /** Passive health (maxFails within failTimeoutMs); logs when the backend is taken out. */
  recordFailure(
    backend: BackendRuntime,
    snapshot: ListenerSnapshot,
    what: string,
    detail: string,
    cause: TakeOutCause,
  ): void {
    const { config } = snapshot;
    const now = Date.now();
    if (backend.health.recordFailure(now, config.maxFails, config.failTimeoutMs)) {
      backend.stats.takenOut(now, config.failTimeoutMs, cause);
      this.#probes.start(backend);
      this.#log.warn(
        { backend: backend.config.name, address: `${backend.config.host}:${backend.config.port}`, err: detail },
        `backend marked failed for ${config.failTimeoutMs} ms after ${what}${(config.probeIntervalMs ?? 0) > 0 ? `, or until a recovery probe (every ${config.probeIntervalMs} ms) finds it serving` : ''}`,
      );
    }
  }
}

export function connectTimeout(ms: number): NodeJS.ErrnoException {
  return Object.assign(new Error(`connect timed out after ${ms} ms`), { code: 'ETIMEDOUT' });
}
