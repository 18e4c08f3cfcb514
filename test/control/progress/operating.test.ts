// The analysis' operating characteristics (bench/analysis.ts, the first table of docs/analysis.md), replayed on its
// headline rows with a fixed seed through the real judging code: an equal canary is not rolled back,
// one worse by twice the threshold's margin is, within failureLimit + 2 intervals.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { binomial, FAILURE_LIMIT, simulate, withinShare } from '../../../bench/analysis.ts';
import { PATH_ROWS, PROMISED_MS, simulatePath, withinMs } from '../../../bench/analysis-path.ts';
import { seededRandom } from '../../support/seeded-random.ts';

describe("the analysis' operating characteristics", { timeout: 60_000 }, () => {
  it('draws binomial counts: the mean and the spread of Binomial(n, p)', () => {
    const random = seededRandom(5);
    const draws = Array.from({ length: 2_000 }, () => binomial(random, 1_000, 0.03));
    const mean = draws.reduce((sum, draw) => sum + draw, 0) / draws.length;
    const variance = draws.reduce((sum, draw) => sum + (draw - mean) ** 2, 0) / draws.length;
    assert.ok(Math.abs(mean - 30) < 0.5, `mean ${mean}`);
    assert.ok(Math.abs(variance - 29.1) < 3, `variance ${variance}`);
  });

  for (const [base, samples] of [
    [0.03, 25],
    [0.01, 100],
    [0.05, 1_000],
  ] as const) {
    it(`an equal canary (stable rate ${base * 100} %, ${samples} canary samples per interval) is not rolled back in 500 releases of 30 intervals`, () => {
      assert.deepEqual(simulate({ base, samples, worseBy: null }, 500, 42).rolledBackAt, []);
    });
  }

  it('a canary worse by twice the margin, with 1 000 samples per interval, is rolled back within failureLimit + 2 intervals in ≥ 99 % of releases', () => {
    for (const base of [0.001, 0.01]) {
      const outcome = simulate({ base, samples: 1_000, worseBy: 2 }, 300, 43);
      assert.ok(
        withinShare(outcome, FAILURE_LIMIT + 2) >= 0.99,
        `stable rate ${base}: ${withinShare(outcome, FAILURE_LIMIT + 2)}`,
      );
    }
  });

  it('with fewer samples it still rolls back, later: 100 per interval, worse by five margins', () => {
    const outcome = simulate({ base: 0.01, samples: 100, worseBy: 5 }, 300, 44);
    assert.ok(withinShare(outcome, 30) >= 0.99, `rolled back in ${withinShare(outcome, 30)} of releases`);
  });
});

describe('through the data path (bench/analysis-path.ts, the second table of docs/analysis.md), replayed with a fixed seed', {
  timeout: 60_000,
}, () => {
  const row = (label: string) => PATH_ROWS.find((candidate) => candidate.label === label)!;

  for (const label of ['equal: both reset 3 %', 'equal: both refuse 1 % and reset 3 %']) {
    it(`${label}, 25 offered per interval: not rolled back in 300 releases`, () => {
      const { stable, canary } = row(label);
      assert.deepEqual(simulatePath({ stable, canary, offered: 25 }, 300, 45).rolledBackAtMs, []);
    });
  }

  for (const label of ['refuses 100 %', 'refuses 50 %']) {
    it(`a canary that ${label} of its connections, 25 offered per interval, failover hiding it: rolled back within failureLimit × interval + one failTimeout in every release`, () => {
      const { stable, canary } = row(label);
      const outcome = simulatePath({ stable, canary, offered: 25 }, 100, 46);
      assert.equal(
        withinMs(outcome, PROMISED_MS),
        1,
        `${outcome.rolledBackAtMs.length} rolled back, the last at ${outcome.rolledBackAtMs.at(-1)} ms`,
      );
    });
  }
});
