// The work queue both control loops use: keys coalesce, a key never runs twice at once, a failing release backs
// off alone while the others go on. Its timers are node:test's mock timers: each delay is checked to the
// millisecond, and no test waits one out.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { KeyedQueue } from '../../src/controller-kit/work-queue.ts';
import { gate, settle } from './settle.ts';

function recorder(work: (key: string) => Promise<{ requeueAfterMs?: number } | undefined> = async () => undefined) {
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
  it('a key added several times before it runs runs once', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { queue, runs } = recorder();
    for (let i = 0; i < 3; i++) queue.add('ns/a');
    queue.add('ns/b');
    queue.start();
    await settle();
    t.mock.timers.tick(60_000);
    await settle();
    assert.deepEqual(runs.sort(), ['ns/a', 'ns/b']);
    await queue.stop();
  });

  it('a key added while it runs runs once more after, never twice at once', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let running = 0;
    let most = 0;
    const gates = [gate(), gate()];
    const { queue, runs } = recorder(async () => {
      running++;
      most = Math.max(most, running);
      await gates[runs.length - 1]!.passed;
      running--;
      return undefined;
    });
    queue.start();
    queue.add('ns/a');
    await settle();
    assert.equal(runs.length, 1);
    for (let i = 0; i < 3; i++) queue.add('ns/a');
    await settle();
    assert.equal(runs.length, 1, 'not again while it runs');
    gates[0]!.open();
    await settle();
    assert.equal(runs.length, 2, 'once more after');
    gates[1]!.open();
    await settle();
    t.mock.timers.tick(60_000);
    await settle();
    assert.deepEqual([runs.length, most], [2, 1]);
    await queue.stop();
  });

  it('a failing key is retried after 50, 100, 200 and 200 ms (capped), and the other keys go on meanwhile', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let failures = 4;
    const { queue, runs, errors } = recorder(async (key) => {
      if (key === 'ns/bad' && failures-- > 0) throw new Error('refused');
      return undefined;
    });
    const badRuns = () => runs.filter((key) => key === 'ns/bad').length;
    queue.start();
    queue.add('ns/bad');
    await settle();
    queue.add('ns/good');
    queue.add('ns/bad'); // an event for the failing key waits for its retry
    await settle();
    assert.deepEqual([badRuns(), runs.includes('ns/good')], [1, true], 'the other key runs, the failing one waits');
    for (const delayMs of [50, 100, 200, 200]) {
      t.mock.timers.tick(delayMs - 1);
      await settle();
      const before = badRuns();
      t.mock.timers.tick(1);
      await settle();
      assert.equal(badRuns(), before + 1, `the retry ${delayMs} ms after the failure, not before`);
    }
    assert.deepEqual(errors, [
      ['ns/bad', 50],
      ['ns/bad', 100],
      ['ns/bad', 200],
      ['ns/bad', 200],
    ]);
    t.mock.timers.tick(60_000);
    await settle();
    assert.equal(badRuns(), 5, 'a success ends the retries');
    await queue.stop();
  });

  it('requeueAfter runs the key again that long after, not before', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { queue, runs } = recorder(async () => (runs.length === 1 ? { requeueAfterMs: 40 } : undefined));
    queue.start();
    queue.add('ns/a');
    await settle();
    t.mock.timers.tick(39);
    await settle();
    assert.equal(runs.length, 1);
    t.mock.timers.tick(1);
    await settle();
    assert.equal(runs.length, 2);
    await queue.stop();
  });

  it('stop waits for what runs and forgets what waits', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const running = gate();
    let stopped = false;
    const { queue, runs } = recorder(async () => {
      await running.passed;
      return { requeueAfterMs: 10 };
    });
    queue.start();
    queue.add('ns/a');
    await settle();
    queue.add('ns/a');
    const stopping = queue.stop().then(() => (stopped = true));
    await settle();
    assert.equal(stopped, false, 'stop waits for the run');
    running.open();
    await stopping;
    t.mock.timers.tick(60_000);
    await settle();
    assert.equal(runs.length, 1, 'neither the key added meanwhile nor the requeue runs');
  });
});
