// The analysis judged on a real data plane's counters, with real connections: a canary that refuses
// its first connections (a slow start) and one that refuses every connection, recovery probes too.
// Passive health takes each out after one refusal; the counts the collector would read every
// interval (snapshot less the previous one) are judged as the leader judges them.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { judge } from '../../../src/control/progress/analysis/verdict.ts';
import type { Evidence } from '../../../src/control/progress/analysis/evidence.ts';
import { intervalCounts } from '../../../src/control/progress/collector.ts';
import type { CounterSnapshot } from '../../../src/counters/snapshot.ts';
import { snapshotCounters } from '../../../src/dataplane/stats/counters.ts';
import type { AnalysisSpec } from '../../../src/api/spec-types.ts';
import type { AnalysisStatus, PortStatus } from '../../../src/api/status-types.ts';
import { askName, startTcpBackend, type TcpBackend } from '../../support/net/backends.ts';
import { freePort } from '../../support/net/free-ports.ts';
import { applyOnFreePort, createPlane, type TestPlane } from '../../support/dataplane/test-plane.ts';
import { sleep } from '../../support/wait.ts';

const INTERVAL_MS = 500;
const FAIL_TIMEOUT_MS = 3_000;
const SPEC: AnalysisSpec = {
  minSamples: 10,
  failureLimit: 2,
  thresholds: { connectErrorRate: { max: 0.05 }, resetRate: { maxAboveStable: 0.02 } },
};
const PORT: PortStatus = {
  service: 'web',
  port: 80,
  protocol: 'TCP',
  proxyPort: 0,
  weight: 50,
  override: null,
  served: 50,
};

interface Run {
  readonly statuses: AnalysisStatus[];
  /** Client connections that failed (the proxy tries the other backend when one refuses: none should). */
  readonly failed: number;
  /** Milliseconds from the start of the run: passive health first took the canary out; the canary first served a connection. */
  readonly takenOutAt: number | undefined;
  readonly servedAt: number | undefined;
  /** Milliseconds from the start of the run the failures reached failureLimit (2). */
  readonly rolledBackAt: number | undefined;
}

describe('the analysis on a live data plane: refusals taken out by passive health', { timeout: 120_000 }, () => {
  let plane: TestPlane;
  let stable: TcpBackend;
  const servers: TcpBackend[] = [];

  before(async () => {
    plane = createPlane();
    stable = await startTcpBackend((socket) => socket.end('stable'));
  });
  after(async () => {
    await plane.close();
    await Promise.all([stable, ...servers].map((server) => server.close()));
  });

  /**
   * Clients one at a time through a 50/50 listener, judged every INTERVAL_MS, for `ms`, the canary
   * starting to listen at `listenAfterMs` (never: undefined), or listening and not in turns of
   * `flapMs` (it refuses about half of what it is offered); with recovery probes every
   * `probeIntervalMs` (0: none, passive health as nginx's).
   */
  async function run(
    name: string,
    ms: number,
    listenAfterMs: number | undefined,
    probeIntervalMs = 0,
    flapMs = 0,
  ): Promise<Run> {
    const canaryPort = await freePort();
    // Named as the release's listener of service `name`, port 80: the judge finds its counters by it.
    const listenerName = `${name}-80-tcp`;
    const listener = (port: number) => ({
      listeners: [
        {
          name: listenerName,
          listen: `127.0.0.1:${port}`,
          maxFails: 1,
          failTimeoutMs: FAIL_TIMEOUT_MS,
          probeIntervalMs,
          backends: [
            { name: 'forked', host: '127.0.0.1', port: stable.port, weight: 50 },
            { name: 'canary', host: '127.0.0.1', port: canaryPort, weight: 50 },
          ],
        },
      ],
    });
    const port = await applyOnFreePort(plane, listener);
    // The baseline, before any connection, as the collector's first look.
    const baseline = snapshotCounters(plane.stats, plane.dataplane.config);
    const started = Date.now();
    const statuses: AnalysisStatus[] = [];
    const canary = plane.backend(listenerName, 'canary');
    let [failed, takenOutAt, servedAt] = [0, undefined as number | undefined, undefined as number | undefined];
    const clients = (async () => {
      while (Date.now() - started < ms) {
        if ((await askName(port).catch(() => '')) === '') failed++;
        if (takenOutAt === undefined && canary.markedDown > 0) takenOutAt = Date.now() - started;
        if (servedAt === undefined && canary.connections > 0) servedAt = Date.now() - started;
        await sleep(5);
      }
    })();
    const canaryListens =
      flapMs > 0
        ? flap(canaryPort, flapMs, () => Date.now() - started >= ms)
        : listenAfterMs === undefined
          ? undefined
          : sleep(listenAfterMs).then(async () =>
              servers.push(await startTcpBackend((socket) => socket.end('canary'), '127.0.0.1', canaryPort)),
            );
    let previous = new Map<string, CounterSnapshot>([[baseline.instance, baseline]]);
    let rolledBackAt: number | undefined;
    while (Date.now() - started < ms) {
      await sleep(INTERVAL_MS);
      const snapshot = snapshotCounters(plane.stats, plane.dataplane.config);
      const counted = intervalCounts(previous, [snapshot]);
      previous = new Map([[snapshot.instance, snapshot]]);
      if (counted.replicas === 0) continue;
      const evidence: Evidence = {
        at: new Date().toISOString(),
        intervalMs: INTERVAL_MS,
        replicas: 1,
        latencyBucketsMs: snapshot.latencyBucketsMs,
        listeners: counted.listeners,
        weightsMoved: counted.weightsMoved,
      };
      statuses.push(judge(evidence, SPEC, [{ ...PORT, service: name }], statuses.at(-1)));
      if ((statuses.at(-1)?.failures ?? 0) >= 2) {
        rolledBackAt = Date.now() - started;
        break;
      }
    }
    await clients;
    await canaryListens;
    return { statuses, failed, takenOutAt, servedAt, rolledBackAt };
  }

  /** A canary that listens for `flapMs`, then not for `flapMs`, until `over()`. */
  async function flap(port: number, flapMs: number, over: () => boolean): Promise<void> {
    while (!over()) {
      const server = await startTcpBackend((socket) => socket.end('canary'), '127.0.0.1', port);
      await sleep(flapMs);
      await server.close();
      await sleep(flapMs);
    }
  }

  it('a canary refusing its first connections for 1.5 s, then serving, is never a failed interval and gets its share back within one passive-health timeout', async (t) => {
    const { statuses, failed, takenOutAt, servedAt } = await run('blip', 1_500 + FAIL_TIMEOUT_MS + 2_000, 1_500);
    const errors = plane.backend('blip-80-tcp', 'canary').connectErrors.refused;
    t.diagnostic(
      `${errors} refused, taken out at ${takenOutAt} ms, serving at ${servedAt} ms; verdicts ${statuses.map((status) => status.verdict[0]).join('')}`,
    );
    assert.equal(failed, 0, 'no client saw it: the proxy tried the stable side');
    assert.ok(
      takenOutAt !== undefined && errors >= 1 && errors <= 3,
      'passive health took it out at the first refusal (and a recovery probe, maybe)',
    );
    assert.ok(
      statuses.some((status) => status.samples > 0),
      "the canary's counts were judged",
    );
    assert.deepEqual(
      statuses.filter((status) => status.verdict === 'Failed').map((status) => status.message),
      [],
      'no interval failed',
    );
    assert.ok(
      servedAt !== undefined && servedAt - takenOutAt <= FAIL_TIMEOUT_MS + 1_000,
      'its share back within one passive-health timeout',
    );
    assert.ok(
      statuses.every((status) => !status.signals.some((signal) => signal.name === 'canaryShare')),
      'its share judged only while it was eligible',
    );
  });

  it('a dead canary (every connection refused, recovery probes too) is rolled back within failureLimit × interval plus one passive-health timeout', async (t) => {
    const { statuses, takenOutAt, rolledBackAt } = await run('dead', 2 * FAIL_TIMEOUT_MS + 3_000, undefined);
    t.diagnostic(
      `taken out at ${takenOutAt} ms, rolled back at ${rolledBackAt} ms; verdicts ${statuses.map((status) => status.verdict[0]).join('')}; ${statuses.at(-1)?.message}`,
    );
    assert.ok(takenOutAt !== undefined && rolledBackAt !== undefined, 'taken out, and rolled back');
    // The take-out, one passive-health timeout, the refused probe's interval and failureLimit − 1 more, and an interval's slack.
    assert.ok(
      rolledBackAt - takenOutAt <= FAIL_TIMEOUT_MS + 3 * INTERVAL_MS + 500,
      `within failureLimit × interval + one passive-health timeout: ${rolledBackAt - takenOutAt} ms`,
    );
    // Every connection its weight offered it from the take-out on counts, and is said to.
    assert.match(
      statuses.at(-1)!.message,
      /connectErrorRate: canary (\d+) of \1 \(\d+ of them while passive health held it out\), stable 0 of/,
    );
  });

  describe("with recovery probes (probeIntervalMs, as a release's listeners have them): what passive health kept from a canary still failing counts against it", () => {
    const PROBE_MS = 1_000;

    it('the 1.5 s blip is never a failed interval (its failed probe held back, then cleared), and serves again within a probe interval', async (t) => {
      const { statuses, failed, takenOutAt, servedAt } = await run(
        'blip-probed',
        1_500 + FAIL_TIMEOUT_MS + 2_000,
        1_500,
        PROBE_MS,
      );
      const probes = plane.backend('blip-probed-80-tcp', 'canary').probes;
      t.diagnostic(
        `taken out at ${takenOutAt} ms, serving at ${servedAt} ms; probes ${JSON.stringify(probes)}; verdicts ${statuses.map((status) => status.verdict[0]).join('')}`,
      );
      assert.equal(failed, 0, 'no client saw it');
      assert.ok(probes.failed >= 1 && probes.ok === 1, 'a probe found it still refusing, the next one serving');
      assert.deepEqual(
        statuses.filter((status) => status.verdict === 'Failed').map((status) => status.message),
        [],
        'no interval failed',
      );
      assert.ok(
        servedAt !== undefined && takenOutAt !== undefined && servedAt - takenOutAt <= 1_500 + PROBE_MS + 500,
        'back once a probe finds it listening, not after failTimeoutMs',
      );
    });

    it('a dead canary is rolled back within failureLimit × interval plus one passive-health timeout, the attempts kept from it counted', async (t) => {
      const { statuses, takenOutAt, rolledBackAt } = await run(
        'dead-probed',
        2 * FAIL_TIMEOUT_MS + 3_000,
        undefined,
        PROBE_MS,
      );
      t.diagnostic(`taken out at ${takenOutAt} ms, rolled back at ${rolledBackAt} ms; ${statuses.at(-1)?.message}`);
      assert.ok(
        takenOutAt !== undefined &&
          rolledBackAt !== undefined &&
          rolledBackAt - takenOutAt <= FAIL_TIMEOUT_MS + 3 * INTERVAL_MS + 500,
        `${rolledBackAt! - takenOutAt!} ms`,
      );
      assert.match(
        statuses.at(-1)!.message,
        /connectErrorRate: canary (\d+) of \1 \(\d+ of them while passive health held it out\), stable 0 of/,
      );
    });

    // Listening 50 ms at a time: fewer connections than end a failing episode (10 in a row) reach it
    // in one stretch, as with a canary refusing half at random; one serving long stretches is a blip each time.
    it('a canary refusing about half of what it is offered is rolled back within failureLimit × interval plus one failTimeout', async (t) => {
      const { statuses, takenOutAt, rolledBackAt } = await run(
        'flapping',
        2 * FAIL_TIMEOUT_MS + 3_000,
        undefined,
        PROBE_MS,
        50,
      );
      t.diagnostic(
        `taken out at ${takenOutAt} ms, rolled back at ${rolledBackAt} ms; verdicts ${statuses.map((status) => status.verdict[0]).join('')}; ${statuses.at(-1)?.message}`,
      );
      assert.ok(
        takenOutAt !== undefined &&
          rolledBackAt !== undefined &&
          rolledBackAt - takenOutAt <= FAIL_TIMEOUT_MS + 3 * INTERVAL_MS + 500,
        `${rolledBackAt! - takenOutAt!} ms`,
      );
      // On the offers passive health kept from it, or sooner, on what it served.
      assert.match(statuses.at(-1)!.message, /connectErrorRate: canary \d+ of \d+/);
    });
  });
});
