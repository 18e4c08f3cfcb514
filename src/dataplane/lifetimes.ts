// The lifetime policies of a listener's live connections and sessions: the TCP idle timeout, and
// the opt-in maxConnectionAgeMs, rebalance on a weight change (rebalanceWindowMs) and drain of a
// removed backend (drainTimeoutMs). Nothing here runs per byte or per datagram: one timer per
// listener looks at the flows, only while it has some. (A timer per socket, refreshed on every read
// and write, is what it replaces for the idle timeout.) What to end is decided by the pure functions
// of rebalance.ts and affinity.ts; how a flow ends gracefully is its listener's business.
import { ClientAffinity } from './affinity.ts';
import { jitteredAge, shortfalls, spreadOver, Steering, surplusPerBackend } from './rebalance.ts';
import type { BackendRuntime, ListenerSnapshot } from './routing.ts';
import type { EndReason } from './stats.ts';

/** A TCP connection or a UDP session, as the lifetime policies see it. */
export abstract class LiveFlow {
  readonly backend: BackendRuntime;
  /** performance.now() when it was established. */
  readonly startedAt: number;
  /** Its place in the max-age jitter, in [0, 1); drawn when first needed. */
  ageJitter = -1;
  /** performance.now() at which a rebalance or a drain ends it; Infinity: not scheduled. */
  endAt = Infinity;
  endReason: EndReason = 'rebalance';
  /** Set once an end has begun; the flow leaves its set when it is closed. */
  ending = false;
  /** activity() at the last sweep, and when it last changed (performance.now()). */
  seenActivity = -1;
  activeAt: number;

  constructor(backend: BackendRuntime, startedAt: number) {
    this.backend = backend;
    this.startedAt = startedAt;
    this.activeAt = startedAt;
  }

  /** clientAddressHash of its client (affinity.ts). */
  abstract clientHash(): number;

  /** A count that grows with traffic either way (bytes read by its sockets); for the idle timeout. */
  activity(): number {
    return 0;
  }

  /** Idle past the listener's idleTimeoutMs: closed at once, as an idle timer would. */
  expireIdle(): void {}

  /** Begins a graceful end, once; counted by reason. */
  end(reason: EndReason): void {
    if (this.ending) return;
    this.ending = true;
    this.backend.stats.ended[reason]++;
    this.endGracefully();
  }

  /** Ends without losing what was already read: the subclass knows how for its protocol. */
  protected abstract endGracefully(): void;
}

const MIN_SWEEP_MS = 10;
const MAX_SWEEP_MS = 1_000;
/** A policy's period is looked at about this many times: max age to within 5 %. */
const SWEEPS_PER_PERIOD = 20;

/** The live flows of one listener and the timer that applies its lifetime policies to them. */
export class FlowLifetimes {
  /** The listener adds a flow once established and deletes it once closed. */
  readonly flows = new Set<LiveFlow>();
  #snapshot: ListenerSnapshot;
  #timer: NodeJS.Timeout | undefined;
  #timerMs = 0;
  /** Replacements owed to the backends below their share after a rebalance; null when none. */
  #steering: Steering | null = null;
  #stopped = false;
  /** Whether the sweep applies idleTimeoutMs (TCP; UDP sessions have a sweep of their own). */
  readonly #idle: boolean;

  constructor(snapshot: ListenerSnapshot, options: { idleTimeout: boolean }) {
    this.#snapshot = snapshot;
    this.#idle = options.idleTimeout;
  }

  add(flow: LiveFlow): void {
    this.flows.add(flow);
    if (this.#timer === undefined) this.#ensureSweep();
  }

  delete(flow: LiveFlow): void {
    this.flows.delete(flow);
  }

  /** While a rebalance is owed new connections: the backend a new one goes to, else null. */
  get steering(): Steering | null {
    if (this.#steering !== null && this.#steering.pending === 0) this.#steering = null;
    return this.#steering;
  }

  /** The listener's new snapshot: schedules the drains and the rebalance it calls for. */
  update(next: ListenerSnapshot, now = performance.now()): void {
    const previous = this.#snapshot;
    this.#snapshot = next;
    this.#scheduleDrains(next, now);
    if ((next.config.rebalanceWindowMs ?? 0) > 0 && splitChanged(previous, next)) this.#rebalance(next, now);
    this.#ensureSweep();
  }

  /** The listener is draining: its own deadline ends what is left. */
  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Flows of a backend no longer in the config end drainTimeoutMs after it left; a backend that is back keeps its flows. */
  #scheduleDrains(next: ListenerSnapshot, now: number): void {
    const kept = new Set(next.backends.map((backend) => backendKey(backend)));
    const drainMs = next.config.drainTimeoutMs ?? 0;
    for (const flow of this.flows) {
      if (flow.ending) continue;
      const draining = flow.endReason === 'drain' && flow.endAt !== Infinity;
      if (kept.has(backendKey(flow.backend))) {
        if (draining) flow.endAt = Infinity;
      } else if (drainMs > 0 && !draining) {
        flow.endAt = now + drainMs;
        flow.endReason = 'drain';
      }
    }
  }

  /**
   * Ends, spread over the window, just the flows the new split does not need where they are: with
   * affinity those whose client now belongs elsewhere; otherwise each backend's surplus, oldest
   * first, their replacements steered to the backends below their share. A rebalance replaces any
   * earlier one still under way.
   */
  #rebalance(next: ListenerSnapshot, now: number): void {
    this.#steering = null;
    const indexByKey = new Map(next.backends.map((backend, i) => [backendKey(backend), i]));
    const weights = next.backends.map((backend) => backend.config.weight);
    const byBackend: LiveFlow[][] = weights.map(() => []);
    for (const flow of this.flows) {
      if (flow.ending) continue;
      if (flow.endReason === 'rebalance') flow.endAt = Infinity;
      if (flow.endAt !== Infinity) continue; // draining
      const index = indexByKey.get(backendKey(flow.backend));
      if (index !== undefined) byBackend[index]!.push(flow);
    }
    let chosen: LiveFlow[];
    if (next.config.affinity === 'clientIP') {
      const affinity = new ClientAffinity(weights, next.backends.map((backend) => backend.config.name));
      chosen = byBackend.flatMap((flows, i) => flows.filter((flow) => affinity.assigned(flow.clientHash()) !== i));
    } else {
      const live = byBackend.map((flows) => flows.length);
      const surplus = surplusPerBackend(live, weights);
      // A Set keeps insertion order: the oldest flows come first.
      chosen = byBackend.flatMap((flows, i) => flows.slice(0, surplus[i]));
      if (chosen.length > 0) this.#steering = new Steering(shortfalls(live, weights, chosen.length));
    }
    const offsets = spreadOver(chosen.length, next.config.rebalanceWindowMs ?? 0);
    chosen.forEach((flow, i) => {
      flow.endAt = now + offsets[i]!;
      flow.endReason = 'rebalance';
    });
  }

  /** Runs the timer at the pace the shortest policy needs, or not at all. */
  #ensureSweep(): void {
    if (this.#stopped) return;
    const periods = this.#periods();
    if (this.flows.size === 0 || (periods.length === 0 && !this.#anyScheduled())) return this.#stopSweep();
    const everyMs = Math.min(MAX_SWEEP_MS, Math.max(MIN_SWEEP_MS, Math.floor(Math.min(...periods, MAX_SWEEP_MS * SWEEPS_PER_PERIOD) / SWEEPS_PER_PERIOD)));
    if (this.#timer !== undefined && this.#timerMs === everyMs) return;
    clearInterval(this.#timer);
    this.#timerMs = everyMs;
    this.#timer = setInterval(() => this.#sweep(), everyMs);
    this.#timer.unref();
  }

  /** The periods of the policies in force, in ms. */
  #periods(): number[] {
    const { idleTimeoutMs, maxConnectionAgeMs = 0, rebalanceWindowMs = 0, drainTimeoutMs = 0 } = this.#snapshot.config;
    return [this.#idle ? idleTimeoutMs : 0, maxConnectionAgeMs, rebalanceWindowMs, drainTimeoutMs].filter((ms) => ms > 0);
  }

  #stopSweep(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #anyScheduled(): boolean {
    for (const flow of this.flows) if (!flow.ending && flow.endAt !== Infinity) return true;
    return false;
  }

  #sweep(): void {
    const now = performance.now();
    const maxAgeMs = this.#snapshot.config.maxConnectionAgeMs ?? 0;
    const idleMs = this.#idle ? this.#snapshot.config.idleTimeoutMs : 0;
    let scheduled = false;
    for (const flow of this.flows) {
      if (idleMs > 0) {
        const activity = flow.activity();
        if (activity !== flow.seenActivity) {
          flow.seenActivity = activity;
          flow.activeAt = now;
        } else if (now - flow.activeAt >= idleMs) {
          flow.expireIdle();
          continue;
        }
      }
      if (flow.ending) continue;
      if (flow.endAt <= now) {
        flow.end(flow.endReason);
        continue;
      }
      if (flow.endAt !== Infinity) scheduled = true;
      if (maxAgeMs > 0) {
        if (flow.ageJitter < 0) flow.ageJitter = Math.random();
        if (now - flow.startedAt >= jitteredAge(maxAgeMs, flow.ageJitter)) flow.end('max_age');
      }
    }
    if (this.flows.size === 0 || (!scheduled && this.#periods().length === 0)) this.#stopSweep();
  }
}

/** A backend is the same across reloads while its name and address are. */
function backendKey(backend: BackendRuntime): string {
  return `${backend.config.name}|${backend.config.host}|${backend.config.port}`;
}

/** Whether the backends or their weights differ. */
function splitChanged(previous: ListenerSnapshot, next: ListenerSnapshot): boolean {
  const split = (snapshot: ListenerSnapshot) => snapshot.backends.map((backend) => `${backendKey(backend)}=${backend.config.weight}`).join(',');
  return split(previous) !== split(next);
}
