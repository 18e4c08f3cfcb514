// The one-key work loop of the proxy: triggers coalesce, a failure backs off until a watch comes
// back, and a resync runs the loop again with no event.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WorkLoop } from '../../src/controller-kit/work-loop.ts';
import { sleep, waitFor } from '../support/wait.ts';

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
  it('runs once at start, not for triggers before it; triggers in one turn run once', async () => {
    const { loop, runs } = recorder();
    loop.trigger();
    await sleep(20);
    assert.equal(runs(), 0);
    loop.start();
    loop.trigger();
    loop.trigger();
    await waitFor(() => runs() === 1, 'the first run');
    await sleep(50);
    assert.equal(runs(), 1);
    await loop.stop();
  });

  it('a failure waits for its backoff, which retryNow ends at once', async () => {
    let fail = true;
    const { loop, runs, errors } = recorder(async () => {
      if (fail) throw new Error('refused');
    });
    loop.start();
    await waitFor(() => errors.length === 1, 'the failure');
    loop.trigger();
    await sleep(50);
    assert.equal(runs(), 1, 'no run before the backoff');
    fail = false;
    loop.retryNow();
    await waitFor(() => runs() === 2, 'the retry');
    assert.deepEqual(errors, [5_000]);
    await loop.stop();
  });

  it('resyncs with no event', async () => {
    const { loop, runs } = recorder(async () => {}, 30);
    loop.start();
    await waitFor(() => runs() >= 3, 'two resyncs');
    await loop.stop();
  });
});
