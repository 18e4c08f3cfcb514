// How a step is named to people (api/steps.ts): counted from 1 with the API's index beside it, and
// read back from status.step as this version writes it and as 0.4 did.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatStep, readStep } from '../../src/api/steps.ts';

describe('step names', () => {
  it('counts from 1 and shows the index the API fields hold; past the last step, done', () => {
    assert.equal(formatStep(0, 3), '1/3 (index 0)');
    assert.equal(formatStep(2, 3), '3/3 (index 2)');
    assert.equal(formatStep(3, 3), '3/3 done (index 3)');
  });

  it('reads the number and the count back, from this version and from 0.4 (`2/3`)', () => {
    for (const index of [0, 1, 2, 3])
      assert.deepEqual(readStep(formatStep(index, 3)), { number: Math.min(index + 1, 3), count: 3 });
    assert.deepEqual(readStep('2/3'), { number: 2, count: 3 });
    assert.equal(readStep(undefined), undefined);
    assert.equal(readStep('none'), undefined);
  });
});
