// A listener's routing snapshot: its config, its backends with their live health and counters, and
// the picker. Immutable once built; a reload builds a new one and swaps it in whole, so a
// connection sees one consistent config from accept to close.
import type { BackendConfig, ListenerConfig } from '../../config/types.ts';
import { ClientAffinity } from '../choice/affinity.ts';
import { carryOverPicker, createPicker, type Picker } from '../choice/balancer.ts';
import type { Steering } from '../choice/rebalance.ts';
import { MirrorRoute } from './mirror-route.ts';
import type { ListenerStats } from '../stats/stats.ts';
import type { BackendRuntime } from './backend-runtime.ts';

export interface ListenerSnapshot {
  readonly config: ListenerConfig;
  readonly backends: readonly BackendRuntime[];
  readonly stats: ListenerStats;
  readonly picker: Picker;
  /**
   * A second rotation over the same weights, health aside: which backend the weights alone offer a
   * new connection or flow, so that what a held-out backend was offered is counted (noteOffer).
   */
  readonly offers: Picker;
  /** null: the listener mirrors nothing (its config has no `mirror`, or at 0 %). */
  readonly mirror: MirrorRoute | null;
  /** Some backend has `refuse: true` (its share of new connections and flows is refused). */
  readonly refuses: boolean;
}

/** `previous`: the listener's snapshot so far, whose balancing state the new one continues. */
export function buildSnapshot(
  config: ListenerConfig,
  stats: ListenerStats,
  runtimeOf: (backend: BackendConfig) => Omit<BackendRuntime, 'config'>,
  previous?: ListenerSnapshot,
): ListenerSnapshot {
  const backends = config.backends.map((backend) => ({ config: backend, ...runtimeOf(backend) }));
  return {
    config,
    stats,
    backends,
    picker: nextPicker(config, previous?.config, previous?.picker),
    offers: nextPicker(config, previous?.config, previous?.offers),
    mirror: mirrorRoute(config, backends),
    refuses: config.backends.some((backend) => backend.refuse === true),
  };
}

function mirrorRoute(config: ListenerConfig, backends: readonly BackendRuntime[]): MirrorRoute | null {
  const { mirror } = config;
  const backend =
    mirror === undefined || mirror.percent === 0
      ? undefined
      : backends.find((candidate) => candidate.config.name === mirror.to);
  return mirror === undefined || backend === undefined ? null : new MirrorRoute(mirror, backend);
}

/** The same picker while the strategy and the backends' names and weights stay; else one carried over. */
function nextPicker(
  config: ListenerConfig,
  previousConfig: ListenerConfig | undefined,
  previous: Picker | undefined,
): Picker {
  const weights = config.backends.map((b) => b.weight);
  // Stateless: the same answer for a client on every replica, after every restart.
  if (config.affinity === 'clientIP')
    return new ClientAffinity(
      weights,
      config.backends.map((b) => b.name),
    );
  if (
    previousConfig === undefined ||
    previous === undefined ||
    previousConfig.balance !== config.balance ||
    previous instanceof ClientAffinity
  ) {
    return createPicker(config.balance, weights);
  }
  const before = previousConfig.backends;
  const unchanged =
    before.length === config.backends.length &&
    before.every((b, i) => b.name === config.backends[i]!.name && b.weight === weights[i]);
  if (unchanged) return previous;
  const names = (backends: readonly BackendConfig[]) => backends.map((b) => b.name);
  return carryOverPicker(previous, names(before), config.balance, weights, names(config.backends));
}

/**
 * The backend for a new connection: weighted among the healthy ones not yet tried. When every
 * weighted backend is marked failed, try them anyway — a certain refusal is worse than a likely
 * one, and a recovered backend is found at once rather than after fail_timeout. Weight-0
 * backends are never chosen, not even for failover: weight 0 means "no traffic". `clientHash`
 * matters with client affinity only; `steering`, after a rebalance (flows/lifetimes.ts).
 */
export function chooseBackend(
  snapshot: ListenerSnapshot,
  tried: ReadonlySet<number> | null,
  now: number,
  clientHash: number,
  steering: Steering | null,
): number {
  if (tried === null || tried.size === 0) noteOffer(snapshot, now, clientHash);
  const untried = (i: number) => tried === null || !tried.has(i);
  const healthyUntried = (i: number) => untried(i) && snapshot.backends[i]!.health.isAvailable(now);
  // After a rebalance ended connections, their replacements go where the new split lacks them.
  // Steering was worked out for the weights of its rebalance; a backend at weight 0 now takes nothing.
  const owed =
    steering === null ? -1 : steering.take((i) => healthyUntried(i) && snapshot.backends[i]!.config.weight > 0);
  if (owed !== -1) return owed;
  // A refusing backend is never held out: while every serving one left is, the healthy pick would
  // hand it their shares too. Then the weights alone place the connection, as when all are out.
  if (snapshot.refuses && !servingLeft(snapshot, healthyUntried)) return snapshot.picker.pick(untried, clientHash);
  const healthy = snapshot.picker.pick(healthyUntried, clientHash);
  return healthy !== -1 ? healthy : snapshot.picker.pick(untried, clientHash);
}

/** Whether a weighted backend without `refuse: true` passes `healthyUntried`. */
function servingLeft(snapshot: ListenerSnapshot, healthyUntried: (i: number) => boolean): boolean {
  return snapshot.backends.some(
    (backend, i) => backend.config.refuse !== true && backend.config.weight > 0 && healthyUntried(i),
  );
}

/**
 * For a new connection or flow while passive health holds a backend out: the backend the weights
 * alone offer it, counted as offered-while-out when it is the held-out one. The traffic a failing
 * canary did not serve is evidence against it (the analysis counts it as attempts it failed).
 * Costs nothing while every backend is in rotation.
 */
function noteOffer(snapshot: ListenerSnapshot, now: number, clientHash: number): void {
  // Every backend in: nothing is held out. No weighted one in: they are all tried anyway, so what is offered is served.
  let someOut = false;
  let weightedIn = false;
  for (const backend of snapshot.backends) {
    if (!backend.health.isAvailable(now)) someOut = true;
    else if (backend.config.weight > 0 && backend.config.refuse !== true) weightedIn = true;
  }
  if (!someOut || !weightedIn) return;
  const offered = snapshot.offers.pick((i) => snapshot.backends[i]!.config.weight > 0, clientHash);
  const backend = offered === -1 ? undefined : snapshot.backends[offered]!;
  if (backend !== undefined && !backend.health.isAvailable(now)) backend.stats.heldOut.offered();
}
