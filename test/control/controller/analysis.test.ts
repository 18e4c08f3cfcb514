// The analysis with confidence (issue 21) end to end, with real traffic through the kube-proxy
// simulation and `analysis: {interval: 1s, minSamples: 10, failureLimit: 2}` as a new user writes it:
// - a canary as good as its stable, both resetting 3 % of connections at random, over 20+ intervals
//   of ~25 canary samples: not rolled back;
// - a canary resetting 15 % against a stable resetting 3 %: rolled back, the condition giving counts;
// - a dead canary: rolled back within failureLimit × interval plus one passive-health timeout.
// The simulation accepts a connection before it knows its endpoint refuses, then resets it (a
// userspace stand-in for kube-proxy's REJECT cannot refuse the handshake): a refusing canary reaches
// the proxy as resets, never as connect errors and passive-health take-outs. Those — the 1.5 s blip,
// the dead canary held out and probed — are judged on a live data plane in
// test/control/progress/live.test.ts.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Socket } from 'node:net';
import type { AnalysisSpec, CanaryServiceSpec } from '../../../src/api/spec-types.ts';
import type { CanaryRelease } from '../../../src/api/release-types.ts';
import { DEFAULT_FAIL_TIMEOUT_MS } from '../../../src/defaults.ts';
import { seededRandom } from '../../support/seeded-random.ts';
import { startTcpBackend, type TcpBackend } from '../../support/net/backends.ts';
import {
  conditionOf,
  createRelease,
  getRelease,
  startProxy,
  waitForRelease,
  type InProcessProxy,
} from '../../support/cluster/release-cluster.ts';
import { podAt, startTestbed, startTraffic, type Testbed, type Traffic } from '../../support/cluster/testbed.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { sleep } from '../../support/wait.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);

const INTERVAL_MS = 1_000;
const FAILURE_LIMIT = 2;
const PROXY_BASES = {
  equal: await freePortBlock(10),
  worse: await freePortBlock(10),
  dead: await freePortBlock(10),
  half: await freePortBlock(10),
  fifth: await freePortBlock(10),
};

const analysis = (thresholds: AnalysisSpec['thresholds']): AnalysisSpec => ({
  interval: `${INTERVAL_MS / 1000}s`,
  minSamples: 10,
  failureLimit: FAILURE_LIMIT,
  thresholds,
});
const THRESHOLDS: AnalysisSpec['thresholds'] = { connectErrorRate: { max: 0.05 }, resetRate: { maxAboveStable: 0.02 } };

const entry = (service: string, port: number): CanaryServiceSpec => ({
  service,
  canaryServiceOperations: { add: { version: 'v2' } },
  ports: [{ port, protocol: 'TCP' }],
});

const manifest = (name: string, port: number, targetPort: number) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name },
  spec: { selector: { app: name, version: 'v1' }, ports: [{ name: 'main', port, targetPort, protocol: 'TCP' }] },
});

/** A server answering `answer`, resetting each connection with probability `resetShare` (seeded: the same resets each run). */
function resetting(answer: string, resetShare: number, seed: number, host: string, port: number): Promise<TcpBackend> {
  const random = seededRandom(seed);
  return startTcpBackend(
    (socket: Socket) => {
      if (random() < resetShare) socket.resetAndDestroy();
      else socket.end(answer);
    },
    host,
    port,
  );
}

const rolledBack = (release: CanaryRelease | undefined) => release?.status?.transition?.reason === 'AnalysisFailed';

describe('analysis with confidence, with real traffic', { timeout: 150_000 }, () => {
  let bed: Testbed;
  const proxies: InProcessProxy[] = [];
  const servers: TcpBackend[] = [];
  const traffic: Traffic[] = [];

  before(async () => {
    bed = await startTestbed(serviceNet.cidr, podNet.prefix);
  });

  after(async () => {
    await Promise.all(traffic.map((item) => item.stop()));
    await Promise.all(proxies.map((proxy) => proxy.stop()));
    await Promise.all(servers.map((server) => server.close()));
    await bed.stop();
  });

  /**
   * A Service `name` (port 9000 + index, target 8000 + index), its stable pod and a canary pod
   * (Ready; `canary` serves it, or nothing does), a proxy, a release at 50 % held there, and
   * clients through the Service from once it serves.
   */
  async function release(
    name: string,
    index: number,
    stable: (host: string, port: number) => Promise<TcpBackend>,
    canary: ((host: string, port: number) => Promise<TcpBackend>) | undefined,
    pauseMs: number,
    spec = analysis(THRESHOLDS),
  ): Promise<{ clients: Traffic; servingAt: number }> {
    const [servicePort, targetPort, stableIp, canaryIp] = [
      9000 + index,
      8000 + index,
      `${podNet.prefix}.${10 + 2 * index}`,
      `${podNet.prefix}.${11 + 2 * index}`,
    ];
    await bed.kubectl(
      'apply',
      '-f',
      await bed.kubectl.manifest(`${name}.yaml`, manifest(name, servicePort, targetPort)),
    );
    servers.push(await stable(stableIp, targetPort));
    if (canary !== undefined) servers.push(await canary(canaryIp, targetPort));
    await podAt(bed, `${name}-v1`, { app: name, version: 'v1' }, stableIp, targetPort, 'TCP');
    await podAt(bed, `${name}-v2`, { app: name, version: 'v2' }, canaryIp, targetPort, 'TCP');
    await bed.startProxyPod(`${name}-v2`);
    proxies.push(await startProxy(bed.cluster, `${name}-v2`, PROXY_BASES[name as keyof typeof PROXY_BASES]));
    await createRelease(bed.cluster, `${name}-v2`, {
      services: [entry(name, servicePort)],
      steps: [{ weight: 50, pause: {} }],
      analysis: spec,
    });
    await waitForRelease(
      bed.cluster,
      `${name}-v2`,
      'the Service taken over',
      (found) => found?.status?.stepStartedAt !== undefined,
      20_000,
    );
    const ip = await bed.clusterIp(name);
    const clients = startTraffic(() => ip, servicePort, 'TCP', { pauseMs, maxMs: 90_000 });
    traffic.push(clients);
    return { clients, servingAt: Date.now() };
  }

  /** Every interval judged until `ms` from now, by its end: verdict, failures, canary samples. */
  async function watch(
    name: string,
    ms: number,
  ): Promise<{
    intervals: Map<string, { verdict: string; failures: number; samples: number }>;
    release: CanaryRelease | undefined;
  }> {
    const intervals = new Map<string, { verdict: string; failures: number; samples: number }>();
    const until = Date.now() + ms;
    let found: CanaryRelease | undefined;
    while (Date.now() < until) {
      found = await getRelease(bed.cluster, `${name}-v2`);
      const judged = found?.status?.analysis;
      if (judged !== undefined)
        intervals.set(judged.at, { verdict: judged.verdict, failures: judged.failures, samples: judged.samples });
      if (rolledBack(found)) break;
      await sleep(150);
    }
    return { intervals, release: found };
  }

  it('a canary as good as its stable, both resetting 3 % at random, over 20+ intervals of ~25 samples, is not rolled back', async (t) => {
    await release(
      'equal',
      1,
      (host, port) => resetting('stable', 0.03, 3, host, port),
      (host, port) => resetting('canary', 0.03, 4, host, port),
      15,
    );
    const { intervals, release: found } = await watch('equal', 24 * INTERVAL_MS);
    const judged = [...intervals.values()];
    const samples = judged.map((item) => item.samples);
    t.diagnostic(
      `${judged.length} intervals, canary samples per interval ${Math.min(...samples)}–${Math.max(...samples)} (mean ${Math.round(samples.reduce((a, b) => a + b, 0) / samples.length)}); ` +
        `verdicts ${judged.map((item) => item.verdict[0]).join('')}`,
    );
    assert.ok(judged.length >= 20, `20+ intervals judged: ${judged.length}`);
    assert.ok(samples.reduce((a, b) => a + b, 0) / samples.length >= 10, 'each with samples');
    assert.equal(rolledBack(found), false, `not rolled back: ${found?.status?.analysis?.message}`);
  });

  it('a canary resetting 15 % against a stable resetting 3 % is rolled back, the Failure condition giving counts', async (t) => {
    const { servingAt } = await release(
      'worse',
      2,
      (host, port) => resetting('stable', 0.03, 5, host, port),
      (host, port) => resetting('canary', 0.15, 6, host, port),
      5,
    );
    const found = await waitForRelease(bed.cluster, 'worse-v2', 'rolled back', rolledBack, 60_000);
    t.diagnostic(
      `rolled back ${Date.now() - servingAt} ms after it began serving: ${conditionOf(found, 'Failure')?.message}`,
    );
    assert.equal(conditionOf(found, 'Failure')?.reason, 'AnalysisFailed');
    assert.match(
      conditionOf(found, 'Failure')?.message ?? '',
      /failed 2 analysis interval\(s\) in a row: resetRate: canary \d+ of [\d ]+, stable \d+ of [\d ]+, threshold maxAboveStable 0.02, 99 % confidence/,
    );
  });

  it('a canary resetting every other connection is rolled back within failureLimit × interval plus one passive-health timeout, its resets named with counts', async (t) => {
    const spec: AnalysisSpec = {
      interval: '2s',
      minSamples: 10,
      failureLimit: FAILURE_LIMIT,
      thresholds: { resetRate: { max: 0.1 }, connectErrorRate: { max: 0.05 } },
    };
    const { servingAt, clients } = await release(
      'half',
      4,
      (host, port) => resetting('stable', 0, 8, host, port),
      (host, port) => resetting('canary', 0.5, 9, host, port),
      5,
      spec,
    );
    const found = await waitForRelease(bed.cluster, 'half-v2', 'rolled back', rolledBack, 30_000);
    const afterMs = Date.now() - servingAt;
    const offered = clients.attempts.length / 2 / (clients.now() / 2_000);
    t.diagnostic(
      `rolled back ${afterMs} ms after it began serving (~${Math.round(offered)} connections offered the canary per interval): ${conditionOf(found, 'Failure')?.message}`,
    );
    assert.ok(offered >= 20, 'at 20 or more connections offered the canary per interval');
    assert.ok(
      afterMs <= FAILURE_LIMIT * 2_000 + DEFAULT_FAIL_TIMEOUT_MS,
      `within failureLimit × interval + one passive-health timeout (${afterMs} ms)`,
    );
    assert.match(
      conditionOf(found, 'Failure')?.message ?? '',
      /resetRate: canary \d+ of \d+/,
      "the canary's fault, resets, is the one named",
    );
  });

  it('a canary resetting 20 % against a stable resetting 3 % at weight 50, ~25 connections offered it per interval, gated on resetRate maxAboveStable alone, is rolled back within 10 intervals', async (t) => {
    const spec = analysis({ resetRate: { maxAboveStable: 0.02 } });
    const { servingAt, clients } = await release(
      'fifth',
      5,
      (host, port) => resetting('stable', 0.03, 10, host, port),
      (host, port) => resetting('canary', 0.2, 11, host, port),
      8,
      spec,
    );
    const found = await waitForRelease(bed.cluster, 'fifth-v2', 'rolled back', rolledBack, 15_000);
    const afterMs = Date.now() - servingAt;
    // Its weight's half of the clients' connections, per interval.
    const offered = clients.attempts.length / 2 / (clients.now() / INTERVAL_MS);
    t.diagnostic(
      `rolled back ${afterMs} ms after it began serving (~${Math.round(offered)} connections offered the canary per interval): ${conditionOf(found, 'Failure')?.message}`,
    );
    assert.ok(offered >= 15 && offered <= 60, `about 25 offered per interval (${Math.round(offered)})`);
    assert.ok(afterMs <= 10 * INTERVAL_MS + 1_000, `within 10 intervals (${afterMs} ms)`);
    assert.match(
      conditionOf(found, 'Failure')?.message ?? '',
      /resetRate: canary \d+ of \d+, stable \d+ of \d+, threshold maxAboveStable 0.02/,
    );
  });

  it('a dead canary (every connection refused: reset by the simulation) is rolled back within failureLimit × interval plus one passive-health timeout', async (t) => {
    const { servingAt } = await release(
      'dead',
      3,
      (host, port) => resetting('stable', 0, 7, host, port),
      undefined,
      10,
    );
    const found = await waitForRelease(bed.cluster, 'dead-v2', 'rolled back', rolledBack, 30_000);
    const afterMs = Date.now() - servingAt;
    t.diagnostic(`rolled back ${afterMs} ms after it began serving: ${conditionOf(found, 'Failure')?.message}`);
    assert.ok(
      afterMs <= FAILURE_LIMIT * INTERVAL_MS + DEFAULT_FAIL_TIMEOUT_MS + 2_500,
      `within failureLimit × interval + one passive-health timeout (${afterMs} ms)`,
    );
    const counted =
      /resetRate: canary (\d+) of (\d+), stable 0 of [\d ]+, threshold maxAboveStable 0.02, 99 % confidence/.exec(
        conditionOf(found, 'Failure')?.message ?? '',
      );
    assert.ok(counted !== null, conditionOf(found, 'Failure')?.message);
    // Every connection was reset; one whose reset fell in the next interval may be counted apart.
    const [resets, connections] = [Number(counted[1]), Number(counted[2])];
    assert.ok(
      connections > 0 && resets >= connections - 1,
      `the condition counts the resets: ${resets} of ${connections}`,
    );
  });
});
