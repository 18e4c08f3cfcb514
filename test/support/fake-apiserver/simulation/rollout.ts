/**
 * The Deployment controller's rolling-update arithmetic (pkg/controller/deployment/util and
 * rolling.go), pure: how far maxSurge lets the new ReplicaSet grow, and how far maxUnavailable
 * lets the old ones shrink given what is available now. The controller module applies the answers.
 */

/** What the arithmetic needs of a ReplicaSet: its `spec.replicas` and `status.availableReplicas`. */
export interface ReplicaSetCounts {
  readonly name: string;
  readonly replicas: number;
  readonly available: number;
}

export interface RollingUpdateParameters {
  readonly maxSurge?: number | string;
  readonly maxUnavailable?: number | string;
}

const DEFAULT_FENCEPOST = '25%';

/**
 * intstr.GetScaledValueFromIntOrPercent: an int as is, a percentage of `total` rounded up or down.
 * A malformed value counts as the 25 % default (the real API server would have refused it).
 */
export function scaledValue(value: number | string | undefined, total: number, roundUp: boolean): number {
  if (typeof value === 'number') return value;
  const percent = /^(\d+)%$/.exec(value ?? DEFAULT_FENCEPOST) ?? /^(\d+)%$/.exec(DEFAULT_FENCEPOST)!;
  const exact = (Number(percent[1]) * total) / 100;
  return roundUp ? Math.ceil(exact) : Math.floor(exact);
}

/** deploymentutil.ResolveFenceposts: surge rounds up, unavailability down; never both 0. */
export function resolveFenceposts(
  params: RollingUpdateParameters | undefined,
  replicas: number,
): { maxSurge: number; maxUnavailable: number } {
  const maxSurge = scaledValue(params?.maxSurge ?? DEFAULT_FENCEPOST, replicas, true);
  const maxUnavailable = scaledValue(params?.maxUnavailable ?? DEFAULT_FENCEPOST, replicas, false);
  return { maxSurge, maxUnavailable: maxSurge === 0 && maxUnavailable === 0 ? 1 : maxUnavailable };
}

/** deploymentutil.MaxUnavailable: what the Available condition and scale-downs allow (≤ replicas). */
export function maxUnavailable(
  strategyType: string,
  params: RollingUpdateParameters | undefined,
  replicas: number,
): number {
  if (strategyType !== 'RollingUpdate' || replicas === 0) return 0;
  return Math.min(resolveFenceposts(params, replicas).maxUnavailable, replicas);
}

const sum = (sets: readonly ReplicaSetCounts[], field: 'replicas' | 'available') =>
  sets.reduce((total, rs) => total + rs[field], 0);

/** deploymentutil.NewRSNewReplicas for RollingUpdate: the new ReplicaSet's size, surge permitting. */
export function newReplicaSetReplicas(
  replicas: number,
  params: RollingUpdateParameters | undefined,
  newRs: ReplicaSetCounts,
  all: readonly ReplicaSetCounts[],
): number {
  const maxTotal = replicas + resolveFenceposts(params, replicas).maxSurge;
  const current = sum(all, 'replicas');
  if (current >= maxTotal) return newRs.replicas;
  return newRs.replicas + Math.max(0, Math.min(maxTotal - current, replicas - newRs.replicas));
}

/**
 * rolling.go reconcileOldReplicaSets: the new sizes of old ReplicaSets (oldest first) that may
 * shrink now. First their unavailable pods go (cleanupUnhealthyReplicas), then available ones, as
 * long as at least `replicas - maxUnavailable` pods stay available. Returns only the changed ones.
 */
export function oldReplicaSetScaleDowns(
  replicas: number,
  maxUnavailableCount: number,
  newRs: ReplicaSetCounts,
  oldest: readonly ReplicaSetCounts[],
): Map<string, number> {
  const sizes = new Map(oldest.map((rs) => [rs.name, rs.replicas]));
  if (sum(oldest, 'replicas') === 0) return new Map();
  const minAvailable = replicas - maxUnavailableCount;
  const newUnavailable = newRs.replicas - newRs.available;
  const maxScaledDown = sum(oldest, 'replicas') + newRs.replicas - minAvailable - newUnavailable;
  if (maxScaledDown <= 0) return new Map();

  let cleaned = 0;
  for (const rs of oldest) {
    if (cleaned >= maxScaledDown) break;
    const unhealthy = rs.replicas - rs.available;
    if (rs.replicas === 0 || unhealthy <= 0) continue;
    const down = Math.min(maxScaledDown - cleaned, unhealthy);
    sizes.set(rs.name, rs.replicas - down);
    cleaned += down;
  }

  // Only available pods are left to remove; availability itself did not change above.
  const available = sum(oldest, 'available') + newRs.available;
  let toRemove = available - minAvailable;
  for (const rs of oldest) {
    const size = sizes.get(rs.name)!;
    if (toRemove <= 0) break;
    if (size === 0) continue;
    const down = Math.min(size, toRemove);
    sizes.set(rs.name, size - down);
    toRemove -= down;
  }
  return new Map([...sizes].filter(([name, size]) => oldest.find((rs) => rs.name === name)!.replicas !== size));
}
