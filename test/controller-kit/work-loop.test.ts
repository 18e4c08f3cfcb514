// The one-key work loop of the proxy: triggers coalesce, a failure backs off until a watch comes
// back, and a resync runs the loop again with no event. Its timers are node:test's mock timers.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WorkLoop } from '../../src/controller-kit/work-loop.ts';
import { settle } from './settle.ts';

function recorder(work: () => Promise<void> = async () => {}, resyncMs = 60_000) {
  let runs = 0;
  const errors: number[] = [];
  const loop = new WorkLoop({
    reconcile: async () => {
      runs++;
      await work();
      return undefined;
    },
    onError: (_err, retryInMs) => errors.push(retryInMs),
    resyncMs,
    initialBackoffMs: 5_000,
    maxBackoffMs: 10_000,
  });
  return { loop, runs: () => runs, errors };
}

describe('the one-key work loop', () => {
  it('runs once at start, not for triggers before it; triggers in one turn run once', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { loop, runs } = recorder();
    loop.trigger();
    t.mock.timers.tick(1_000);
    await settle();
    assert.equal(runs(), 0);
    loop.start();
    loop.trigger();
    loop.trigger();
    t.mock.timers.tick(0);
    await settle();
    t.mock.timers.tick(1_000);
    await settle();
    assert.equal(runs(), 1);
    await loop.stop();
  });

  it('a failure waits for its backoff, which retryNow ends at once', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let fail = true;
    const { loop, runs, errors } = recorder(async () => {
      if (fail) throw new Error('refused');
    });
    loop.start();
    t.mock.timers.tick(0);
    await settle();
    assert.deepEqual(errors, [5_000]);
    loop.trigger();
    t.mock.timers.tick(4_999);
    await settle();
    assert.equal(runs(), 1, 'no run before the backoff, for all the trigger');
    fail = false;
    loop.retryNow();
    await settle();
    assert.equal(runs(), 2);
    await loop.stop();
  });

  it('resyncs that long after each run, with no event', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { loop, runs } = recorder(async () => {}, 30);
    loop.start();
    t.mock.timers.tick(0);
    await settle();
    for (const expected of [1, 2, 3]) {
      assert.equal(runs(), expected);
      t.mock.timers.tick(29);
      await settle();
      assert.equal(runs(), expected, 'not before the resync');
      t.mock.timers.tick(1);
      await settle();
    }
    await loop.stop();
  });
});
