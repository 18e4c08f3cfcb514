// The intervals status has not counted yet (src/control/progress/evidence-queue.ts): one per pass,
// oldest first, dropped once counted or when the replica stops leading, and bounded by merging.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EvidenceQueue, MAX_PENDING_INTERVALS } from '../../../src/control/progress/evidence-queue.ts';
import type { Evidence } from '../../../src/control/progress/analysis/evidence.ts';

const START_MS = Date.parse('2026-01-01T00:00:00.000Z');
const INTERVAL_MS = 10_000;

/** The interval that ended `index` intervals after the start. */
const interval = (index: number): Evidence => ({
  at: new Date(START_MS + index * INTERVAL_MS).toISOString(),
  intervalMs: INTERVAL_MS,
  replicas: 1,
  latencyBucketsMs: [1],
  listeners: {},
  weightsMoved: [],
});

const queueOf = (count: number): EvidenceQueue => {
  const queue = new EvidenceQueue();
  for (let index = 1; index <= count; index++) queue.push(interval(index));
  return queue;
};

describe('EvidenceQueue', () => {
  const cases: readonly [
    title: string,
    queued: number,
    countedAt: string | undefined,
    leading: boolean,
    oldest: number | undefined,
  ][] = [
    ['nothing queued', 0, undefined, true, undefined],
    ['nothing counted yet: the oldest', 3, undefined, true, 1],
    ['the first counted: the next', 3, interval(1).at, true, 2],
    ['counted up to the last: none left', 3, interval(3).at, true, undefined],
    ['counted past the last (another leader counted later ones): none left', 3, interval(9).at, true, undefined],
    ['not leading: none, whatever is queued', 3, undefined, false, undefined],
  ];
  for (const [title, queued, countedAt, leading, oldest] of cases) {
    it(title, () =>
      assert.equal(
        queueOf(queued).oldest(countedAt, leading)?.at,
        oldest === undefined ? undefined : interval(oldest).at,
      ),
    );
  }

  it('a replica that stopped leading keeps none for when it leads again', () => {
    const queue = queueOf(3);
    queue.oldest(undefined, false);
    assert.equal(queue.oldest(undefined, true), undefined);
  });

  it('past the most it keeps, the two oldest become one spanning both', () => {
    const queue = queueOf(MAX_PENDING_INTERVALS + 2);
    const oldest = queue.oldest(undefined, true);
    assert.equal(oldest?.intervalMs, 3 * INTERVAL_MS, 'the first three merged, one push beyond the bound each');
    assert.equal(oldest?.at, interval(3).at, 'it ends where the last of them did');
    assert.equal(queue.oldest(interval(3).at, true)?.at, interval(4).at, 'the rest kept as they came');
  });
});
