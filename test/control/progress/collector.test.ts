// The leader's collector of every replica's counters: a replica that answers garbage (another
// version, a broken one) is left out and never stops the counting; one that answers is summed; where
// each replica's /stats is, by its pod.

import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { once } from 'node:events';
import { after, describe, it } from 'node:test';
import pino from 'pino';
import type { V1Pod } from '@kubernetes/client-node';
import type { Evidence } from '../../../src/control/progress/analysis/evidence.ts';
import {
  EvidenceCollector,
  intervalCounts,
  parseSnapshot,
  replicaStatsUrls,
} from '../../../src/control/progress/collector.ts';
import type { BackendCounters, CounterSnapshot } from '../../../src/counters/snapshot.ts';
import { waitFor } from '../../support/wait.ts';

const BUCKETS = [1, 10];
const snapshot = (instance: string, connections: number): CounterSnapshot => ({
  instance,
  latencyBucketsMs: BUCKETS,
  weights: { l: { canary: 10, forked: 90 } },
  listeners: {
    l: {
      canary: {
        connections,
        connectErrors: 0,
        resets: 0,
        connectLatency: [connections, 0],
        sessionsReplied: 0,
        markedDown: 0,
      },
    },
  },
});

async function serve(answer: () => string): Promise<{ url: string; server: Server }> {
  const server = createServer((_request, response) => response.end(answer()));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  return {
    url: `http://127.0.0.1:${typeof address === 'object' && address !== null ? address.port : 0}/stats`,
    server,
  };
}

describe('the evidence collector', { timeout: 30_000 }, () => {
  const servers: Server[] = [];
  after(() => {
    for (const server of servers) server.close();
  });

  it('sums the replicas that answer counters; one answering garbage is left out, and counting goes on', async () => {
    let local = 0;
    let remote = 0;
    const garbage = [
      'null',
      '{}',
      '{"instance":"x","listeners":{"l":{"canary":{"connections":"many"}}},"weights":{}}',
      'not json',
    ];
    let served = 0;
    const good = await serve(() => JSON.stringify(snapshot('other', (remote += 5))));
    const bad = await serve(() => garbage[served++ % garbage.length]!);
    // This replica's own pod is among the proxy pods: its /stats is told apart by its instance.
    const own = await serve(() => JSON.stringify(snapshot('self', local)));
    servers.push(good.server, bad.server, own.server);
    const evidence: Evidence[] = [];
    const collector = new EvidenceCollector({
      local: () => snapshot('self', (local += 3)),
      replicas: () => [good.url, bad.url, own.url],
      intervalMs: () => 1000,
      active: () => true,
      onEvidence: (item) => evidence.push(item),
      log: pino({ level: 'silent' }),
    });
    collector.start();
    try {
      await waitFor(() => evidence.length >= 3, 'three intervals despite a replica answering garbage', 10_000);
    } finally {
      await collector.stop();
    }
    assert.equal(
      evidence.length,
      served - 1,
      'every interval after the first (a baseline) counted, whatever the broken replica answered',
    );
    for (const item of evidence) {
      assert.equal(item.replicas, 2, 'this replica (counted once) and the one that answers counters');
      assert.equal(item.listeners.l?.canary?.connections, 8, '3 here and 5 there per interval');
      assert.deepEqual(item.weightsMoved, []);
    }
  });

  it("every counter an interval judges is that interval's: connect errors, resets, latencies, UDP replies, take-outs and held-out offers too, not only connections", () => {
    const at = (counters: BackendCounters): CounterSnapshot => ({
      instance: 'a',
      latencyBucketsMs: BUCKETS,
      weights: { l: { canary: 10, forked: 90 } },
      listeners: { l: { canary: counters } },
    });
    const earlier = at({
      connections: 100,
      connectErrors: 7,
      connectResets: 3,
      resets: 5,
      connectLatency: [60, 40],
      sessionsReplied: 40,
      markedDown: 2,
      outMs: 20_000,
      heldOut: { connect: 40, reset: 3 },
    });
    const later = at({
      connections: 130,
      connectErrors: 9,
      connectResets: 4,
      resets: 6,
      connectLatency: [80, 50],
      sessionsReplied: 55,
      markedDown: 3,
      outMs: 30_000,
      heldOut: { connect: 65, reset: 3 },
    });
    assert.deepEqual(intervalCounts(new Map([['a', earlier]]), [later]).listeners.l?.canary, {
      connections: 30,
      connectErrors: 2,
      connectResets: 1,
      resets: 1,
      connectLatency: [20, 10],
      sessionsReplied: 15,
      markedDown: 1,
      outMs: 10_000,
      heldOut: { connect: 25, reset: 0 },
    });
    // A canary whose only error, reset and take-out came early has none in a later interval.
    assert.deepEqual(
      intervalCounts(new Map([['a', later]]), [
        at({ ...later.listeners.l!.canary!, connections: 160, connectLatency: [110, 50], sessionsReplied: 85 }),
      ]).listeners.l?.canary,
      {
        connections: 30,
        connectErrors: 0,
        connectResets: 0,
        resets: 0,
        connectLatency: [30, 0],
        sessionsReplied: 30,
        markedDown: 0,
        outMs: 0,
        heldOut: { connect: 0, reset: 0 },
      },
    );
  });

  it('a replica of a version before held-out offers were counted is summed with one after: its share of them none', () => {
    const at = (instance: string, counters: BackendCounters): CounterSnapshot => ({
      instance,
      latencyBucketsMs: BUCKETS,
      weights: { l: { canary: 10, forked: 90 } },
      listeners: { l: { canary: counters } },
    });
    const old = {
      connections: 10,
      connectErrors: 0,
      resets: 0,
      connectLatency: [10, 0],
      sessionsReplied: 0,
      markedDown: 0,
    };
    const previous = new Map([
      ['old', at('old', old)],
      ['new', at('new', { ...old, heldOut: { connect: 5, reset: 0 } })],
    ]);
    const counted = intervalCounts(previous, [
      at('old', { ...old, connections: 20 }),
      at('new', { ...old, connections: 20, heldOut: { connect: 12, reset: 1 } }),
    ]);
    assert.deepEqual(counted.listeners.l?.canary?.heldOut, { connect: 7, reset: 1 });
    assert.equal(
      parseSnapshot({ ...at('new', { ...old, heldOut: { connect: -1, reset: 0 } }) }, BUCKETS),
      undefined,
      'a broken count is no snapshot to sum',
    );
  });

  it("finds each Ready proxy pod's /stats: --admin-port in its args, a port named admin, else 9090", () => {
    const pod = (name: string, container: NonNullable<V1Pod['spec']>['containers'][number], ready = true): V1Pod => ({
      metadata: { name, labels: { 'canary-l4.io/release': 'web-v2' } },
      spec: { containers: [container] },
      status: {
        phase: 'Running',
        podIP: `10.0.0.${name.length}`,
        conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }],
      },
    });
    const urls = replicaStatsUrls(
      [
        pod('a', {
          name: 'proxy',
          args: ['proxy', '--admin-port', '9191'],
          ports: [{ name: 'admin', containerPort: 9090 }],
        }),
        pod('bb', { name: 'proxy', args: ['proxy', '--admin-port=9292'] }),
        pod('ccc', { name: 'proxy', args: ['proxy'], ports: [{ name: 'admin', containerPort: 9393 }] }),
        pod('dddd', { name: 'proxy', args: ['proxy'] }),
        pod('eeeee', { name: 'proxy', args: ['proxy'] }, false),
        pod('ffffff', { name: 'sidecar', args: ['serve'] }),
      ],
      { 'canary-l4.io/release': 'web-v2' },
    );
    assert.deepEqual(urls, [
      'http://10.0.0.1:9191/stats',
      'http://10.0.0.2:9292/stats',
      'http://10.0.0.3:9393/stats',
      'http://10.0.0.4:9090/stats',
    ]);
  });
});
