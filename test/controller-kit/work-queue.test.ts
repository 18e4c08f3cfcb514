// The work queue both control loops use: keys coalesce, a key never runs twice at once, a failing release backs
// off alone while the others go on.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KeyedQueue } from '../../src/controller-kit/work-queue.ts';
import { sleep, waitFor } from '../support/wait.ts';

function recorder(work: (key: string) => Promise<{ requeueAfterMs?: number } | undefined> = async () => {}) {
  const runs: string[] = [];
  const errors: [string, number][] = [];
  const queue = new KeyedQueue({
    reconcile: async (key) => {
      runs.push(key);
      return work(key);
    },
    onError: (key, _err, retryInMs) => errors.push([key, retryInMs]),
    workers: 2,
    initialBackoffMs: 50,
    maxBackoffMs: 200,
  });
  return { queue, runs, errors };
}

describe('the work queue', () => {
  it('a key added several times before it runs runs once', async () => {
    const { queue, runs } = recorder();
    for (let i = 0; i < 3; i++) queue.add('ns/a');
    queue.add('ns/b');
    queue.start();
    await waitFor(() => runs.length === 2, 'both keys to run');
    await sleep(50);
    assert.deepEqual(runs.sort(), ['ns/a', 'ns/b']);
    await queue.stop();
  });

  it('a key added while it runs runs once more after, never twice at once', async () => {
    let running = 0;
    let most = 0;
    const { queue, runs } = recorder(async () => {
      running++;
      most = Math.max(most, running);
      await sleep(30);
      running--;
    });
    queue.start();
    queue.add('ns/a');
    await waitFor(() => runs.length === 1, 'the first run');
    for (let i = 0; i < 3; i++) queue.add('ns/a');
    await waitFor(() => runs.length === 2, 'the second run');
    await sleep(80);
    assert.equal(runs.length, 2);
    assert.equal(most, 1);
    await queue.stop();
  });

  it('a failing key is retried with growing backoff, and the other keys go on meanwhile', async () => {
    let failures = 3;
    const { queue, runs, errors } = recorder(async (key) => {
      if (key === 'ns/bad' && failures-- > 0) throw new Error('refused');
    });
    queue.start();
    queue.add('ns/bad');
    await waitFor(() => errors.length === 1, 'the first failure');
    queue.add('ns/good');
    queue.add('ns/bad'); // an event for the failing key waits for its retry
    await waitFor(() => runs.includes('ns/good'), 'the other key to run');
    assert.equal(runs.filter((key) => key === 'ns/bad').length, 1, 'no retry before the backoff');
    await waitFor(() => runs.filter((key) => key === 'ns/bad').length === 4, 'the retries until it succeeds', 2000);
    assert.deepEqual(
      errors.map(([, retryInMs]) => retryInMs),
      [50, 100, 200],
    );
    await queue.stop();
  });

  it('requeueAfter runs the key again later', async () => {
    const { queue, runs } = recorder(async () => (runs.length === 1 ? { requeueAfterMs: 40 } : undefined));
    queue.start();
    queue.add('ns/a');
    await waitFor(() => runs.length === 2, 'the requeue');
    await queue.stop();
  });

  it('stop waits for what runs and forgets what waits', async () => {
    let finished = false;
    const { queue, runs } = recorder(async () => {
      await sleep(50);
      finished = true;
    });
    queue.start();
    queue.add('ns/a');
    await waitFor(() => runs.length === 1, 'the run');
    queue.add('ns/a');
    await queue.stop();
    assert.equal(finished, true);
    await sleep(80);
    assert.equal(runs.length, 1);
  });
});
