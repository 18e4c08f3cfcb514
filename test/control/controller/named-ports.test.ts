// Named targetPorts, end to end with real traffic through the kube-proxy simulation (a named
// targetPort resolves, per pod, to the container port of that name and protocol): a Service whose
// targetPorts are names is taken over only once a Ready proxy pod declares them, and clients answer
// all along; a Service whose targetPort is named like the proxy's own admin port is taken over onto
// a proxy port, so its clients never reach the proxy's admin server. The proxy runs in a pod of its
// own (its listeners, and its admin server, on the pod's IP), whose ports the manager renders.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { defaultProxySelector } from '../../../src/api/names.ts';
import { DEFAULT_ADMIN_PORT } from '../../../src/defaults.ts';
import { isTakeoverSelector } from '../../../src/control/service/takeover-selector.ts';
import { suiteTimeout } from '../../support/cluster/api-under-test.ts';

import { isPodReady } from '../../support/cluster/pods.ts';
import {
  conditionOf,
  createRelease,
  createService,
  getService,
  NAMESPACE,
  serviceEntry,
  startProxy,
  takenOver,
  waitForRelease,
  waitForService,
  type InProcessProxy,
} from '../../support/cluster/release-cluster.ts';
import { startTestbed, startTraffic, waitForAnswer, type Testbed } from '../../support/cluster/testbed.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { sleep, waitFor } from '../../support/wait.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);

const NAMED_BASE = await freePortBlock(10, { udp: true });
const ADMIN_BASE = await freePortBlock(10, { udp: true });

const takenOverBy = (release: string) => (service: V1Service | undefined) =>
  isTakeoverSelector(service?.spec?.selector, release);

describe("named targetPorts: taken over only onto proxy pods that declare them, never onto the proxy's admin port", {
  timeout: suiteTimeout(60_000),
}, () => {
  let bed: Testbed;
  const proxies: InProcessProxy[] = [];

  before(async () => {
    bed = await startTestbed(serviceNet.cidr, podNet.prefix);
  });

  after(async () => {
    for (const proxy of proxies) await proxy.stop();
    await bed.stop();
  });

  it("waits, with the app's pods answering, while a Ready proxy pod lacks the names; takes over once the pod that declares them replaces it", async (t) => {
    const release = 'web-v2';
    const podIP = `${bed.podNet}.250`;
    await createService(bed.cluster, 'web', [
      { name: 'http', port: 9000, targetPort: 'http' },
      { name: 'dns', port: 9053, targetPort: 'dns', protocol: 'UDP' },
    ]);
    const web = await bed.clusterIp('web');
    const appPorts = [
      { name: 'http', port: 8000 },
      { name: 'dns', port: 8053, protocol: 'UDP' as const },
    ];
    await bed.startPod('web-v1', { app: 'web', version: 'v1' }, appPorts, 'stable');
    await bed.startPod('web-v2', { app: 'web', version: 'v2' }, appPorts, 'canary');
    // A proxy pod of a rendering that knew no named port: it carries the takeover labels, and is Ready.
    await bed.pods.createReady({
      name: 'proxy-old',
      labels: { ...takenOver(release), ...defaultProxySelector(release) },
      podIP,
    });
    await Promise.all([waitForAnswer(web, 9000, 'TCP'), waitForAnswer(web, 9053, 'UDP')]);
    const tcp = startTraffic(() => web, 9000, 'TCP', { maxMs: 30_000 });
    const udp = startTraffic(() => web, 9053, 'UDP', { maxMs: 30_000, udpTimeoutMs: 500 });
    await createRelease(bed.cluster, release, {
      services: [
        serviceEntry('web', [
          { port: 9000, weight: 50 },
          { port: 9053, protocol: 'UDP', weight: 50 },
        ]),
      ],
    });
    proxies.push(await startProxy(bed.cluster, release, NAMED_BASE, { podIP }));

    const published = await waitForRelease(
      bed.cluster,
      release,
      'status.takeover naming the ports',
      (found) => (found?.status?.takeover?.namedPorts.length ?? 0) > 0,
    );
    assert.deepEqual(published?.status?.takeover?.namedPorts, [
      { name: 'http', containerPort: NAMED_BASE, protocol: 'TCP' },
      { name: 'dns', containerPort: NAMED_BASE + 1, protocol: 'UDP' },
    ]);
    // A pass that saw proxy-old without the names, and held: it had its chance to take the Service over.
    const HELD = /proxy pods proxy-old do not carry its labels and named ports yet/;
    const waiting = await waitForRelease(bed.cluster, release, 'held for proxy-old', (found) =>
      HELD.test(conditionOf(found, 'Progressing')?.message ?? ''),
    );
    await waitFor(() => tcp.attempts.length >= 5 && udp.attempts.length >= 5, 'connections and flows meanwhile');
    assert.deepEqual(
      [...tcp.failures(), ...udp.failures()],
      [],
      'no connection or flow failed while proxy-old lacks the names',
    );
    assert.deepEqual(
      [Object.keys(tcp.counts()), Object.keys(udp.counts())],
      [['stable'], ['stable']],
      "the app's pods answer meanwhile",
    );
    assert.deepEqual(
      (await getService(bed.cluster, 'web'))?.spec?.selector,
      { app: 'web', version: 'v1' },
      'not taken over: proxy-old answers nothing on the names',
    );
    assert.match(conditionOf(waiting, 'Progressing')?.message ?? '', HELD);

    // The manager's rollout: the new pod, which declares the names, is Ready before the old one goes.
    await bed.startProxyPod(release, { name: 'proxy-new', podIP });
    const declaresHttp = (pod: V1Pod) =>
      pod.spec?.containers.some((container) => container.ports?.some((port) => port.name === 'http')) === true;
    await waitFor(
      async () =>
        (await bed.cluster.core.listNamespacedPod({ namespace: NAMESPACE })).items.some(
          (pod) => pod.metadata?.name?.startsWith('proxy-new') === true && declaresHttp(pod) && isPodReady(pod),
        ),
      'the new proxy pod Ready, declaring http',
    );
    assert.deepEqual(
      (await getService(bed.cluster, 'web'))?.spec?.selector,
      { app: 'web', version: 'v1' },
      'still not taken over while proxy-old lacks the names',
    );
    await bed.pods.delete('proxy-old');
    const service = await waitForService(bed.cluster, 'web', 'taken over', takenOverBy(release));
    assert.deepEqual(
      service?.spec?.ports?.map((port) => port.targetPort),
      ['http', 'dns'],
      'the names kept: the proxy pod declares them',
    );
    const takenAt = tcp.now();
    await sleep(800);
    await Promise.all([tcp.stop(), udp.stop()]);
    t.diagnostic(`TCP ${JSON.stringify(tcp.counts())}, UDP ${JSON.stringify(udp.counts())}`);
    assert.deepEqual(
      [...tcp.failures(), ...udp.failures()],
      [],
      'no connection or flow failed, before or after the takeover',
    );
    assert.ok(
      (tcp.counts(takenAt).canary ?? 0) > 0 && (udp.counts(takenAt).canary ?? 0) > 0,
      'the canary answers through the proxy on both names',
    );
  });

  it("a targetPort named like the proxy's admin port is taken over onto a proxy port: its clients reach the app, never the proxy's /metrics", async (t) => {
    const release = 'ops-v2';
    const podIP = `${bed.podNet}.251`;
    await createService(bed.cluster, 'ops', [{ name: 'admin', port: 9100, targetPort: 'admin' }]);
    const ops = await bed.clusterIp('ops');
    await bed.startPod('ops-v1', { app: 'ops', version: 'v1' }, [{ name: 'admin', port: 8100 }], 'stable');
    await bed.startPod('ops-v2', { app: 'ops', version: 'v2' }, [{ name: 'admin', port: 8100 }], 'canary');
    await bed.startProxyPod(release, { podIP });
    const traffic = startTraffic(() => ops, 9100, 'TCP', { maxMs: 30_000 });
    await createRelease(bed.cluster, release, { services: [serviceEntry('ops', [{ port: 9100, weight: 50 }])] });
    proxies.push(await startProxy(bed.cluster, release, ADMIN_BASE, { podIP, adminPort: DEFAULT_ADMIN_PORT }));
    const service = await waitForService(bed.cluster, 'ops', 'taken over', takenOverBy(release));
    const takenAt = traffic.now();
    await sleep(800);
    await traffic.stop();
    t.diagnostic(JSON.stringify(traffic.counts()));
    assert.deepEqual(traffic.failures(), [], "every connection answered by the app, none by the proxy's admin server");
    assert.ok((traffic.counts(takenAt).canary ?? 0) > 0, 'the canary answers through the proxy');
    // Where the name admin leads on the proxy pod: its admin server, which serves /metrics.
    assert.equal((await fetch(`http://${podIP}:${DEFAULT_ADMIN_PORT}/metrics`)).status, 200);
    assert.deepEqual(
      service?.spec?.ports?.map((port) => port.targetPort),
      [ADMIN_BASE],
      'a proxy port, not the name',
    );
    const running = await waitForRelease(
      bed.cluster,
      release,
      'status.takeover',
      (found) => found?.status?.takeover !== undefined,
    );
    assert.deepEqual(running?.status?.takeover?.namedPorts, []);
    assert.deepEqual(running?.status?.takeover?.movedPorts, [
      `ops:9100/TCP: targetPort admin → ${ADMIN_BASE} (the name admin is the proxy's admin port's on the proxy container)`,
    ]);
  });
});
