// The read-your-writes rule both control loops share: the same resourceVersion (they are opaque).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { showsResourceVersion } from '../../src/controller-kit/resource-version.ts';

describe('showsResourceVersion', () => {
  const rows: readonly [string | undefined, string | undefined, boolean, string][] = [
    ['5', '5', true, 'equal'],
    ['6', '5', false, 'greater: opaque, not known to hold ours'],
    ['10', '9', false, 'greater by number: still opaque'],
    ['4', '5', false, 'smaller: ours is not in the cache yet'],
    ['abc', 'abc', true, 'non-numeric, equal'],
    ['abd', 'abc', false, 'non-numeric, unequal'],
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
