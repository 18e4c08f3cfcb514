// Backend choice, pure: no sockets, no clocks. Liveness is the caller's to say, through `usable`.
import weightedRandom from 'weighted-random';
import type { BalanceStrategy } from '../../config/types.ts';

export interface Picker {
  /**
   * Index of the backend for a new connection among those `usable(i)` accepts; -1 if none.
   * `clientHash` (clientAddressHash of the client) matters to client affinity only.
   */
  pick(usable: (index: number) => boolean, clientHash?: number): number;
}

export function createPicker(strategy: BalanceStrategy, weights: readonly number[]): Picker {
  return strategy === 'random' ? new RandomPicker(weights) : new SmoothWeightedRoundRobin(weights);
}

/**
 * The picker for new weights that continues where `previous` was: smooth WRR keeps the running
 * score of every backend still there (matched by key; a new one starts at 0), bounded by the new
 * total weight. Starting over instead would hand the first picks after every reload to the
 * heaviest backend, and frequent reloads would starve a light canary.
 */
export function carryOverPicker(
  previous: Picker,
  previousKeys: readonly string[],
  strategy: BalanceStrategy,
  weights: readonly number[],
  keys: readonly string[],
): Picker {
  if (strategy !== 'wrr' || !(previous instanceof SmoothWeightedRoundRobin)) return createPicker(strategy, weights);
  const scoreByKey = new Map(previousKeys.map((key, i) => [key, previous.scores[i]!]));
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  const scores = keys.map((key) => Math.max(-total, Math.min(total, scoreByKey.get(key) ?? 0)));
  return new SmoothWeightedRoundRobin(weights, scores);
}

/**
 * nginx's smooth weighted round robin (ngx_http_upstream_get_peer): every pick adds each candidate's
 * weight to its running score, takes the highest, and subtracts the candidates' total from the winner.
 * 90/10 gives exactly 9 of every 10 picks to the first backend, interleaved rather than in a burst.
 */
export class SmoothWeightedRoundRobin implements Picker {
  readonly #weights: readonly number[];
  readonly #current: number[];

  constructor(weights: readonly number[], scores: readonly number[] = weights.map(() => 0)) {
    this.#weights = weights;
    this.#current = [...scores];
  }

  /** Each backend's running score (its claim to the next pick). */
  get scores(): readonly number[] {
    return this.#current;
  }

  pick(usable: (index: number) => boolean): number {
    let best = -1;
    let total = 0;
    for (let i = 0; i < this.#weights.length; i++) {
      const weight = this.#weights[i]!;
      if (weight === 0 || !usable(i)) continue;
      this.#current[i]! += weight;
      total += weight;
      if (best === -1 || this.#current[i]! > this.#current[best]!) best = i;
    }
    if (best !== -1) this.#current[best]! -= total;
    return best;
  }
}

export class RandomPicker implements Picker {
  readonly #weights: readonly number[];

  constructor(weights: readonly number[]) {
    this.#weights = weights;
  }

  pick(usable: (index: number) => boolean): number {
    return weightedRandom(this.#weights.map((weight, i) => (usable(i) ? weight : 0)));
  }
}
