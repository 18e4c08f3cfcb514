// A rebalance as it plays out over live flows (src/dataplane/flows/lifetimes.ts), without sockets: the ends
// it scheduled are checked again when they fall due, a reload can call it off, and a reload that
// only reorders the backends is no weight change.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, test } from 'node:test';
import { validateConfig } from '../../../src/config/validate.ts';
import type { ListenerConfig } from '../../../src/config/types.ts';
import { FlowLifetimes } from '../../../src/dataplane/flows/lifetimes.ts';
import { LiveFlow } from '../../../src/dataplane/flows/live-flow.ts';
import { BackendHealth } from '../../../src/dataplane/choice/passive-health.ts';
import { buildSnapshot, chooseBackend, type ListenerSnapshot } from '../../../src/dataplane/routing/routing.ts';
import { BackendStats, ListenerStats } from '../../../src/dataplane/stats/stats.ts';

/** One listener's backends b0, b1… with these weights; the same runtime (stats, health) per name across reloads. */
function snapshots() {
  const runtimes = new Map<string, { health: BackendHealth; stats: BackendStats }>();
  const listenerStats = new ListenerStats();
  return (
    weights: readonly number[],
    extra: Partial<ListenerConfig> = {},
    previous?: ListenerSnapshot,
    order?: readonly number[],
  ): ListenerSnapshot => {
    const backends = (order ?? weights.map((_, i) => i)).map((i) => ({
      name: `b${i}`,
      host: '127.0.0.1',
      port: 21_101 + i,
      weight: weights[i]!,
    }));
    const config = validateConfig({ listeners: [{ name: 'l', listen: '127.0.0.1:21100', ...extra, backends }] }, 'test')
      .listeners[0]!;
    return buildSnapshot(
      config,
      listenerStats,
      (backend) => {
        if (!runtimes.has(backend.name))
          runtimes.set(backend.name, { health: new BackendHealth(), stats: new BackendStats() });
        return runtimes.get(backend.name)!;
      },
      previous,
    );
  };
}

/** A flow that leaves its set the moment it is ended, as a client that hangs up at once would. */
class Flow extends LiveFlow {
  readonly #lifetimes: FlowLifetimes;
  readonly #clientHash: number;
  constructor(snapshot: ListenerSnapshot, backend: number, lifetimes: FlowLifetimes, clientHash = 1) {
    super(snapshot.backends[backend]!, performance.now());
    this.#lifetimes = lifetimes;
    this.#clientHash = clientHash;
  }
  clientHash(): number {
    return this.#clientHash;
  }
  protected endGracefully(): void {
    this.#lifetimes.delete(this);
  }
}

/** Ten flows on b0 at 100/0, then a reload to 50/50 with `windowMs`: five of them are to move. */
function startRebalance(windowMs: number) {
  const snapshot = snapshots();
  const before = snapshot([100, 0], { rebalanceWindowMs: windowMs });
  const lifetimes = new FlowLifetimes(before, { idleTimeout: false });
  const flows = Array.from({ length: 10 }, () => new Flow(before, 0, lifetimes));
  for (const flow of flows) lifetimes.add(flow);
  const rebalancing = snapshot([50, 50], { rebalanceWindowMs: windowMs }, before);
  lifetimes.update(rebalancing);
  return { snapshot, lifetimes, flows, rebalancing };
}

const endedByRebalance = (snapshot: ListenerSnapshot) =>
  snapshot.backends.reduce((sum, backend) => sum + backend.stats.ended.rebalance, 0);

describe('a rebalance over live flows', { timeout: 10_000 }, () => {
  test('ends that are no longer needed when they fall due are skipped, and so are their replacements', async () => {
    const { lifetimes, flows, rebalancing: after } = startRebalance(200);
    const scheduled = flows.filter((flow) => flow.endAt !== Infinity);
    assert.equal(scheduled.length, 5, '10 live at 100/0 → 50/50: five to move');
    // The other five close by themselves: of the five left on b0, 50/50 needs two or three moved, not five.
    for (const flow of flows.filter((flow) => flow.endAt === Infinity)) lifetimes.delete(flow);
    await sleep(400);
    assert.equal(endedByRebalance(after), 2);
    const replacements = [0, 1].map(() => chooseBackend(after, null, Date.now(), -1, lifetimes.steering));
    assert.deepEqual(replacements, [1, 1], 'the two ended are owed to b1');
    assert.equal(lifetimes.steering, null, 'and nothing more is owed');
  });

  for (const [what, weights] of [
    ['the same weights', [50, 50]],
    ['the weights back as they were', [100, 0]],
  ] as const) {
    test(`a reload with the window off calls the rebalance off (${what}): nothing more ends, nothing is steered`, async () => {
      const { snapshot, lifetimes, rebalancing } = startRebalance(300);
      assert.notEqual(lifetimes.steering, null);
      const off = snapshot(weights, {}, rebalancing);
      lifetimes.update(off);
      assert.equal(lifetimes.steering, null);
      await sleep(450);
      assert.equal(endedByRebalance(off), 0);
    });
  }

  test('steering never sends a new connection to a backend whose weight went to 0', () => {
    const { snapshot, lifetimes } = startRebalance(60_000);
    const steering = lifetimes.steering;
    assert.notEqual(steering, null);
    // The same steering against weights where b1 takes nothing: it must fall through to the balancer.
    const b1Off = snapshot([100, 0], { rebalanceWindowMs: 60_000 });
    assert.equal(chooseBackend(b1Off, null, Date.now(), -1, steering), 0);
    lifetimes.stop();
  });

  test('a reload that only reorders the backends ends nothing', async () => {
    const snapshot = snapshots();
    const before = snapshot([50, 50], { rebalanceWindowMs: 100 });
    const lifetimes = new FlowLifetimes(before, { idleTimeout: false });
    for (let i = 0; i < 10; i++) lifetimes.add(new Flow(before, i < 8 ? 0 : 1, lifetimes));
    const reordered = snapshot([50, 50], { rebalanceWindowMs: 100 }, before, [1, 0]);
    lifetimes.update(reordered);
    await sleep(250);
    assert.equal(endedByRebalance(reordered), 0, 'the live split is off 50/50, but the weights did not change');
    // A real change after it still rebalances: 8/2 at 50/50 → 20/80 (b0 is listed second now).
    const changed = snapshot([20, 80], { rebalanceWindowMs: 100 }, reordered, [1, 0]);
    lifetimes.update(changed);
    await sleep(250);
    assert.equal(endedByRebalance(changed), 6);
  });

  test('with affinity, clients that now belong to a backend passive health took out stay where they are', async () => {
    const snapshot = snapshots();
    const before = snapshot([100, 0], { rebalanceWindowMs: 100, affinity: 'clientIP' });
    const lifetimes = new FlowLifetimes(before, { idleTimeout: false });
    for (let i = 0; i < 40; i++) lifetimes.add(new Flow(before, 0, lifetimes, (i * 2_654_435_761) >>> 0));
    before.backends[1]!.health.recordFailure(Date.now(), 1, 60_000);
    const raised = snapshot([50, 50], { rebalanceWindowMs: 100, affinity: 'clientIP' }, before);
    lifetimes.update(raised);
    await sleep(250);
    assert.equal(endedByRebalance(raised), 0, 'their new backend is down: they would only come back');
  });

  test('a listener with no policy in force does not look at its other flows when one is added (a UDP flood stays linear)', () => {
    const snapshot = snapshots();
    const plain = snapshot([90, 10]);
    const lifetimes = new FlowLifetimes(plain, { idleTimeout: false });
    let looks = 0;
    for (let i = 0; i < 2_000; i++) {
      const flow = new Flow(plain, 0, lifetimes);
      let endAt = flow.endAt;
      Object.defineProperty(flow, 'endAt', {
        get: () => {
          looks++;
          return endAt;
        },
        set: (value: number) => (endAt = value),
      });
      lifetimes.add(flow);
    }
    assert.ok(looks < 2_000, `${looks} looks at the flows' schedules for 2 000 adds`);
    lifetimes.stop();
  });

  test('every weight at 0 ends nothing, with or without affinity', async () => {
    for (const affinity of ['none', 'clientIP'] as const) {
      const snapshot = snapshots();
      const before = snapshot([50, 50], { rebalanceWindowMs: 100, affinity });
      const lifetimes = new FlowLifetimes(before, { idleTimeout: false });
      for (let i = 0; i < 6; i++) lifetimes.add(new Flow(before, i % 2, lifetimes));
      const off = snapshot([0, 0], { rebalanceWindowMs: 100, affinity }, before);
      lifetimes.update(off);
      await sleep(250);
      assert.equal(endedByRebalance(off), 0, `affinity ${affinity}`);
    }
  });
});
