// A backend as a listener's routing snapshot holds it: its config, live health and counters. A type
// of its own, so that the snapshot (routing.ts) and the mirror route it holds (mirror-route.ts)
// both name it without importing each other.
import type { BackendConfig } from '../../config/types.ts';
import type { BackendHealth } from '../choice/passive-health.ts';
import type { BackendStats } from '../stats/stats.ts';

export interface BackendRuntime {
  readonly config: BackendConfig;
  readonly health: BackendHealth;
  readonly stats: BackendStats;
}
