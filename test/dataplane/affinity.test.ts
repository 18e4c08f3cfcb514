// Client-IP affinity (src/dataplane/affinity.ts), pure: 1 000 simulated clients keep their backend
// while the weights hold, a canary raise moves only stable clients and about the raise's share of
// them, more backends move clients only towards one that gained relative to theirs, and another
// process gives the same answers (no shared state: replicas and restarts agree).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { ClientAffinity, clientAddressHash } from '../../src/dataplane/affinity.ts';

/** 1 000 client addresses: 600 IPv4, 400 IPv6, spread like real ones. */
const CLIENTS: readonly string[] = Array.from({ length: 1000 }, (_, i) =>
  i < 600 ? `10.${(i * 7) % 256}.${(i * 13) % 256}.${i % 251}` : `2001:db8:${(i * 31).toString(16)}::${(i * 17).toString(16)}`,
);

const everyone = () => true;

function assign(names: readonly string[], weights: readonly number[], clients: readonly string[] = CLIENTS): number[] {
  const affinity = new ClientAffinity(weights, names);
  return clients.map((client) => affinity.pick(everyone, clientAddressHash(client)));
}

function count(assignments: readonly number[], backends: number): number[] {
  const counts = Array.from({ length: backends }, () => 0);
  for (const index of assignments) counts[index]!++;
  return counts;
}

describe('client affinity (rendezvous hashing)', () => {
  test('at a fixed weight every client keeps its backend, and the split follows the weights', () => {
    const first = assign(['stable', 'canary'], [90, 10]);
    assert.deepEqual(assign(['stable', 'canary'], [90, 10]), first);
    const [stable, canary] = count(first, 2);
    // Binomial(1000, 0.1): σ ≈ 9.5; 4σ either way.
    assert.ok(canary! >= 62 && canary! <= 138, `canary got ${canary} of 1000 at 10 %`);
    assert.equal(stable! + canary!, 1000);
  });

  test('the order of the backends in the config does not matter, their names do', () => {
    const forward = assign(['stable', 'canary'], [80, 20]);
    const reversed = assign(['canary', 'stable'], [20, 80]).map((index) => 1 - index);
    assert.deepEqual(reversed, forward);
  });

  const raises: readonly [number, number][] = [
    [0, 10],
    [10, 30],
    [30, 50],
    [50, 100],
    [5, 6],
  ];
  for (const [from, to] of raises) {
    test(`canary ${from} % → ${to} %: only stable clients move, to the canary, about ${to - from} % of all`, () => {
      const before = assign(['stable', 'canary'], [100 - from, from]);
      const after = assign(['stable', 'canary'], [100 - to, to]);
      let moved = 0;
      for (let i = 0; i < CLIENTS.length; i++) {
        if (before[i] === after[i]) continue;
        assert.deepEqual([before[i], after[i]], [0, 1], `${CLIENTS[i]} moved canary → stable`);
        moved++;
      }
      const expected = (CLIENTS.length * (to - from)) / 100;
      const sigma = Math.sqrt(CLIENTS.length * ((to - from) / 100) * (1 - (to - from) / 100));
      assert.ok(Math.abs(moved - expected) <= 4 * sigma + 1, `${moved} moved, expected about ${expected}`);
      // And back down: exactly the same clients return.
      assert.deepEqual(assign(['stable', 'canary'], [100 - from, from]), before);
    });
  }

  test('three backends: one that gains takes clients only to itself; the others keep theirs', () => {
    const before = assign(['a', 'b', 'c'], [50, 40, 10]);
    const after = assign(['a', 'b', 'c'], [50, 40, 30]);
    for (let i = 0; i < CLIENTS.length; i++) if (before[i] !== after[i]) assert.equal(after[i], 2, `${CLIENTS[i]} moved ${before[i]} → ${after[i]}`);
    const moved = before.filter((index, i) => index !== after[i]).length;
    // c's share goes from 10/100 to 30/120 = 25 %: about 150 clients.
    assert.ok(moved >= 100 && moved <= 200, `${moved} moved`);
  });

  test('three backends: a client moves from i to j only when j gained weight relative to i', () => {
    const weights = [50, 40, 10];
    const changed = [50, 30, 20]; // b gives 10 to c
    const before = assign(['a', 'b', 'c'], weights);
    const after = assign(['a', 'b', 'c'], changed);
    for (let i = 0; i < CLIENTS.length; i++) {
      const [from, to] = [before[i]!, after[i]!];
      if (from === to) continue;
      assert.ok(changed[to]! / changed[from]! > weights[to]! / weights[from]!, `${CLIENTS[i]} moved ${from} → ${to}`);
    }
  });

  test('weight 0 gets nobody; an unusable backend hands its clients to their next choice only', () => {
    assert.deepEqual(count(assign(['stable', 'canary'], [100, 0]), 2), [1000, 0]);
    const affinity = new ClientAffinity([40, 30, 30], ['a', 'b', 'c']);
    for (const client of CLIENTS.slice(0, 200)) {
      const hash = clientAddressHash(client);
      const first = affinity.pick(everyone, hash);
      const second = affinity.pick((i) => i !== first, hash);
      const third = affinity.pick((i) => i !== first && i !== second, hash);
      assert.deepEqual(new Set([first, second, third]), new Set([0, 1, 2]));
    }
  });

  test('an IPv4 client is the same client on a dual-stack socket (::ffff:a.b.c.d)', () => {
    assert.equal(clientAddressHash('::ffff:10.1.2.3'), clientAddressHash('10.1.2.3'));
    assert.notEqual(clientAddressHash('::1'), clientAddressHash('1'));
  });

  test('another process gives the same answers (a second replica, a restart)', () => {
    const code = `
      const { ClientAffinity, clientAddressHash } = await import(${JSON.stringify(new URL('../../src/dataplane/affinity.ts', import.meta.url).href)});
      const clients = JSON.parse(process.argv[1]);
      const affinity = new ClientAffinity([70, 30], ['stable', 'canary']);
      console.log(JSON.stringify(clients.map((c) => affinity.pick(() => true, clientAddressHash(c)))));`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', code, JSON.stringify(CLIENTS)], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(child.status, 0, child.stderr);
    assert.deepEqual(JSON.parse(child.stdout) as number[], assign(['stable', 'canary'], [70, 30]));
  });
});
