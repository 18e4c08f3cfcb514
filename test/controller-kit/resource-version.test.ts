// The read-your-writes rule both control loops share: equal, or numerically later.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { showsResourceVersion } from '../../src/controller-kit/resource-version.ts';

describe('showsResourceVersion', () => {
  const rows: readonly [string | undefined, string | undefined, boolean, string][] = [
    ['5', '5', true, 'equal'],
    ['6', '5', true, 'greater: a later write overtook ours'],
    ['10', '9', true, 'greater by number, smaller as text'],
    ['4', '5', false, 'smaller: ours is not in the cache yet'],
    ['9', '10', false, 'smaller by number, greater as text'],
    ['abc', 'abc', true, 'non-numeric, equal'],
    ['abd', 'abc', false, 'non-numeric, unequal'],
    ['6', 'abc', false, 'one side non-numeric'],
    ['-6', '5', false, 'not a decimal integer'],
    ['123456789012345678901234567890', '123456789012345678901234567889', true, 'huge, greater'],
    ['123456789012345678901234567889', '123456789012345678901234567890', false, 'huge, smaller'],
    ['', '', false, 'empty'],
    ['5', '', false, 'written empty'],
    [undefined, '5', false, 'nothing cached'],
    ['5', undefined, false, 'no resourceVersion written'],
    [undefined, undefined, false, 'neither'],
  ];
  for (const [cached, written, expected, what] of rows) {
    it(`${what}: cached ${String(cached)}, written ${String(written)} → ${expected}`, () => {
      assert.equal(showsResourceVersion(cached, written), expected);
    });
  }
});
