// A listener's routing snapshot: its config, its backends with their live health and counters, and
// the picker. Immutable once built; a reload builds a new one and swaps it in whole, so a
// connection sees one consistent config from accept to close.
import type { BackendConfig, ListenerConfig } from '../config/types.ts';
import { createPicker, type Picker } from './balancer.ts';
import type { BackendHealth } from './passive-health.ts';
import type { BackendStats, ListenerStats } from './stats.ts';

export interface BackendRuntime {
  readonly config: BackendConfig;
  readonly health: BackendHealth;
  readonly stats: BackendStats;
}

export interface ListenerSnapshot {
  readonly config: ListenerConfig;
  readonly backends: readonly BackendRuntime[];
  readonly stats: ListenerStats;
  readonly picker: Picker;
}

export function buildSnapshot(
  config: ListenerConfig,
  stats: ListenerStats,
  runtimeOf: (backend: BackendConfig) => Omit<BackendRuntime, 'config'>,
): ListenerSnapshot {
  return {
    config,
    stats,
    backends: config.backends.map((backend) => ({ config: backend, ...runtimeOf(backend) })),
    picker: createPicker(config.balance, config.backends.map((b) => b.weight)),
  };
}

/**
 * The backend for a new connection: weighted among the healthy ones not yet tried. When every
 * weighted backend is marked failed, try them anyway — a certain refusal is worse than a likely
 * one, and a recovered backend is found at once rather than after fail_timeout. Weight-0
 * backends are never chosen, not even for failover: weight 0 means "no traffic".
 */
export function chooseBackend(snapshot: ListenerSnapshot, tried: ReadonlySet<number> | null, now: number): number {
  const untried = (i: number) => tried === null || !tried.has(i);
  const healthy = snapshot.picker.pick((i) => untried(i) && snapshot.backends[i]!.health.isAvailable(now));
  return healthy !== -1 ? healthy : snapshot.picker.pick(untried);
}
