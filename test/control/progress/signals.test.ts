// What an inconclusive rate lacks (src/control/progress/signals.ts): the more canary samples after
// which counts at today's rates would settle it, by the bounds that judge it, with no event as with many.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { judgeBadRate, type BadRateLimits } from '../../../src/control/progress/analysis/signals.ts';
import type { Counts } from '../../../src/control/progress/analysis/confidence.ts';

/** The counts `more` canary samples later at the same rates (the stable side grows alike). */
function later(counts: Counts, more: number, samples: number): Counts {
  const scale = (samples + more) / samples;
  return { count: Math.round(counts.count * scale), of: Math.round(counts.of * scale) };
}

const cases: { name: string; canary: Counts; stable: Counts | null; limits: BadRateLimits }[] = [
  {
    name: 'no error in 97 against max 0.01 (the bound shrinks as 1/n)',
    canary: { count: 0, of: 97 },
    stable: null,
    limits: { max: 0.01 },
  },
  {
    name: 'no reset in 97 against 0 in 883, maxAboveStable 0.01',
    canary: { count: 0, of: 97 },
    stable: { count: 0, of: 883 },
    limits: { maxAboveStable: 0.01 },
  },
  {
    name: '1 reset in 25 against 3 in 225, maxAboveStable 0.01 (many events later: as 1/√n)',
    canary: { count: 1, of: 25 },
    stable: { count: 3, of: 225 },
    limits: { maxAboveStable: 0.01 },
  },
  {
    name: '8 errors in 200 against max 0.02 (to fail)',
    canary: { count: 8, of: 200 },
    stable: null,
    limits: { max: 0.02 },
  },
];

describe('judgeBadRate: what an inconclusive verdict lacks', () => {
  for (const { name, canary, stable, limits } of cases) {
    it(`${name}: settled after that many more at the same rates, not one fewer`, () => {
      const now = judgeBadRate(canary, stable, limits, 0.99);
      assert.equal(now.verdict, 'Inconclusive');
      const lacks = now.lacks ?? Number.NaN;
      assert.ok(Number.isFinite(lacks) && lacks >= 1, `lacks ${lacks}`);
      const at = (more: number) =>
        judgeBadRate(later(canary, more, canary.of), stable && later(stable, more, canary.of), limits, 0.99).verdict;
      assert.notEqual(at(lacks), 'Inconclusive', `after ${lacks} more`);
      assert.equal(at(lacks - 1), 'Inconclusive', `after ${lacks - 1} more`);
    });
  }
});
