// Client-IP affinity, pure: weighted rendezvous hashing (highest random weight) over a hash of the
// client address and each backend's name. Every backend draws a number from (0, 1) for a client,
// its score is weight ÷ −ln(draw), and the highest score wins: a backend gets its weight's share of
// clients, and the answer depends on nothing but the address, the names and the weights, so it is
// the same on every replica and after a restart, with no state to share.
//
// How clients move when weights change: a client goes from backend i to backend j only when j's
// weight grew relative to i's (its score rose past i's, the draws being fixed). With two backends
// that means: the canary's weight rises from w1 to w2 → only stable clients move, to the canary,
// about (w2 − w1) % of all clients, never the other way. With more backends: a backend whose
// weight rises, the others staying, only gains clients; one whose weight falls only loses them.
// (No stateless assignment can promise "only towards backends that gained weight" for every change
// among three or more backends: a cycle of such changes would have to return a client to where it
// started while every step forbade moving it — see docs/architecture.md on client affinity.)
import type { Picker } from './balancer.ts';

/**
 * The 32-bit hash clients are placed by. An IPv4 client seen on a dual-stack socket
 * (`::ffff:10.1.2.3`) hashes as `10.1.2.3`, so an IPv4-only replica gives the same answer.
 */
export function clientAddressHash(address: string): number {
  const start = address.startsWith('::ffff:') && address.includes('.') ? 7 : 0;
  return stringHash(address, start);
}

/** FNV-1a over the UTF-16 code units, then murmur3's finalizer: stable across processes and versions. */
function stringHash(text: string, start = 0): number {
  let hash = 0x811c9dc5;
  for (let i = start; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return mix32(hash);
}

/** murmur3 fmix32: every input bit flips every output bit with probability about one half. */
function mix32(value: number): number {
  let h = value >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const TWO_POW_52 = 2 ** 52;

/** A uniform draw in (0, 1) with 52 bits, one per (client, backend) pair. */
function draw(clientHash: number, backendSeed: number): number {
  const high = mix32(clientHash ^ backendSeed);
  const low = mix32(high ^ Math.imul(backendSeed, 0x9e3779b1) ^ 0x68e31da4) >>> 12;
  return (high * 2 ** 20 + low + 0.5) / TWO_POW_52;
}

/** Backend `i`'s claim on the client: the highest wins; 0 for weight 0 (never chosen). */
function rendezvousScore(clientHash: number, backendSeed: number, weight: number): number {
  return weight === 0 ? 0 : weight / -Math.log(draw(clientHash, backendSeed));
}

/** Picks by client address: the usable backend with the highest rendezvous score. */
export class ClientAffinity implements Picker {
  readonly #weights: readonly number[];
  readonly #seeds: readonly number[];

  /** `names` identify backends across reloads and replicas (never their position in the list). */
  constructor(weights: readonly number[], names: readonly string[]) {
    this.#weights = weights;
    this.#seeds = names.map((name) => stringHash(name));
  }

  pick(usable: (index: number) => boolean, clientHash = 0): number {
    let best = -1;
    let bestScore = 0;
    for (let i = 0; i < this.#weights.length; i++) {
      const weight = this.#weights[i]!;
      if (weight === 0 || !usable(i)) continue;
      const score = rendezvousScore(clientHash, this.#seeds[i]!, weight);
      if (score > bestScore) {
        best = i;
        bestScore = score;
      }
    }
    return best;
  }

  /** The backend the client belongs to by weight alone, health aside; -1 when every weight is 0. */
  assigned(clientHash: number): number {
    return this.pick(always, clientHash);
  }
}

const always = (): boolean => true;
