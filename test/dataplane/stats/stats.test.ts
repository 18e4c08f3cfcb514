// A backend's counters as the analysis reads them (src/dataplane/stats/stats.ts): the time passive
// health held it out, which makes its eligible share, is each take-out to its end and no further.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BackendStats } from '../../../src/dataplane/stats/stats.ts';

describe('BackendStats: the time out of rotation', () => {
  it('a take-out counts while it lasts and to its end, never past it, however late it is read', () => {
    const stats = new BackendStats();
    stats.takenOut(1_000, 3_000, 'connect');
    assert.equal(stats.markedDown, 1);
    assert.equal(stats.outMs(2_500), 1_500, 'while it lasts');
    assert.equal(stats.outMs(4_000), 3_000, 'at its end');
    assert.equal(stats.outMs(600_000), 3_000, 'an interval judged long after: eligible again since its end');
  });

  it('each take-out adds its own length, and one that starts while another runs ends the first', () => {
    const stats = new BackendStats();
    stats.takenOut(0, 3_000, 'connect');
    stats.takenOut(10_000, 3_000, 'connect');
    assert.equal(stats.outMs(60_000), 6_000);
    stats.takenOut(61_000, 3_000, 'connect');
    stats.takenOut(62_000, 3_000, 'connect');
    assert.equal(stats.outMs(120_000), 6_000 + 1_000 + 3_000, 'the first of the two counts until the second began');
  });
});
