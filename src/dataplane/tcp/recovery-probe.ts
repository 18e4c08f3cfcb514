// Recovery probes (a listener's probeIntervalMs): while passive health holds a backend out, a
// connection of the proxy's own is tried to it this often, so a backend that came back serves again
// at once rather than after failTimeoutMs, and what it was offered meanwhile is judged by how it
// was doing (a failed probe: those offers failed; a good one: they are cleared; see
// stats/held-out.ts for when failed ones count against it). A probe
// carries no client's bytes: it connects, waits a moment for the reset a backend that refuses at
// accept sends, and closes.
import net from 'node:net';
import type { BackendRuntime } from '../routing/backend-runtime.ts';
import type { ListenerSnapshot } from '../routing/routing.ts';

/** How long a connected probe waits for the reset of a backend that accepts and refuses at once. */
const SETTLE_MS = 100;

/** Whether `host:port` takes a connection and does not reset it within SETTLE_MS. */
export function probeTcp(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    let settled = false;
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      // A first byte, or nothing for SETTLE_MS: it serves. A reset first: it refused.
      socket.once('data', () => done(true));
      setTimeout(() => done(true), SETTLE_MS).unref();
    });
    socket.once('error', () => done(false));
    socket.resume();
  });
}

/** The probes of one listener's held-out backends, one at a time per backend. */
export class RecoveryProbes {
  readonly #snapshot: () => ListenerSnapshot;
  readonly #probe: typeof probeTcp;
  readonly #timers = new Map<BackendRuntime['health'], NodeJS.Timeout>();
  #stopped = false;

  constructor(snapshot: () => ListenerSnapshot, probe: typeof probeTcp = probeTcp) {
    this.#snapshot = snapshot;
    this.#probe = probe;
  }

  /** Passive health just took `backend` out: probe it every probeIntervalMs until it is back (or gone from the config). */
  start(backend: BackendRuntime): void {
    const interval = this.#snapshot().config.probeIntervalMs ?? 0;
    if (interval <= 0 || this.#stopped || this.#timers.has(backend.health)) return;
    this.#schedule(backend.health, interval);
  }

  stop(): void {
    this.#stopped = true;
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }

  #schedule(health: BackendRuntime['health'], interval: number): void {
    const timer = setTimeout(() => void this.#run(health), interval);
    timer.unref();
    this.#timers.set(health, timer);
  }

  async #run(health: BackendRuntime['health']): Promise<void> {
    const snapshot = this.#snapshot();
    // The backend as the running config has it (a reload keeps its health, and may change its address).
    const backend = snapshot.backends.find((candidate) => candidate.health === health);
    const interval = snapshot.config.probeIntervalMs ?? 0;
    if (this.#stopped || backend === undefined || interval <= 0 || health.isAvailable(Date.now())) {
      this.#timers.delete(health);
      return;
    }
    const ok = await this.#probe(backend.config.host, backend.config.port, snapshot.config.connectTimeoutMs);
    if (this.#stopped) return;
    if (probed(backend, ok, Date.now(), snapshot.config.failTimeoutMs)) this.#schedule(health, interval);
    else this.#timers.delete(health);
  }
}

/**
 * What a probe's result does: a success brings the backend back (what it was offered meanwhile is
 * cleared); a failure keeps it out `failTimeoutMs` more (and those offers failed).
 * Whether to probe again. Pure but for the backend's own state: the simulation of the analysis
 * (bench/analysis.ts) runs it too.
 */
export function probed(
  backend: Pick<BackendRuntime, 'health' | 'stats'>,
  ok: boolean,
  now: number,
  failTimeoutMs: number,
): boolean {
  if (ok) {
    backend.health.recordSuccess();
    backend.stats.probeSucceeded(now);
    return false;
  }
  backend.health.extendTakeOut(now, failTimeoutMs);
  backend.stats.probeFailed(now, failTimeoutMs);
  return true;
}
