// A dark canary end to end (issue 24), with real UDP traffic through a kube-proxy simulation and the
// fake kube-apiserver: a canary at weight 0 mirrored every flow, which starts answering 30 % of
// queries differently, is rolled back by mirrorMismatchRate while no client ever sees one of its
// answers; and a stepped DNS release run dark first, then stepped to a weight.

import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import type { CanaryPortSpec, CanaryReleaseSpec } from '../../../src/api/spec-types.ts';
import type { CanaryRelease } from '../../../src/api/release-types.ts';
import { pluginFor, type Plugin } from '../../support/process/kubectl-plugin.ts';
import {
  conditionOf,
  createRelease,
  startProxy,
  waitForRelease,
  type InProcessProxy,
} from '../../support/cluster/release-cluster.ts';
import { startTestbed, startTraffic, type Testbed, type Traffic } from '../../support/cluster/testbed.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);

const POD_NET = podNet.prefix;
const DARK_BASE = await freePortBlock(10, { udp: true });
const STEPPED_BASE = await freePortBlock(10, { udp: true });
const DNS_PORT = 8353;

/** A UDP DNS-like Service `name` on port 53-ish, its stable pod answering `answer:<query>`. */
async function dnsService(bed: Testbed, name: string, port: number): Promise<string> {
  const manifest = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name },
    spec: {
      selector: { app: name, version: 'v1' },
      ports: [{ name: 'dns', port, targetPort: DNS_PORT, protocol: 'UDP' }],
    },
  };
  await bed.kubectl('apply', '-f', await bed.kubectl.manifest(`${name}.yaml`, manifest));
  await bed.startPod(`${name}-v1`, { app: name, version: 'v1' }, [{ port: DNS_PORT, protocol: 'UDP' }], 'answer');
  return bed.clusterIp(name);
}

/** The canary pod of `name` at `podIP`: a server the test controls, answering `prefix(query)<query>`. */
async function canaryPod(
  bed: Testbed,
  name: string,
  podIP: string,
  prefix: () => string,
): Promise<() => Promise<void>> {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (query, peer) =>
    socket.send(Buffer.concat([Buffer.from(prefix()), query]), peer.port, peer.address),
  );
  socket.bind({ address: podIP, port: DNS_PORT });
  await once(socket, 'listening');
  await bed.pods.create({
    name: `${name}-v2`,
    labels: { app: name, version: 'v2' },
    ports: [{ containerPort: DNS_PORT, protocol: 'UDP' }],
  });
  await bed.pods.setStatus(`${name}-v2`, { phase: 'Running', podIP, ready: true });
  return () => new Promise((resolve) => socket.close(() => resolve()));
}

const release = (
  service: string,
  port: number,
  config: CanaryPortSpec['config'],
  extra: Partial<CanaryReleaseSpec>,
): CanaryReleaseSpec => ({
  services: [
    { service, canaryServiceOperations: { add: { version: 'v2' } }, ports: [{ port, protocol: 'UDP', config }] },
  ],
  ...extra,
});

const canaryServed = (proxy: InProcessProxy, listener: string) =>
  proxy.runtime.stats.backends.get(listener)?.get('canary')?.connections ?? 0;

describe('a dark canary: mirrored UDP flows judged against the stable, with real traffic', { timeout: 120_000 }, () => {
  let bed: Testbed;
  let plugin: Plugin;
  const proxies: InProcessProxy[] = [];
  const closers: (() => Promise<void>)[] = [];
  const traffic: Traffic[] = [];

  before(async () => {
    bed = await startTestbed(serviceNet.cidr, POD_NET);
    plugin = await pluginFor(bed.cluster.api.kubeconfigPath);
  });

  after(async () => {
    await Promise.all(traffic.map((item) => item.stop()));
    await Promise.all(proxies.map((proxy) => proxy.stop()));
    await Promise.all(closers.map((close) => close()));
    await plugin.cleanup();
    await bed.stop();
  });

  it('a canary answering 30 % of queries differently is rolled back by mirrorMismatchRate; no client ever sees its answers', async (t) => {
    const ip = await dnsService(bed, 'dark', 9353);
    let wrong = false;
    let queries = 0;
    // Deterministic once it goes bad: 3 of every 10 answers differ from the stable's.
    closers.push(
      await canaryPod(bed, 'dark', `${POD_NET}.200`, () => (wrong && queries++ % 10 < 3 ? 'wrong:' : 'answer:')),
    );
    await bed.startProxyPod('dark-v2');
    const proxy = await startProxy(bed.cluster, 'dark-v2', DARK_BASE);
    proxies.push(proxy);
    await createRelease(
      bed.cluster,
      'dark-v2',
      release(
        'dark',
        9353,
        { weight: 0, mirror: { percent: 100, compare: 'replies' } },
        {
          analysis: {
            interval: '1s',
            minSamples: 10,
            failureLimit: 2,
            thresholds: { mirrorMismatchRate: { max: 0.1 }, mirrorErrorRate: { max: 0.5 } },
          },
        },
      ),
    );
    const clients = [0, 1].map(() =>
      startTraffic(() => ip, 9353, 'UDP', { pauseMs: 5, maxMs: 60_000, udpTimeoutMs: 500 }),
    );
    traffic.push(...clients);
    await waitForRelease(
      bed.cluster,
      'dark-v2',
      'a passing interval on mirrored flows alone',
      (found) => found?.status?.analysis?.verdict === 'Passed',
      20_000,
    );
    wrong = true;
    const wentBad = Date.now();
    const rolledBack = await waitForRelease(
      bed.cluster,
      'dark-v2',
      'rolled back',
      (found) => found?.status?.transition?.reason === 'AnalysisFailed',
      15_000,
    );
    t.diagnostic(
      `rolled back ${Date.now() - wentBad} ms after the canary went bad; mirror counts ${JSON.stringify(rolledBack?.status?.ports?.[0]?.mirror)}`,
    );
    assert.match(
      conditionOf(rolledBack, 'Failure')?.message ?? '',
      /mirrorMismatchRate: canary \d+ of \d+, stable -, threshold max 0\.1, 99 % confidence/,
    );
    await Promise.all(clients.map((client) => client.stop()));
    const answers = clients.map((client) => client.counts());
    t.diagnostic(`client answers: ${JSON.stringify(answers)}`);
    assert.ok(
      answers.every((counts) => counts.wrong === undefined && (counts.answer ?? 0) > 0),
      "every answer a client got was the stable's",
    );
    assert.equal(canaryServed(proxy, 'dark-9353-udp'), 0, 'the canary served no flow');
    const mirror = rolledBack?.status?.ports?.[0]?.mirror;
    assert.ok(mirror !== undefined && mirror.different > 0 && mirror.mirrored > 0, JSON.stringify(mirror));
  });

  it('a DNS release run dark (a mirror step), then stepped to a weight', async (t) => {
    const ip = await dnsService(bed, 'steps', 9354);
    closers.push(await canaryPod(bed, 'steps', `${POD_NET}.201`, () => 'answer:'));
    await bed.startProxyPod('steps-v2');
    const proxy = await startProxy(bed.cluster, 'steps-v2', STEPPED_BASE);
    proxies.push(proxy);
    await createRelease(
      bed.cluster,
      'steps-v2',
      release(
        'steps',
        9354,
        { mirror: { compare: 'replies' } },
        {
          // The dark step waits for a promotion: under load a timed one could end before it is looked at.
          steps: [
            { mirror: 100, pause: {} },
            { weight: 50, pause: {} },
          ],
          analysis: {
            interval: '1s',
            minSamples: 10,
            failureLimit: 2,
            thresholds: { mirrorMismatchRate: { max: 0.05 } },
          },
        },
      ),
    );
    const clients = startTraffic(() => ip, 9354, 'UDP', { pauseMs: 5, maxMs: 60_000, udpTimeoutMs: 500 });
    traffic.push(clients);
    await waitForRelease(
      bed.cluster,
      'steps-v2',
      'mirrored flows counted',
      (found) => (found?.status?.ports?.[0]?.mirror?.compared ?? 0) > 0,
      20_000,
    );
    assert.equal(canaryServed(proxy, 'steps-9354-udp'), 0, 'dark: the canary served no flow during the mirror step');
    const status = await plugin('status', 'steps-v2');
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /Steps: \[0% mirror 100% until promoted\] → 50% until promoted → adopted/);
    assert.match(status.stdout, /Mirrored to the canary/);
    const promoted = await plugin('promote', 'steps-v2');
    assert.equal(promoted.code, 0, promoted.stderr);
    const stepped: CanaryRelease | undefined = await waitForRelease(
      bed.cluster,
      'steps-v2',
      'the weight step',
      (found) => found?.status?.step === '2/2 (index 1)',
      20_000,
    );
    t.diagnostic(`after the mirror step: ${JSON.stringify(stepped?.status?.ports?.[0]?.mirror)}`);
    const listener = () => proxy.runtime.dataplane.config.listeners.find((item) => item.name === 'steps-9354-udp');
    await waitForRelease(
      bed.cluster,
      'steps-v2',
      'the weight step served',
      () => listener()?.backends.find((backend) => backend.name === 'canary')?.weight === 50,
    );
    assert.equal(listener()?.mirror, undefined, "the weight step mirrors nothing (the port's own percent is 0)");
    const from = clients.now();
    await waitForRelease(
      bed.cluster,
      'steps-v2',
      'the canary serving clients',
      () => canaryServed(proxy, 'steps-9354-udp') >= 10,
      20_000,
    );
    await clients.stop();
    assert.ok((clients.counts(from).answer ?? 0) > 0);
  });
});
