// The rebalance selection (src/dataplane/choice/rebalance.ts), pure: a weight change ends each backend's
// surplus over its new share and never more, the replacements are owed to the backends below their
// share, and the ends are spread over the window.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  jitteredAge,
  shortfalls,
  spreadOver,
  Steering,
  surplusPerBackend,
} from '../../../src/dataplane/choice/rebalance.ts';

// [what, live connections per backend, new weights, surplus to end, replacements owed]
const CASES: readonly [string, number[], number[], number[], number[]][] = [
  [
    '50/50 → 80/20 with 10/10 live: the canary gives up 6, the stable side is owed 6',
    [10, 10],
    [80, 20],
    [0, 6],
    [6, 0],
  ],
  ['the split already matches: nothing', [9, 1], [90, 10], [0, 0], [0, 0]],
  ['90/10 → 50/50 with 18/2 live', [18, 2], [50, 50], [8, 0], [0, 8]],
  ['a backend at weight 0 gives up everything', [7, 3], [100, 0], [0, 3], [3, 0]],
  ['within one of the share: nothing (never more than needed)', [10, 10], [52, 48], [0, 0], [0, 0]],
  ['fractions round down: 3 live at 50/50', [3, 0], [50, 50], [1, 0], [0, 1]],
  ['three backends, the surplus shared by shortfall', [12, 0, 0], [50, 25, 25], [6, 0, 0], [0, 3, 3]],
  ['three backends, uneven shortfalls', [10, 10, 0], [20, 20, 60], [6, 6, 0], [0, 0, 12]],
  ['no live connections', [0, 0], [30, 70], [0, 0], [0, 0]],
  ['every weight 0: nothing to aim for, nothing ended', [5, 5], [0, 0], [0, 0], [0, 0]],
];

describe('rebalance selection', () => {
  for (const [what, live, weights, surplus, owed] of CASES) {
    test(what, () => {
      const ended = surplusPerBackend(live, weights);
      assert.deepEqual(ended, surplus);
      const moving = ended.reduce((a, b) => a + b, 0);
      assert.deepEqual(shortfalls(live, weights, moving), owed);
      // Afterwards every backend is within one connection of its share.
      const total = live.reduce((a, b) => a + b, 0);
      const weightSum = weights.reduce((a, b) => a + b, 0);
      if (weightSum === 0) return;
      live.forEach((count, i) => {
        const after = count - ended[i]! + owed[i]!;
        assert.ok(
          Math.abs(after - (total * weights[i]!) / weightSum) < 1 + 1e-9,
          `backend ${i}: ${after} against a share of ${(total * weights[i]!) / weightSum}`,
        );
      });
    });
  }

  test('never more than the surplus, over many random pools', () => {
    for (let seed = 1; seed <= 500; seed++) {
      const live = [seed % 17, (seed * 7) % 23, (seed * 3) % 5];
      const weights = [seed % 101, (seed * 13) % 101, (seed * 29) % 101];
      const weightSum = weights.reduce((a, b) => a + b, 0);
      const total = live.reduce((a, b) => a + b, 0);
      surplusPerBackend(live, weights).forEach((ended, i) => {
        const share = weightSum === 0 ? live[i]! : (total * weights[i]!) / weightSum;
        assert.ok(
          ended <= Math.max(0, live[i]! - share) + 1e-9,
          `seed ${seed}: backend ${i} ends ${ended} of ${live[i]} for a share of ${share}`,
        );
        assert.ok(
          live[i]! - ended < share + 1,
          `seed ${seed}: backend ${i} keeps ${live[i]! - ended}, over its share ${share} by one or more`,
        );
      });
    }
  });

  test('the ends are spread over the window, the last at its end', () => {
    assert.deepEqual(spreadOver(4, 1000), [250, 500, 750, 1000]);
    assert.deepEqual(spreadOver(0, 1000), []);
  });

  test('max age is jittered up to 10 % past it, never before it', () => {
    assert.equal(jitteredAge(1000, 0), 1000);
    assert.ok(Math.abs(jitteredAge(1000, 0.999) - 1099.9) < 1e-9);
  });

  test('steering pays the owed backends first, the one owed most first, and only usable ones', () => {
    const steering = new Steering([0, 2, 1]);
    assert.equal(
      steering.take(() => true),
      1,
    );
    assert.equal(
      steering.take((i) => i !== 1),
      2,
    );
    assert.equal(
      steering.take((i) => i !== 1),
      -1,
    );
    assert.equal(steering.pending, 1);
    assert.equal(
      steering.take(() => true),
      1,
    );
    assert.equal(steering.pending, 0);
    assert.equal(
      steering.take(() => true),
      -1,
    );
  });
});
