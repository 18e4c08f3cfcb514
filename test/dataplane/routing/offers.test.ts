// What a held-out backend was offered (chooseBackend's second rotation, routing.ts): the new
// connections its weight alone would have given it while passive health held it out, counted on
// it, and nothing else — not the failover retries, not while every backend is in, not when every
// weighted one is out (then all are tried, and what is offered is served).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateConfig } from '../../../src/config/validate.ts';
import { BackendHealth } from '../../../src/dataplane/choice/passive-health.ts';
import { buildSnapshot, chooseBackend, type ListenerSnapshot } from '../../../src/dataplane/routing/routing.ts';
import { BackendStats, ListenerStats } from '../../../src/dataplane/stats/stats.ts';

const NOW = 1_000_000;

function listener(weights: { stable: number; canary: number }, balance: 'wrr' | 'random' = 'wrr'): ListenerSnapshot {
  const config = validateConfig(
    {
      listeners: [
        {
          name: 'web',
          listen: '127.0.0.1:8080',
          balance,
          backends: [
            { name: 'stable', host: '127.0.0.1', port: 9001, weight: weights.stable },
            { name: 'canary', host: '127.0.0.1', port: 9002, weight: weights.canary },
          ],
        },
      ],
    },
    'test config',
  ).listeners[0]!;
  return buildSnapshot(config, new ListenerStats(), () => ({ health: new BackendHealth(), stats: new BackendStats() }));
}

const takeOut = (snapshot: ListenerSnapshot, name: string) => {
  const backend = snapshot.backends.find((candidate) => candidate.config.name === name)!;
  backend.health.recordFailure(NOW, 1, 10_000);
  backend.stats.takenOut(NOW, 10_000, 'connect');
  return backend;
};

/** `connections` new connections, each with its first pick only (no failover); by backend name. */
function connect(snapshot: ListenerSnapshot, connections: number): Record<string, number> {
  const chosen: Record<string, number> = {};
  for (let i = 0; i < connections; i++) {
    const name = snapshot.backends[chooseBackend(snapshot, null, NOW, i, null)]!.config.name;
    chosen[name] = (chosen[name] ?? 0) + 1;
  }
  return chosen;
}

/** What the canary was offered while out, as the failed checks of its episode resolve it: a probe failing past its grace counts them all. */
function offeredToCanary(snapshot: ListenerSnapshot): number {
  const canary = snapshot.backends.find((candidate) => candidate.config.name === 'canary')!;
  canary.stats.heldOut.probeFailed(NOW + 10_000, 10_000);
  return canary.stats.heldOut.failed.connect;
}

describe('what the weights offered a held-out backend', () => {
  for (const [weights, expected] of [
    [{ stable: 50, canary: 50 }, 500],
    [{ stable: 80, canary: 20 }, 200],
    [{ stable: 99, canary: 1 }, 10],
  ] as const) {
    it(`at ${weights.canary} % its weight's share of new connections (${expected} of 1 000, by wrr), all served by the others`, () => {
      const snapshot = listener(weights);
      takeOut(snapshot, 'canary');
      assert.deepEqual(connect(snapshot, 1_000), { stable: 1_000 });
      assert.equal(offeredToCanary(snapshot), expected);
    });
  }

  it('by random balancing, near its share', () => {
    const snapshot = listener({ stable: 50, canary: 50 }, 'random');
    takeOut(snapshot, 'canary');
    connect(snapshot, 2_000);
    const offered = offeredToCanary(snapshot);
    assert.ok(offered > 850 && offered < 1_150, `${offered} of 2 000 at 50 %`);
  });

  it('nothing while every backend is in', () => {
    const snapshot = listener({ stable: 50, canary: 50 });
    assert.deepEqual(connect(snapshot, 100), { stable: 50, canary: 50 });
    assert.equal(offeredToCanary(snapshot), 0);
  });

  it('nothing when every weighted backend is out: they are tried anyway', () => {
    const snapshot = listener({ stable: 50, canary: 50 });
    takeOut(snapshot, 'canary');
    takeOut(snapshot, 'stable');
    assert.deepEqual(connect(snapshot, 100), { stable: 50, canary: 50 });
    assert.equal(offeredToCanary(snapshot), 0);
  });

  it('nothing at weight 0: no traffic was its due', () => {
    const snapshot = listener({ stable: 100, canary: 0 });
    takeOut(snapshot, 'canary');
    connect(snapshot, 100);
    assert.equal(offeredToCanary(snapshot), 0);
  });

  it("a failover retry is no new offer: only a connection's first pick counts", () => {
    const snapshot = listener({ stable: 50, canary: 50 });
    takeOut(snapshot, 'canary');
    for (let i = 0; i < 100; i++) chooseBackend(snapshot, new Set([0]), NOW, i, null);
    assert.equal(offeredToCanary(snapshot), 0);
  });

  it('the offers rotation keeps its place across a reload that keeps the weights', () => {
    const first = listener({ stable: 50, canary: 50 });
    const canary = takeOut(first, 'canary');
    connect(first, 3);
    const reloaded = buildSnapshot(
      first.config,
      first.stats,
      (backend) => first.backends.find((b) => b.config.name === backend.name)!,
      first,
    );
    connect(reloaded, 997);
    assert.equal(reloaded.offers, first.offers);
    canary.stats.heldOut.probeFailed(NOW + 10_000, 10_000);
    assert.equal(canary.stats.heldOut.failed.connect, 500);
  });
});
