// Never strand a Service (issue 9), end to end: clients reach the Service through a kube-proxy
// simulation (its cluster IP → the Ready pods its selector matches), while the Service's owner does
// what owners do — re-apply the manifest with kubectl (client-side and server-side), renumber a
// port, move a targetPort, adopt a canary that has no Ready pod yet — and the release ends. The
// proxy runs in a pod of its own (its listeners on the pod's IP), so the takeover keeps the
// targetPorts. Outage reproductions of the issue: 1 (re-apply), 2 (adopt with no Ready pod), 3 (renumber).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { parseSaved } from '../../../src/control/service/originals.ts';
import { ANNOTATION_ORIGINAL } from '../../../src/api/names.ts';
import { isTakeoverSelector } from '../../../src/control/service/takeover-selector.ts';
import { suiteTimeout } from '../../support/cluster/api-under-test.ts';

import {
  conditionOf,
  createRelease,
  getService,
  NAMESPACE,
  patchRelease,
  serviceEntry,
  serving,
  startProxy,
  waitForRelease,
  waitForService,
  type InProcessProxy,
} from '../../support/cluster/release-cluster.ts';
import { startTestbed, startTraffic, type Testbed } from '../../support/cluster/testbed.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { sleep, waitFor } from '../../support/wait.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);

const FIRST_BASE = await freePortBlock(10, { udp: true });
const SECOND_BASE = await freePortBlock(10, { udp: true });

/** The owner's manifest, applied with kubectl: what GitOps re-applies on every sync. */
const manifest = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', labels: { app: 'web' } },
  spec: {
    selector: { app: 'web', version: 'v1' },
    ports: [
      { name: 'http', port: 9000, targetPort: 8000, protocol: 'TCP' },
      { name: 'dns', port: 9053, targetPort: 8053, protocol: 'UDP' },
      { name: 'admin', port: 9100, targetPort: 8100, protocol: 'TCP' },
    ],
  },
};
const POD_PORTS = [{ port: 8000 }, { port: 8001 }, { port: 8053, protocol: 'UDP' as const }, { port: 8100 }];

function takenOver(service: V1Service | undefined, release: string): boolean {
  return isTakeoverSelector(service?.spec?.selector, release);
}

function savedTargetPorts(service: V1Service | undefined): (number | string)[] {
  const parsed = parseSaved(service?.metadata?.annotations?.[ANNOTATION_ORIGINAL] ?? '');
  assert.ok(parsed.ok, 'a saved original');
  return parsed.saved.ports.map((port) => port.targetPort);
}

describe('never strand a Service: real traffic while the owner re-applies, renumbers and adopts', {
  timeout: suiteTimeout(120_000),
}, () => {
  let bed: Testbed;
  let proxy: InProcessProxy | undefined;
  let web = '';
  let path = '';
  /** The proxy's pod: its listeners there, so its UDP replies come from the address clients reach. */
  let proxyPodIp = '';

  before(async () => {
    bed = await startTestbed(serviceNet.cidr, podNet.prefix);
    proxyPodIp = `${bed.podNet}.250`;
    path = await bed.kubectl.manifest('web.yaml', manifest);
    await bed.kubectl('apply', '-f', path);
    web = await bed.clusterIp('web');
    await bed.startPod('web-v1', { app: 'web', version: 'v1' }, POD_PORTS, 'stable');
    await bed.startPod('web-v2', { app: 'web', version: 'v2' }, POD_PORTS, 'canary');
    await bed.startProxyPod('web-v2', { podIP: proxyPodIp });
    await createRelease(bed.cluster, 'web-v2', {
      services: [
        serviceEntry('web', [
          { port: 9000, weight: 20 },
          { port: 9053, protocol: 'UDP', weight: 20 },
        ]),
      ],
    });
    proxy = await startProxy(bed.cluster, 'web-v2', FIRST_BASE, { podIP: proxyPodIp });
    await waitForRelease(bed.cluster, 'web-v2', 'serving', serving);
  });

  after(async () => {
    await proxy?.stop();
    await bed.stop();
  });

  it('a re-apply of the manifest (kubectl apply, then server-side apply) fails no connection and is repaired at once, never taken for a hand-over', async (t) => {
    const tcp = startTraffic(() => web, 9000, 'TCP');
    const udp = startTraffic(() => web, 9053, 'UDP');
    await sleep(300);
    let repairedAt = 0;
    for (const apply of [
      ['apply', '-f', path],
      ['apply', '--server-side', '--force-conflicts', '--field-manager', 'gitops', '-f', path],
    ]) {
      await bed.kubectl(...apply);
      await waitForService(bed.cluster, 'web', 'the release takes it back', (found) => takenOver(found, 'web-v2'));
      repairedAt = tcp.now();
    }
    await sleep(500);
    await Promise.all([tcp.stop(), udp.stop()]);
    t.diagnostic(`TCP ${JSON.stringify(tcp.counts())}, UDP ${JSON.stringify(udp.counts())}`);
    assert.deepEqual(
      [...tcp.failures(), ...udp.failures()],
      [],
      "no connection or flow failed: the app's pods answer until the repair",
    );
    assert.ok(
      (tcp.counts(repairedAt).canary ?? 0) > 0 && (tcp.counts(repairedAt).stable ?? 0) > 0,
      'both versions serve after the repair',
    );
    const release = await waitForRelease(
      bed.cluster,
      'web-v2',
      'still running',
      (found) => found?.status?.phase === 'Running',
    );
    assert.equal(release?.status?.transition ?? null, null, 'no deprecation');
    assert.equal(conditionOf(release, 'Failure')?.status, 'False');
    assert.deepEqual(
      savedTargetPorts(await getService(bed.cluster, 'web')),
      [8000, 8053, 8100],
      'the saved original never holds a proxy port',
    );
  });

  it('a renumbered port (9100 → 9102, kubectl patch --type=json) keeps working through the proxy', async () => {
    await bed.kubectl(
      'patch',
      'svc',
      'web',
      '--type=json',
      '-p',
      '[{"op":"replace","path":"/spec/ports/2/port","value":9102}]',
    );
    await waitForService(
      bed.cluster,
      'web-forked',
      'the copy follows',
      (found) => found?.spec?.ports?.some((port) => port.port === 9102 && port.targetPort === 8100) === true,
    );
    const traffic = startTraffic(() => web, 9102, 'TCP', { maxAttempts: 20 });
    await waitFor(() => traffic.attempts.length >= 20, '20 connections to the renumbered port', 10_000);
    await traffic.stop();
    assert.deepEqual(traffic.counts(), { stable: 20 }, 'an unlisted port is served 100 % stable');
    assert.deepEqual(savedTargetPorts(await getService(bed.cluster, 'web')), [8000, 8053, 8100]);
  });

  it('a targetPort the owner moves (8000 → 8001) is followed by the copies and kept', async () => {
    await bed.kubectl(
      'patch',
      'svc',
      'web',
      '--type=json',
      '-p',
      '[{"op":"replace","path":"/spec/ports/0/targetPort","value":8001}]',
    );
    await waitForService(
      bed.cluster,
      'web-canary',
      'the copy follows',
      (found) => found?.spec?.ports?.[0]?.targetPort === 8001,
    );
    // The selector stayed taken over: what to wait for is the saved original following the edit.
    const service = await waitForService(
      bed.cluster,
      'web',
      'the edit saved',
      (found) => takenOver(found, 'web-v2') && savedTargetPorts(found)[0] === 8001,
    );
    assert.deepEqual(savedTargetPorts(service), [8001, 8053, 8100]);
    assert.deepEqual(
      service?.spec?.ports?.map((port) => port.targetPort),
      [8001, 8053, 8100],
      'kept: the proxy pod listens on 8001 now',
    );
  });

  it('Deprecated hands the Service back exactly as its owner left it: renumbered port, moved targetPort, and it answers', async () => {
    const traffic = startTraffic(() => web, 9000, 'TCP');
    await patchRelease(bed.cluster, 'web-v2', { spec: { transition: 'Deprecated' } });
    await waitForRelease(bed.cluster, 'web-v2', 'Deprecated', (found) => found?.status?.phase === 'Deprecated');
    const restored = await getService(bed.cluster, 'web');
    await sleep(300);
    await traffic.stop();
    assert.deepEqual(restored?.spec?.selector, { app: 'web', version: 'v1' });
    assert.deepEqual(
      restored?.spec?.ports?.map((port) => [port.name, port.port, port.targetPort]),
      [
        ['http', 9000, 8001],
        ['dns', 9053, 8053],
        ['admin', 9102, 8100],
      ],
    );
    assert.deepEqual(traffic.failures(), [], 'no connection failed across the hand-back');
    for (const port of [9000, 9102]) {
      const after = startTraffic(() => web, port, 'TCP', { maxAttempts: 5 });
      await waitFor(() => after.attempts.length >= 5, `5 connections to ${port}`);
      await after.stop();
      assert.deepEqual(after.counts(), { stable: 5 }, `port ${port} answers from the stable pods`);
    }
    await proxy?.stop();
    proxy = undefined;
  });

  it('Adopted waits while the canary has no Ready pod (its weight held at 0), then adopts once one is Ready', async (t) => {
    await bed.startProxyPod('web-v3', { podIP: proxyPodIp });
    await createRelease(bed.cluster, 'web-v3', { services: [serviceEntry('web', [{ port: 9000, weight: 50 }], 'v3')] });
    proxy = await startProxy(bed.cluster, 'web-v3', SECOND_BASE, { podIP: proxyPodIp });
    await waitForService(bed.cluster, 'web', 'taken over', (found) => takenOver(found, 'web-v3'));
    const traffic = startTraffic(() => web, 9000, 'TCP');
    const held = await waitForRelease(
      bed.cluster,
      'web-v3',
      'the weight held',
      (found) => found?.status?.ports?.[0]?.served === 0,
    );
    assert.match(held?.status?.weights ?? '', /web:9000=0% \(asks 50%\)/);
    await patchRelease(bed.cluster, 'web-v3', { spec: { transition: 'Adopted' } });
    const waiting = await waitForRelease(
      bed.cluster,
      'web-v3',
      'Adopting, waiting for a Ready canary',
      (found) =>
        found?.status?.phase === 'Adopting' && conditionOf(found, 'Progressing')?.reason === 'WaitingForReadyPods',
    );
    assert.match(
      conditionOf(waiting, 'Progressing')?.message ?? '',
      /canary selector app=web,version=v3 matches no Ready pod/,
    );
    await sleep(500);
    assert.deepEqual(
      traffic.counts(),
      { stable: traffic.attempts.length },
      'every connection reached a Ready stable pod meanwhile',
    );
    await bed.startPod('web-v3', { app: 'web', version: 'v3' }, POD_PORTS, 'v3');
    await waitForRelease(bed.cluster, 'web-v3', 'Adopted', (found) => found?.status?.phase === 'Adopted');
    const adoptedAt = traffic.now();
    await sleep(300);
    await traffic.stop();
    t.diagnostic(`connections: ${JSON.stringify(traffic.counts())}`);
    assert.deepEqual(traffic.failures(), [], 'no connection failed before, during or after the adoption');
    assert.deepEqual(Object.keys(traffic.counts(adoptedAt + 50)), ['v3'], 'after the adoption the new version answers');
    assert.deepEqual((await getService(bed.cluster, 'web'))?.spec?.selector, { app: 'web', version: 'v3' });
  });

  it('records every decision as an Event on the CanaryRelease', async () => {
    const events = await bed.cluster.core.listNamespacedEvent({
      namespace: NAMESPACE,
      fieldSelector: 'involvedObject.name=web-v2',
    });
    const reasons = new Set(events.items.map((event) => event.reason));
    for (const reason of ['Retargeted', 'DriftRepaired', 'Deprecating', 'Restored', 'Deprecated'])
      assert.ok(reasons.has(reason), `an Event ${reason}; got ${[...reasons].join(', ')}`);
    const v3 = await bed.cluster.core.listNamespacedEvent({
      namespace: NAMESPACE,
      fieldSelector: 'involvedObject.name=web-v3',
    });
    assert.ok(v3.items.some((event) => event.reason === 'WeightHeld' && event.type === 'Warning'));
    assert.ok(v3.items.some((event) => event.reason === 'WaitingForReadyPods'));
  });
});
