// Progressive delivery (issue 13) end to end, with real traffic through a kube-proxy simulation:
// a stepped release on two proxy replicas (child processes, one Lease-elected leader) whose timed
// steps advance only on a passing analysis of both replicas' counts, whose leader dies mid-pause
// (the next one resumes the pause where it was), whose untimed step waits for `kubectl canary-l4
// promote`, which `pause` and `resume` hold and release, and which is adopted after its last step;
// and two canaries that go bad mid-release — one resetting 30 % of its connections, one whose UDP
// replies stop — rolled back by the analysis on its own.

import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AnalysisSpec, CanaryServiceSpec } from '../../../src/api/spec-types.ts';
import type { CanaryRelease } from '../../../src/api/release-types.ts';
import { defaultProxySelector } from '../../../src/api/names.ts';
import { takeoverValue } from '../../../src/control/service/takeover-selector.ts';
import { takeoverLabels } from '../../../src/api/labels.ts';
import { startTcpBackend } from '../../support/net/backends.ts';
import { pluginFor, type Plugin } from '../../support/process/kubectl-plugin.ts';
import {
  conditionOf,
  createRelease,
  getRelease,
  getService,
  judgedAfter,
  startProxy,
  startUdpNamed,
  waitForRelease,
  writeProxyKubeconfig,
  type InProcessProxy,
} from '../../support/cluster/release-cluster.ts';
import { isLeader, startReplica, type Replica } from './replicas.ts';
import { podAt, startTestbed, startTraffic, type Testbed, type Traffic } from '../../support/cluster/testbed.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { sleep, waitFor } from '../../support/wait.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);
import { releaseStory } from '../../../src/plugin/dashboard/story.ts';
import { metricValue } from '../../support/dataplane/test-plane.ts';

const REPLICAS_BASE = await freePortBlock(10);
const RESETS_BASE = await freePortBlock(10);
const UDP_BASE = await freePortBlock(10, { udp: true });
const COUNTS_BASE = await freePortBlock(10);
const LEASE_SECONDS = 2;
const INTERVAL_MS = 1000;
const FAILURE_LIMIT = 2;

const analysis = (thresholds: AnalysisSpec['thresholds'], minSamples = 20): AnalysisSpec => ({
  interval: `${INTERVAL_MS / 1000}s`,
  minSamples,
  failureLimit: FAILURE_LIMIT,
  thresholds,
});

/** With steps, a listed port may leave out its config: the step sets its weight. */
const entry = (service: string, port: number, protocol: 'TCP' | 'UDP' = 'TCP'): CanaryServiceSpec => ({
  service,
  canaryServiceOperations: { add: { version: 'v2' } },
  ports: [{ port, protocol }],
});

const manifest = (name: string, port: number, targetPort: number, protocol: 'TCP' | 'UDP' = 'TCP') => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name },
  spec: { selector: { app: name, version: 'v1' }, ports: [{ name: 'main', port, targetPort, protocol }] },
});

const stepOf = (release: CanaryRelease | undefined) => release?.status?.currentStep;

/**
 * Once an interval of `release` has passed, `goBad()`; the release as rolled back, and how long
 * after. Bounded by the interval under way when it went bad, then failureLimit bad ones, and a
 * poll's worth of slack.
 */
async function rollbackAfter(
  bed: Testbed,
  release: string,
  goBad: () => void,
  t: { diagnostic(message: string): void },
): Promise<CanaryRelease | undefined> {
  await waitForRelease(
    bed.cluster,
    release,
    'a healthy interval',
    (found) => found?.status?.analysis?.verdict === 'Passed',
    15_000,
  );
  goBad();
  const wentBad = Date.now();
  const rolledBack = await waitForRelease(
    bed.cluster,
    release,
    'rolled back',
    (found) => found?.status?.transition?.reason === 'AnalysisFailed',
    15_000,
  );
  const afterMs = Date.now() - wentBad;
  t.diagnostic(
    `${release} rolled back ${afterMs} ms after its canary went bad (interval ${INTERVAL_MS} ms, failureLimit ${FAILURE_LIMIT})`,
  );
  assert.ok(afterMs <= (FAILURE_LIMIT + 1) * INTERVAL_MS + 1500, `within failureLimit × interval (${afterMs} ms)`);
  assert.equal(conditionOf(rolledBack, 'Failure')?.reason, 'AnalysisFailed');
  return rolledBack;
}

describe('progressive delivery: steps, promotion, pauses and analysis, with real traffic', { timeout: 150_000 }, () => {
  let bed: Testbed;
  let plugin: Plugin;
  let dir = '';
  const replicas: Replica[] = [];
  const proxies: InProcessProxy[] = [];
  const closers: (() => Promise<void>)[] = [];
  const traffic: Traffic[] = [];

  before(async () => {
    bed = await startTestbed(serviceNet.cidr, podNet.prefix);
    plugin = await pluginFor(bed.cluster.api.kubeconfigPath);
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-progressive-'));
  });

  after(async () => {
    await Promise.all(traffic.map((item) => item.stop()));
    for (const replica of replicas) replica.child.kill('SIGKILL');
    await Promise.all(proxies.map((proxy) => proxy.stop()));
    await Promise.all(closers.map((close) => close()));
    await plugin.cleanup();
    await bed.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a stepped release on two replicas: judged on both, resumed after a leader change, promoted, paused, resumed, adopted', async (t) => {
    await bed.kubectl('apply', '-f', await bed.kubectl.manifest('db.yaml', manifest('db', 9000, 8000)));
    const ip = await bed.clusterIp('db');
    await bed.startPod('db-v1', { app: 'db', version: 'v1' }, [{ port: 8000 }], 'stable');
    await bed.startPod('db-v2', { app: 'db', version: 'v2' }, [{ port: 8000 }], 'canary');
    const kubeconfig = join(dir, 'kubeconfig');
    writeProxyKubeconfig(bed.cluster, kubeconfig);
    replicas.push(
      ...[0, 1].map(() =>
        startReplica(kubeconfig, {
          release: 'db-v2',
          portBase: REPLICAS_BASE,
          leaseSeconds: LEASE_SECONDS,
          extraArgs: ['--hand-back-grace', '0'],
        }),
      ),
    );
    await waitFor(
      () => replicas.every((replica) => Number.isFinite(replica.adminPort())),
      'both admin servers listening',
      15_000,
    );
    // The proxy Deployment's pods, as the leader finds the others' /stats: by the admin container port.
    for (const [index, replica] of replicas.entries()) {
      await bed.pods.createReady({
        name: `canary-l4-db-v2-${index}`,
        labels: {
          ...takeoverLabels({ keys: ['app', 'version'], value: takeoverValue('db-v2') }),
          ...defaultProxySelector('db-v2'),
        },
        podIP: '127.0.0.1',
        containers: [
          {
            name: 'proxy',
            image: 'canary-l4:test',
            args: ['proxy'],
            ports: [{ name: 'admin', containerPort: replica.adminPort() }],
          },
        ],
      });
    }
    await createRelease(bed.cluster, 'db-v2', {
      services: [entry('db', 9000)],
      steps: [
        { weight: 20, pause: { duration: '2s' } },
        { weight: 40, pause: { duration: '10s' } },
        { weight: 60, pause: {} },
        { weight: 80, pause: { duration: '6s' } },
      ],
      analysis: analysis({ connectErrorRate: { max: 0.05 }, resetRate: { max: 0.05 } }),
    });
    const first = await waitForRelease(
      bed.cluster,
      'db-v2',
      'step 1 started: the Services are taken over',
      (found) => found?.status?.stepStartedAt !== undefined,
      20_000,
    );

    // No traffic: the pause runs out, but too few samples never promote (judged by a pass after it ran out).
    const pauseEnd = Date.parse(first!.status!.stepStartedAt!) + 2000;
    const held = await waitForRelease(
      bed.cluster,
      'db-v2',
      'an idle interval judged after the 2 s pause',
      (found) => judgedAfter(found, pauseEnd),
      10_000,
    );
    assert.equal(stepOf(held), 0, 'step 1 holds past its 2 s pause without samples');
    assert.match(
      held?.status?.pause?.reason ?? '',
      /step 1\/4 \(index 0\) waits for an analysis interval that passes \(last: Inconclusive; see status.analysis\)/,
    );
    assert.match(
      held?.status?.analysis?.message ?? '',
      /too few samples: 0 canary connections\/flows over \d+ interval\(s\), minSamples 20/,
    );

    const clients = startTraffic(() => ip, 9000, 'TCP', { pauseMs: 2, maxMs: 120_000 });
    traffic.push(clients);
    const second = await waitForRelease(
      bed.cluster,
      'db-v2',
      'step 2 once an interval passed',
      (found) => stepOf(found) === 1,
      10_000,
    );
    const judged = await waitForRelease(
      bed.cluster,
      'db-v2',
      'an interval counted by both replicas',
      (found) => found?.status?.analysis?.replicas === 2,
      10_000,
    );
    assert.equal(judged?.status?.analysis?.verdict, 'Passed');
    const stepStarted = Date.parse(second!.status!.stepStartedAt!);

    // The leader dies a second into the 10 s pause of step 2; its pod goes with it.
    await sleep(Math.max(0, stepStarted + 1000 - Date.now()));
    const leaders = await Promise.all(replicas.map(isLeader));
    const leader = replicas[leaders.indexOf(true)]!;
    leader.child.kill('SIGKILL');
    await leader.exited;
    await bed.kubectl('delete', 'pod', `canary-l4-db-v2-${replicas.indexOf(leader)}`, '--wait=false');
    const third = await waitForRelease(
      bed.cluster,
      'db-v2',
      'step 3 after the rest of the pause',
      (found) => stepOf(found) === 2,
      25_000,
    );
    const advancedAfterMs = Date.parse(third!.status!.stepStartedAt!) - stepStarted;
    t.diagnostic(
      `step 2 (10 s pause, leader killed at 1 s, lease ${LEASE_SECONDS} s) advanced after ${advancedAfterMs} ms`,
    );
    assert.ok(advancedAfterMs >= 10_000, `never before the pause is over (${advancedAfterMs} ms)`);
    assert.ok(
      advancedAfterMs < 10_000 + LEASE_SECONDS * 1000,
      `resumed from the recorded start, not from the takeover (${advancedAfterMs} ms)`,
    );

    // Step 3 has no duration: it waits for a promotion, whatever an interval of its own judges.
    const thirdStarted = Date.parse(third!.status!.stepStartedAt!);
    const waiting = await waitForRelease(
      bed.cluster,
      'db-v2',
      'an interval of step 3 passed',
      (found) => found?.status?.analysis?.verdict === 'Passed' && judgedAfter(found, thirdStarted + INTERVAL_MS),
      10_000,
    );
    assert.equal(stepOf(waiting), 2);
    assert.match(
      waiting?.status?.pause?.reason ?? '',
      /step 3\/4 \(index 2\) waits for a promotion: kubectl canary-l4 promote \(it writes spec.promotedStep: 2\)/,
    );
    const promoted = await plugin('promote', 'db-v2');
    assert.equal(promoted.code, 0, promoted.stderr);
    assert.match(promoted.stdout, /step 3\/4 \(index 2\) promoted \(spec.promotedStep: 2\)/);
    assert.match(
      promoted.stdout,
      /kubectl patch canaryrelease db-v2 -n default --type=merge -p '\{"spec":\{"promotedStep":2\}\}'/,
    );
    await waitForRelease(bed.cluster, 'db-v2', 'step 4 once promoted', (found) => stepOf(found) === 3, 10_000);

    // A person's pause holds step 4 past its 6 s; resume lets it end, and the release is adopted.
    const pausing = await plugin('pause', 'db-v2');
    assert.equal(pausing.code, 0, pausing.stderr);
    const fourth = Date.parse((await getRelease(bed.cluster, 'db-v2'))!.status!.stepStartedAt!);
    const paused = await waitForRelease(
      bed.cluster,
      'db-v2',
      "an interval judged after step 4's 6 s",
      (found) => judgedAfter(found, fourth + 6000),
      15_000,
    );
    assert.equal(stepOf(paused), 3, 'paused: step 4 holds past its pause');
    assert.match(paused?.status?.pause?.reason ?? '', /paused \(spec.paused\)/);
    const achieved = paused?.status?.ports?.[0]?.achieved;
    t.diagnostic(`achieved since the release began: ${JSON.stringify(achieved)}`);
    assert.ok(
      (achieved?.canary ?? 0) > 0 && (achieved?.stable ?? 0) > 0,
      'the achieved split counts both sides, both replicas',
    );
    const atStep = paused?.status?.ports?.[0]?.achievedStep;
    t.diagnostic(`achieved since step 4 began: ${JSON.stringify(atStep)}`);
    assert.equal(atStep?.step, 3, "the split at the step in force is step 4's");
    assert.ok(
      (atStep?.stable ?? 0) + (atStep?.canary ?? 0) < (achieved?.stable ?? 0) + (achieved?.canary ?? 0),
      "it counts from the step's start, not the release's",
    );
    const survivor = replicas.find((replica) => replica !== leader)!;
    const scraped = await (await fetch(`http://127.0.0.1:${survivor.adminPort()}/metrics`)).text();
    for (const sample of [
      'canary_l4_release_step 4',
      'canary_l4_release_steps 4',
      'canary_l4_release_step_held 1',
      'canary_l4_analysis_verdict{verdict="Passed"} 1',
      'canary_l4_analysis_failures 0',
    ]) {
      assert.ok(scraped.split('\n').includes(sample), `the dashboard's ${sample}`);
    }
    assert.match(
      scraped,
      /^canary_l4_achieved_connections\{service="db",port="9000",protocol="TCP",side="canary"\} [1-9]\d*$/m,
    );
    // The dashboard's story of it (status.history, as the page charts it) against status and the metrics.
    const story = releaseStory(paused!, new Date());
    assert.ok(story, 'status.history is written');
    assert.deepEqual(
      story.steps.map((step) => `${step.label}${step.promoted ? ' promoted' : ''}`),
      ['step 1/4 (index 0)', 'step 2/4 (index 1)', 'step 3/4 (index 2)', 'step 4/4 (index 3) promoted'],
      'each step where it began, as canary_l4_release_step counts them',
    );
    assert.equal(story.weights[0]?.points.at(-1)?.value, 80, 'the weight served now, as canary_l4_backend_weight says');
    assert.equal(metricValue(scraped, 'canary_l4_backend_weight', { backend: 'canary' }), 80);
    assert.equal(story.holds.at(-1)?.kind, 'paused', "the person's pause");
    const counted = paused!.status!.history!.intervals.reduce(
      (sum, interval) => sum + (interval.ports[0]?.stable ?? 0) + (interval.ports[0]?.canary ?? 0),
      0,
    );
    assert.equal(
      counted,
      (achieved?.stable ?? 0) + (achieved?.canary ?? 0),
      'the intervals add up to the achieved split',
    );
    const status = await plugin('status', 'db-v2');
    assert.equal(status.code, 0, status.stderr);
    t.diagnostic(status.stdout);
    assert.match(status.stdout, /Step: 4\/4 \(index 3\), started .*, paused \(spec.paused\)/);
    assert.match(
      status.stdout,
      /db\s+9000\/TCP\s+\d+\s+80%\s+80%\s+\d+\s+\d+\s+[\d.]+%\s+([\d.]+% \(\d+ of \d+\)|none yet)\n/,
      "the port: configured, served, achieved, and this step's split",
    );
    // The interval after a Passed one starts its evidence afresh: by the time status is read it may be still undecided.
    assert.match(
      status.stdout,
      /Analysis: (Passed|Inconclusive) at .*, 1 replica\(s\)/,
      'the survivor alone counts now',
    );
    assert.match(
      status.stdout,
      /resetRate\s+0 of \d+ \(0\)\s+0 of \d+ \(0\)\s+max 0.05 \(99 % confidence\)\s+(Passed|Inconclusive)/,
      "each side's counts",
    );

    const resuming = await plugin('resume', 'db-v2');
    assert.equal(resuming.code, 0, resuming.stderr);
    const adopted = await waitForRelease(
      bed.cluster,
      'db-v2',
      'adopted after the last step',
      (found) => found?.status?.phase === 'Adopted',
      20_000,
    );
    assert.equal(adopted?.status?.transition?.reason, 'StepsComplete');
    assert.deepEqual(
      (await getService(bed.cluster, 'db'))?.spec?.selector,
      { app: 'db', version: 'v2' },
      'the Service selects the canary pods',
    );
    await sleep(500);
    const end = clients.now();
    await sleep(300);
    await clients.stop();
    assert.deepEqual(
      Object.keys(clients.counts(end)),
      ['canary'],
      'after the adoption every connection reaches the canary',
    );
  });

  it('a canary that starts resetting 30 % of its connections is rolled back within failureLimit × interval', async (t) => {
    await bed.kubectl('apply', '-f', await bed.kubectl.manifest('rst.yaml', manifest('rst', 9100, 8100)));
    const ip = await bed.clusterIp('rst');
    await bed.startPod('rst-v1', { app: 'rst', version: 'v1' }, [{ port: 8100 }], 'stable');
    let resetting = false;
    let accepted = 0;
    const canary = await startTcpBackend(
      (socket) => {
        // Deterministic: 3 of every 10 connections.
        if (resetting && accepted++ % 10 < 3) socket.resetAndDestroy();
        else socket.end('canary');
      },
      podNet.ip(100),
      8100,
    );
    closers.push(() => canary.close());
    await podAt(bed, 'rst-v2', { app: 'rst', version: 'v2' }, podNet.ip(100), 8100, 'TCP');
    await bed.startProxyPod('rst-v2', { keys: ['app', 'version'] });
    proxies.push(await startProxy(bed.cluster, 'rst-v2', RESETS_BASE));
    await createRelease(bed.cluster, 'rst-v2', {
      services: [entry('rst', 9100)],
      steps: [{ weight: 50, pause: {} }],
      analysis: analysis({ resetRate: { max: 0.05, maxAboveStable: 0.02 } }),
    });
    const clients = startTraffic(() => ip, 9100, 'TCP', { pauseMs: 2, maxMs: 60_000 });
    traffic.push(clients);
    const rolledBack = await rollbackAfter(bed, 'rst-v2', () => (resetting = true), t);
    assert.match(
      conditionOf(rolledBack, 'Failure')?.message ?? '',
      /failed 2 analysis interval\(s\) in a row: resetRate: canary \d+ of \d+, stable 0 of \d+, threshold max 0.05, maxAboveStable 0.02, 99 % confidence/,
    );
    const deprecated = await waitForRelease(
      bed.cluster,
      'rst-v2',
      'Deprecated',
      (found) => found?.status?.phase === 'Deprecated',
      15_000,
    );
    assert.equal(deprecated?.status?.transition?.type, 'Deprecated');
    assert.deepEqual(
      (await getService(bed.cluster, 'rst'))?.spec?.selector,
      { app: 'rst', version: 'v1' },
      "the Service is its owner's again",
    );
    await sleep(300);
    const end = clients.now();
    await sleep(500);
    await clients.stop();
    assert.deepEqual(
      Object.keys(clients.counts(end)),
      ['stable'],
      'after the rollback every connection reaches the stable pods',
    );
  });

  it('a canary whose UDP replies stop is rolled back, the signal named', async (t) => {
    await bed.kubectl('apply', '-f', await bed.kubectl.manifest('dns.yaml', manifest('dns', 9053, 8053, 'UDP')));
    const ip = await bed.clusterIp('dns');
    closers.push(await startUdpNamed('stable', podNet.ip(101), 8053));
    let silent = false;
    const canary = dgram.createSocket('udp4');
    canary.on('message', (message, peer) => {
      if (!silent) canary.send(Buffer.concat([Buffer.from('canary:'), message]), peer.port, peer.address);
    });
    canary.bind({ address: podNet.ip(102), port: 8053 });
    await once(canary, 'listening');
    closers.push(() => new Promise((resolve) => canary.close(() => resolve())));
    await podAt(bed, 'dns-v1', { app: 'dns', version: 'v1' }, podNet.ip(101), 8053, 'UDP');
    await podAt(bed, 'dns-v2', { app: 'dns', version: 'v2' }, podNet.ip(102), 8053, 'UDP');
    await bed.startProxyPod('dns-v2', { keys: ['app', 'version'] });
    proxies.push(await startProxy(bed.cluster, 'dns-v2', UDP_BASE));
    await createRelease(bed.cluster, 'dns-v2', {
      services: [entry('dns', 9053, 'UDP')],
      steps: [{ weight: 50, pause: {} }],
      analysis: analysis({ udpReplyRate: { min: 0.9, maxBelowStable: 0.05 } }, 10),
    });
    // New flows from fresh sockets, several at once: a silent canary costs each its timeout.
    const clients = [0, 1, 2].map(() =>
      startTraffic(() => ip, 9053, 'UDP', { pauseMs: 2, maxMs: 60_000, udpTimeoutMs: 100 }),
    );
    traffic.push(...clients);
    const rolledBack = await rollbackAfter(bed, 'dns-v2', () => (silent = true), t);
    assert.match(
      conditionOf(rolledBack, 'Failure')?.message ?? '',
      /udpReplyRate: canary \d+ of \d+, stable \d+ of \d+, threshold min 0.9, maxBelowStable 0.05, 99 % confidence/,
    );
    await waitForRelease(bed.cluster, 'dns-v2', 'Deprecated', (found) => found?.status?.phase === 'Deprecated', 15_000);
    assert.deepEqual((await getService(bed.cluster, 'dns'))?.spec?.selector, { app: 'dns', version: 'v1' });
    await Promise.all(clients.map((client) => client.stop()));
  });

  it('intervals counted while status cannot be written are kept: the achieved split misses none', async (t) => {
    await bed.kubectl('apply', '-f', await bed.kubectl.manifest('cnt.yaml', manifest('cnt', 9200, 8200)));
    const ip = await bed.clusterIp('cnt');
    await bed.startPod('cnt-v1', { app: 'cnt', version: 'v1' }, [{ port: 8200 }], 'stable');
    await bed.startPod('cnt-v2', { app: 'cnt', version: 'v2' }, [{ port: 8200 }], 'canary');
    await bed.startProxyPod('cnt-v2', { keys: ['app', 'version'] });
    const proxy = await startProxy(bed.cluster, 'cnt-v2', COUNTS_BASE);
    proxies.push(proxy);
    await createRelease(bed.cluster, 'cnt-v2', {
      services: [entry('cnt', 9200)],
      steps: [{ weight: 30, pause: {} }],
      analysis: analysis({}, 1),
    });
    // Counting has begun (an interval counted, with no traffic yet): every connection from now on is in an interval.
    await waitForRelease(
      bed.cluster,
      'cnt-v2',
      'a first interval counted',
      (found) => found?.status?.countedAt !== undefined,
      15_000,
    );
    const clients = startTraffic(() => ip, 9200, 'TCP', { pauseMs: 2, maxMs: 30_000 });
    traffic.push(clients);
    await sleep(1500);
    // For 3.5 s no status write goes through: the passes back off, the intervals queue up.
    bed.cluster.fake.faults.failNext({
      verb: 'patch',
      resource: 'canaryreleases',
      subresource: 'status',
      code: 500,
      count: 100_000,
    });
    await sleep(3500);
    bed.cluster.fake.faults.reset();
    await sleep(1000);
    await clients.stop();
    const stoppedAt = Date.now();
    const counted = await waitForRelease(
      bed.cluster,
      'cnt-v2',
      'the intervals after the traffic counted',
      (found) => Date.parse(found?.status?.countedAt ?? '0') > stoppedAt + 1500,
      20_000,
    );
    const served = [...(proxy.runtime.stats.backends.get('cnt-9200-tcp')?.values() ?? [])].reduce(
      (sum, backend) => sum + backend.connections,
      0,
    );
    const achieved = counted?.status?.ports?.[0]?.achieved;
    t.diagnostic(`served ${served} connections; achieved ${JSON.stringify(achieved)}`);
    assert.ok(served > 100);
    assert.equal(
      (achieved?.stable ?? 0) + (achieved?.canary ?? 0),
      served,
      'every connection the proxy served is in the achieved split',
    );
  });
});
