// The split: smooth WRR is exact, random is within statistical bounds, weight 0 gets nothing,
// weight 100 of 100 gets everything, and passive health skips a failed backend for failTimeoutMs.
// First the pure pickers, then the same promises over real connections through a TCP listener.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  carryOverPicker,
  createPicker,
  RandomPicker,
  SmoothWeightedRoundRobin,
  type Picker,
} from '../../../src/dataplane/choice/balancer.ts';
import { BackendHealth } from '../../../src/dataplane/choice/passive-health.ts';
import { askName, countBy, runConcurrently, startNamedBackend, type TcpBackend } from '../../support/net/backends.ts';
import { applyOnFreePort, createPlane, type TestPlane } from '../../support/dataplane/test-plane.ts';

const always = () => true;

function picks(
  strategy: 'wrr' | 'random',
  weights: number[],
  n: number,
  usable: (i: number) => boolean = always,
): number[] {
  const picker = createPicker(strategy, weights);
  return Array.from({ length: n }, () => picker.pick(usable));
}

function tally(indexes: readonly number[], size: number): number[] {
  const counts = new Array<number>(size).fill(0);
  for (const i of indexes) if (i >= 0) counts[i]!++;
  return counts;
}

/** Binomial bound: |observed - n p| <= 5 standard deviations (a false failure about once in 1.7 million runs). */
function assertBinomial(observed: number, n: number, p: number, what: string): void {
  const mean = n * p;
  const sd = Math.sqrt(n * p * (1 - p));
  assert.ok(
    Math.abs(observed - mean) <= 5 * sd,
    `${what}: ${observed} of ${n}, expected ${mean.toFixed(0)} ± ${(5 * sd).toFixed(0)}`,
  );
}

describe('smooth weighted round robin (pure)', { timeout: 30_000 }, () => {
  test('90/10 over 1000 picks is exactly 900/100, one canary pick in every window of 10', () => {
    const sequence = picks('wrr', [90, 10], 1000);
    assert.deepEqual(tally(sequence, 2), [900, 100]);
    for (let start = 0; start < 1000; start += 10) {
      assert.equal(sequence.slice(start, start + 10).filter((i) => i === 1).length, 1, `window at ${start}`);
    }
  });

  test('50/30/20 over 1000 picks is exactly 500/300/200, and no backend gets two turns more than its share in a row', () => {
    const sequence = picks('wrr', [50, 30, 20], 1000);
    assert.deepEqual(tally(sequence, 3), [500, 300, 200]);
    // nginx's smooth WRR on 5/3/2 (ties to the first): a b c a a b a c b a, then it repeats.
    assert.deepEqual(sequence.slice(0, 10), [0, 1, 2, 0, 0, 1, 0, 2, 1, 0]);
    assert.deepEqual(sequence.slice(10, 20), sequence.slice(0, 10));
    let longestRun = 0;
    let run = 0;
    for (let i = 0; i < sequence.length; i++) {
      run = i > 0 && sequence[i] === sequence[i - 1] ? run + 1 : 1;
      longestRun = Math.max(longestRun, run);
    }
    assert.ok(longestRun <= 2, `longest run of one backend: ${longestRun}`);
  });

  test('weight 0 is never picked; 100 next to 0 takes every pick', () => {
    assert.deepEqual(tally(picks('wrr', [0, 100], 500), 2), [0, 500]);
    assert.deepEqual(tally(picks('wrr', [100, 0, 0], 500), 3), [500, 0, 0]);
  });

  test('all weights 0 picks nothing (-1)', () => {
    assert.deepEqual([...new Set(picks('wrr', [0, 0], 20))], [-1]);
  });

  test('an unusable backend is skipped and its share goes to the others, exactly', () => {
    const sequence = picks('wrr', [50, 30, 20], 1000, (i) => i !== 0);
    assert.deepEqual(tally(sequence, 3), [0, 600, 400]);
  });

  test('nothing usable picks nothing and does not disturb later picks', () => {
    const picker = new SmoothWeightedRoundRobin([90, 10]);
    assert.equal(
      picker.pick(() => false),
      -1,
    );
    const sequence = Array.from({ length: 100 }, () => picker.pick(always));
    assert.deepEqual(tally(sequence, 2), [90, 10]);
  });
});

describe('smooth weighted round robin across reloads (pure)', { timeout: 30_000 }, () => {
  /** `total` picks; every `every` picks a reload switches to the next weights of `schedule`, carrying the picker over. */
  function picksAcrossReloads(schedule: readonly number[][], every: number, total: number): number[] {
    const keys = ['stable', 'canary'];
    let weights = schedule[0]!;
    let picker: Picker = createPicker('wrr', weights);
    const sequence: number[] = [];
    for (let i = 0; i < total; i++) {
      if (i > 0 && i % every === 0) {
        const next = schedule[(i / every) % schedule.length]!;
        picker = carryOverPicker(picker, keys, 'wrr', next, keys);
        weights = next;
      }
      sequence.push(picker.pick(always));
    }
    return sequence;
  }

  const cases: { schedule: number[][]; every: number; expected: [number, number] }[] = [
    // The weights did not change: carrying over is the same as never reloading.
    { schedule: [[90, 10]], every: 5, expected: [180, 20] },
    { schedule: [[99, 1]], every: 1, expected: [198, 2] },
    // Alternating weights: the share is their average (10 % and 20 % give 15 %).
    {
      schedule: [
        [90, 10],
        [80, 20],
      ],
      every: 5,
      expected: [170, 30],
    },
    {
      schedule: [
        [50, 50],
        [90, 10],
      ],
      every: 5,
      expected: [140, 60],
    },
  ];
  for (const { schedule, every, expected } of cases) {
    test(`weights ${schedule.map((w) => w.join('/')).join(' then ')}, a reload every ${every} picks: ${expected.join('/')} of 200`, () => {
      assert.deepEqual(tally(picksAcrossReloads(schedule, every, 200), 2), expected);
    });
  }

  test('backends are matched by key: a new one starts at 0, a removed one is dropped, scores stay within the new total', () => {
    const before = new SmoothWeightedRoundRobin([90, 10], [-50, 50]);
    const after = carryOverPicker(
      before,
      ['stable', 'canary'],
      'wrr',
      [10, 5, 5],
      ['canary', 'third', 'stable'],
    ) as SmoothWeightedRoundRobin;
    assert.deepEqual(after.scores, [20, 0, -20]);
  });

  test('random has no state to carry: a new random picker', () => {
    assert.ok(
      carryOverPicker(new SmoothWeightedRoundRobin([1, 1]), ['a', 'b'], 'random', [1, 1], ['a', 'b']) instanceof
        RandomPicker,
    );
  });
});

describe('weighted random (pure)', { timeout: 30_000 }, () => {
  test('90/10 over 100 000 picks is within 5 standard deviations', () => {
    const n = 100_000;
    const counts = tally(picks('random', [90, 10], n), 2);
    assert.equal(counts[0]! + counts[1]!, n);
    assertBinomial(counts[1]!, n, 0.1, 'canary share');
  });

  test('three backends 60/30/10 each within bounds', () => {
    const n = 100_000;
    const counts = tally(picks('random', [60, 30, 10], n), 3);
    assertBinomial(counts[0]!, n, 0.6, 'first');
    assertBinomial(counts[1]!, n, 0.3, 'second');
    assertBinomial(counts[2]!, n, 0.1, 'third');
  });

  test('weight 0 is never picked, 100 always; all 0 or nothing usable picks -1', () => {
    assert.deepEqual(tally(picks('random', [0, 100], 10_000), 2), [0, 10_000]);
    assert.deepEqual(tally(picks('random', [100, 0], 10_000), 2), [10_000, 0]);
    assert.deepEqual([...new Set(picks('random', [0, 0], 100))], [-1]);
    assert.deepEqual([...new Set(picks('random', [50, 50], 100, () => false))], [-1]);
  });

  test('an unusable backend is never picked', () => {
    assert.deepEqual(
      tally(
        picks('random', [50, 50], 10_000, (i) => i === 1),
        2,
      ),
      [0, 10_000],
    );
  });
});

describe('passive health (pure)', { timeout: 30_000 }, () => {
  test('maxFails failures within failTimeoutMs take the backend out for failTimeoutMs, then it is back', () => {
    const health = new BackendHealth();
    const t0 = 1_000_000;
    health.recordFailure(t0, 2, 1000);
    assert.ok(health.isAvailable(t0), 'one failure of two allowed');
    health.recordFailure(t0 + 100, 2, 1000);
    assert.ok(!health.isAvailable(t0 + 100), 'second failure marks it failed');
    assert.ok(!health.isAvailable(t0 + 1099));
    assert.ok(health.isAvailable(t0 + 1100), 'back after failTimeoutMs');
  });

  test('failures further apart than failTimeoutMs do not add up', () => {
    const health = new BackendHealth();
    health.recordFailure(10_000, 2, 1000);
    health.recordFailure(12_000, 2, 1000);
    assert.ok(health.isAvailable(12_000));
  });

  test('a success clears the count and the mark', () => {
    const health = new BackendHealth();
    health.recordFailure(10_000, 1, 1000);
    assert.ok(!health.isAvailable(10_000));
    health.recordSuccess();
    assert.ok(health.isAvailable(10_000));
  });
});

describe('the split over real TCP connections', { timeout: 30_000 }, () => {
  const backends: TcpBackend[] = [];
  let plane: TestPlane;

  before(async () => {
    for (const name of ['stable', 'canary', 'third']) backends.push(await startNamedBackend(name));
    plane = createPlane();
  });
  after(async () => {
    await plane.close();
    await Promise.all(backends.map((backend) => backend.close()));
  });

  const listener = (name: string, port: number, balance: string, weights: number[]) => ({
    name,
    protocol: 'tcp',
    listen: `127.0.0.1:${port}`,
    balance,
    backends: weights.map((weight, i) => ({
      name: ['stable', 'canary', 'third'][i],
      host: '127.0.0.1',
      port: backends[i]!.port,
      weight,
    })),
  });

  async function split(
    name: string,
    balance: string,
    weights: number[],
    connections: number,
  ): Promise<Record<string, number>> {
    const port = await applyOnFreePort(plane, (p) => ({ listeners: [listener(name, p, balance, weights)] }));
    const names = await runConcurrently(connections, 50, () => askName(port));
    return countBy(names);
  }

  test('wrr 90/10 over 1000 concurrent connections is exactly 900/100', async () => {
    assert.deepEqual(await split('wrr-90-10', 'wrr', [90, 10], 1000), { stable: 900, canary: 100 });
    assert.equal(plane.backend('wrr-90-10', 'stable').connections, 900);
    assert.equal(plane.backend('wrr-90-10', 'canary').connections, 100);
  });

  test('wrr 50/30/20 over 1000 connections is exactly 500/300/200', async () => {
    assert.deepEqual(await split('wrr-3', 'wrr', [50, 30, 20], 1000), { stable: 500, canary: 300, third: 200 });
  });

  test('random 80/20 over 1000 connections is within statistical bounds', async () => {
    const counts = await split('random-80-20', 'random', [80, 20], 1000);
    assert.equal((counts.stable ?? 0) + (counts.canary ?? 0), 1000);
    assertBinomial(counts.canary ?? 0, 1000, 0.2, 'canary connections');
  });

  test('weight 0 gets no connection and weight 100 gets all of them (wrr and random)', async () => {
    assert.deepEqual(await split('zero-wrr', 'wrr', [100, 0], 200), { stable: 200 });
    assert.deepEqual(await split('zero-random', 'random', [0, 100], 200), { canary: 200 });
  });
});
