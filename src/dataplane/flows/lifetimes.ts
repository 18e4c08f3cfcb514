// The lifetime policies of a listener's live connections and sessions: the TCP idle timeout, and
// the opt-in maxConnectionAgeMs, rebalance on a weight change (rebalanceWindowMs) and drain of a
// removed backend (drainTimeoutMs). Nothing here runs per byte or per datagram: one timer per
// listener looks at the flows, only while it has some. (A timer per socket, refreshed on every read
// and write, is what it replaces for the idle timeout.) What to end is decided by the pure functions
// of rebalance.ts and affinity.ts; how a flow ends gracefully is its listener's business.
import { ClientAffinity } from '../choice/affinity.ts';
import { jitteredAge, shortfalls, spreadOver, Steering, surplusPerBackend } from '../choice/rebalance.ts';
import type { BackendRuntime } from '../routing/backend-runtime.ts';
import type { ListenerSnapshot } from '../routing/routing.ts';
import type { LiveFlow } from './live-flow.ts';

interface RebalanceTally {
  readonly live: number[];
  awaiting: number;
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
    // A new flow has nothing scheduled: without a policy in force there is nothing to sweep for
    // (and looking for scheduled ends would cost a scan of every flow per new one).
    if (this.#timer === undefined && this.#periods().length > 0) this.#ensureSweep();
  }

  delete(flow: LiveFlow): void {
    this.flows.delete(flow);
  }

  /** While a rebalance is owed new connections: the backend a new one goes to, else null. */
  get steering(): Steering | null {
    if (this.#steering !== null && this.#steering.pending === 0) this.#steering = null;
    return this.#steering;
  }

  /**
   * The listener's new snapshot: schedules the drains and the rebalance it calls for. A rebalance
   * under way is dropped when the split moves again (the new one replaces it) or the window is
   * turned off; its steering, which names backends by position, also when they are only reordered.
   */
  update(next: ListenerSnapshot, now = performance.now()): void {
    const previous = this.#snapshot;
    this.#snapshot = next;
    this.#scheduleDrains(next, now);
    const windowMs = next.config.rebalanceWindowMs ?? 0;
    const moved = splitOf(previous, true) !== splitOf(next, true);
    if (moved || windowMs === 0) this.#cancelRebalance();
    else if (splitOf(previous, false) !== splitOf(next, false)) this.#steering = null;
    if (moved && windowMs > 0) this.#rebalance(next, now);
    this.#ensureSweep();
  }

  /**
   * The listener is draining: its own deadline ends what is left, and no policy ends anything more
   * — but an idle connection still times out, or a shutdown would wait out the whole grace for it.
   */
  stop(): void {
    this.#stopped = true;
    this.#steering = null;
    this.#stopSweep();
    this.#ensureSweep();
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
  #cancelRebalance(): void {
    this.#steering = null;
    for (const flow of this.flows) if (!flow.ending && flow.endReason === 'rebalance') flow.endAt = Infinity;
  }

  #rebalance(next: ListenerSnapshot, now: number): void {
    const weights = servedWeights(next);
    const byBackend = this.#settledByBackend(next);
    let chosen: LiveFlow[];
    if (next.config.affinity === 'clientIP') {
      const affinity = new ClientAffinity(
        weights,
        next.backends.map((backend) => backend.config.name),
      );
      const at = Date.now();
      // A client on another backend only while its own is down is where it can be: ending it would
      // bring it back. With every weight 0 no client is assigned anywhere, and nothing moves.
      const belongsElsewhere = (flow: LiveFlow, i: number) => {
        const assigned = affinity.assigned(flow.clientHash());
        return assigned !== i && assigned !== -1 && next.backends[assigned]!.health.isAvailable(at);
      };
      chosen = byBackend.flatMap((flows, i) => flows.filter((flow) => belongsElsewhere(flow, i)));
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

  /** The flows neither ending nor draining, by backend in the snapshot's order (oldest first). */
  #settledByBackend(snapshot: ListenerSnapshot): LiveFlow[][] {
    const indexByKey = new Map(snapshot.backends.map((backend, i) => [backendKey(backend), i]));
    const byBackend: LiveFlow[][] = snapshot.backends.map(() => []);
    for (const flow of this.flows) {
      if (flow.ending || (flow.endReason === 'drain' && flow.endAt !== Infinity)) continue;
      const index = indexByKey.get(backendKey(flow.backend));
      if (index !== undefined) byBackend[index]!.push(flow);
    }
    return byBackend;
  }

  /**
   * The count a rebalance end is checked against: the settled flows by backend, and the flows ended
   * whose clients have not come back yet (owed replacements beyond the ends still scheduled).
   */
  #tally(): RebalanceTally {
    const live = this.#settledByBackend(this.#snapshot).map((flows) => flows.length);
    let scheduled = 0;
    for (const flow of this.flows)
      if (!flow.ending && flow.endReason === 'rebalance' && flow.endAt !== Infinity) scheduled++;
    return { live, awaiting: Math.max(0, (this.steering?.pending ?? 0) - scheduled) };
  }

  /**
   * Whether a rebalance end that fell due is still needed: flows close by themselves meanwhile, and
   * ending this one must not take its backend below its share. (With affinity the flow's client
   * belongs elsewhere whatever the counts.) The tally is counted once per sweep and kept up to date.
   */
  #stillSurplus(flow: LiveFlow, tally: RebalanceTally): boolean {
    const snapshot = this.#snapshot;
    if (snapshot.config.affinity === 'clientIP') return true;
    const index = snapshot.backends.findIndex((backend) => backendKey(backend) === backendKey(flow.backend));
    if (index === -1) return false;
    const weights = servedWeights(snapshot);
    const total = tally.live.reduce((sum, count) => sum + count, tally.awaiting);
    if (surplusPerBackend(tally.live, weights, total)[index]! === 0) return false;
    tally.live[index]!--;
    tally.awaiting++;
    return true;
  }

  /** Runs the timer at the pace the shortest policy needs, or not at all. */
  #ensureSweep(): void {
    const periods = this.#periods();
    if (this.flows.size === 0 || (periods.length === 0 && (this.#stopped || !this.#anyScheduled())))
      return this.#stopSweep();
    const everyMs = Math.min(
      MAX_SWEEP_MS,
      Math.max(MIN_SWEEP_MS, Math.floor(Math.min(...periods, MAX_SWEEP_MS * SWEEPS_PER_PERIOD) / SWEEPS_PER_PERIOD)),
    );
    if (this.#timer !== undefined && this.#timerMs === everyMs) return;
    clearInterval(this.#timer);
    this.#timerMs = everyMs;
    this.#timer = setInterval(() => this.#sweep(), everyMs);
    this.#timer.unref();
  }

  /** The periods of the policies in force, in ms: once stopped, the idle timeout's alone. */
  #periods(): number[] {
    const { idleTimeoutMs, maxConnectionAgeMs = 0, rebalanceWindowMs = 0, drainTimeoutMs = 0 } = this.#snapshot.config;
    const idle = this.#idle ? idleTimeoutMs : 0;
    return (this.#stopped ? [idle] : [idle, maxConnectionAgeMs, rebalanceWindowMs, drainTimeoutMs]).filter(
      (ms) => ms > 0,
    );
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
    // Counted when a rebalance end first falls due in this sweep.
    let tally: RebalanceTally | undefined;
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
      if (flow.ending || this.#stopped) continue;
      if (flow.endAt <= now) {
        if (flow.endReason === 'rebalance' && !this.#stillSurplus(flow, (tally ??= this.#tally()))) {
          // Not needed any more, and neither is the replacement it was owed.
          flow.endAt = Infinity;
          this.#steering?.forgo();
          continue;
        }
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

/**
 * The weights a rebalance splits live flows by: a backend with `refuse: true` counts as weight 0,
 * since its share is of new connections only — ending live flows to have them refused would not
 * serve its weight, only cut clients.
 */
function servedWeights(snapshot: ListenerSnapshot): number[] {
  return snapshot.backends.map((backend) => (backend.config.refuse === true ? 0 : backend.config.weight));
}

/** A backend is the same across reloads while its name and address are. */
function backendKey(backend: BackendRuntime): string {
  return `${backend.config.name}|${backend.config.host}|${backend.config.port}`;
}

/** The backends and their weights as one string; `sorted`, it ignores their order in the config. */
function splitOf(snapshot: ListenerSnapshot, sorted: boolean): string {
  const entries = snapshot.backends.map((backend) => `${backendKey(backend)}=${backend.config.weight}`);
  return (sorted ? entries.sort() : entries).join(',');
}
