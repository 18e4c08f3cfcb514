// What the two analysis simulations share (analysis.ts: binomial counts; analysis-path.ts: the data
// path): releases run from one seeded PRNG, and how their cells are written.
import { seededRandom } from '../test/support/seeded-random.ts';

/** `releases` runs of `release` from one PRNG seeded with `seed`: when each was rolled back, sorted; those that were not are left out. */
export function rollbacks(release: (random: () => number) => number | null, releases: number, seed: number): number[] {
  const draw = seededRandom(seed);
  const at: number[] = [];
  for (let index = 0; index < releases; index++) {
    const rolledBack = release(draw);
    if (rolledBack !== null) at.push(rolledBack);
  }
  return at.sort((a, b) => a - b);
}

/** 10 000 as `10 000`. */
export const grouped = (value: number) => String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ' ');
/** 0.985 as `98.5%`. */
export const percent = (share: number) => `${Math.round(share * 1000) / 10}%`;
