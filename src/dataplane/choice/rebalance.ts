// Which live connections a weight change ends, pure: no sockets, no clocks. Weights decide where new
// connections go; a client with long-lived connections (a database pool, gRPC) never makes new
// ones, so its split would never follow. With `rebalanceWindowMs`, the backends holding more than
// their new share give up just the surplus, and the connections that replace them are steered to
// the backends holding less, so the live split lands on the weights without ending one more
// connection than that. With client affinity, the surplus is instead exactly the connections whose
// client the new weights assign elsewhere (see affinity.ts).

/**
 * How many live connections each backend holds beyond its share of `weights`:
 * ⌊live_i − total · w_i / W⌋ where positive, else 0. Ending these (and placing their replacements
 * by `shortfalls`) brings every backend within one connection of its share; never more is ended.
 * `total` is the live connections plus those ended whose replacements are still to come.
 */
export function surplusPerBackend(live: readonly number[], weights: readonly number[], total = sum(live)): number[] {
  const weightSum = sum(weights);
  if (weightSum === 0) return live.map(() => 0);
  // In integers: (live_i · W − total · w_i) / W, so that no rounding error ends one too many.
  return live.map((count, i) => Math.max(0, Math.floor((count * weightSum - total * weights[i]!) / weightSum)));
}

/**
 * Where `moving` connections (the ended surplus) should go: to the backends below their share, in
 * proportion to how far below it they are (largest remainder), never past their share.
 */
export function shortfalls(live: readonly number[], weights: readonly number[], moving: number): number[] {
  const weightSum = sum(weights);
  const total = sum(live);
  if (weightSum === 0 || moving === 0) return live.map(() => 0);
  const below = live.map((count, i) => Math.max(0, (total * weights[i]!) / weightSum - count));
  const belowSum = sum(below);
  if (belowSum === 0) return live.map(() => 0);
  const exact = below.map((gap) => (moving * gap) / belowSum);
  const shares = exact.map(Math.floor);
  let left = moving - sum(shares);
  const byRemainder = exact
    .map((value, i) => [value - shares[i]!, i] as const)
    .sort((a, b) => b[0] - a[0] || a[1] - b[1]);
  for (const [, i] of byRemainder) {
    if (left === 0) break;
    shares[i]!++;
    left--;
  }
  return shares;
}

/**
 * When each of `count` ends falls, as offsets into a window: evenly spread, the last at its end, so
 * the clients of ended connections do not all reconnect at once.
 */
export function spreadOver(count: number, windowMs: number): number[] {
  return Array.from({ length: count }, (_, i) => (windowMs * (i + 1)) / count);
}

/** Up to 10 % past maxConnectionAgeMs, so a pool opened at once does not reconnect at once. */
const MAX_AGE_JITTER = 0.1;

/** The age at which a connection ends: maxAgeMs plus its share (`fraction` in [0, 1)) of the jitter. */
export function jitteredAge(maxAgeMs: number, fraction: number): number {
  return maxAgeMs * (1 + MAX_AGE_JITTER * fraction);
}

/**
 * New connections owed to the backends below their share after a rebalance: each pick of one of
 * them pays one back. Consulted before the balancer while anything is owed; never otherwise.
 */
export class Steering {
  readonly #owed: number[];
  #left: number;

  constructor(owed: readonly number[]) {
    this.#owed = [...owed];
    this.#left = sum(owed);
  }

  get pending(): number {
    return this.#left;
  }

  /** One replacement fewer, from the backend owed the most: the end that would have made room for it was not needed. */
  forgo(): void {
    let most = -1;
    for (let i = 0; i < this.#owed.length; i++)
      if (this.#owed[i]! > 0 && (most === -1 || this.#owed[i]! > this.#owed[most]!)) most = i;
    if (most === -1) return;
    this.#owed[most]!--;
    this.#left--;
  }

  /** The usable backend owed the most (-1 if none), and one less owed to it. */
  take(usable: (index: number) => boolean): number {
    let best = -1;
    for (let i = 0; i < this.#owed.length; i++) {
      if (this.#owed[i]! > 0 && usable(i) && (best === -1 || this.#owed[i]! > this.#owed[best]!)) best = i;
    }
    if (best !== -1) {
      this.#owed[best]!--;
      this.#left--;
    }
    return best;
  }
}

function sum(values: readonly number[]): number {
  let total = 0;
  for (const value of values) total += value;
  return total;
}
