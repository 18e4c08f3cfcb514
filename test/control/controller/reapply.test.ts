// A GitOps sync during a release fails no connection (issue 22), end to end, on the fake or a real
// control plane (npm run test:cluster): clients connect through a kube-proxy simulation (each
// Service's cluster IP → its endpoints: on the real API the EndpointSlices the EndpointSlice
// controller writes) the whole time, the proxy runs in a pod of its own (its listeners on the pod's IP, the
// pod labelled as the manager labels it from status.takeover), and the owner's manifest is
// re-applied every way a GitOps tool does — kubectl apply, apply --server-side --force-conflicts,
// replace — while the release runs, while a step is paused, and while it is Adopting. The manifest
// has a port with a targetPort and one without (defaulted from the port).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { ANNOTATION_ORIGINAL } from '../../../src/api/names.ts';
import { isTakeoverSelector } from '../../../src/control/service/takeover-selector.ts';
import { suiteTimeout } from '../../support/cluster/api-under-test.ts';

import {
  conditionOf,
  createRelease,
  getService,
  patchRelease,
  startProxy,
  waitForRelease,
  waitForService,
  type InProcessProxy,
} from '../../support/cluster/release-cluster.ts';
import {
  startTestbed,
  startTraffic,
  waitForAnswer,
  type Testbed,
  type Traffic,
} from '../../support/cluster/testbed.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { sleep } from '../../support/wait.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);

const RELEASE = 'web-v2';
const PORT_BASE = await freePortBlock(10);

const manifest = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', labels: { app: 'web' } },
  spec: {
    selector: { app: 'web', version: 'v1' },
    ports: [
      { name: 'http', port: 9000, targetPort: 8000, protocol: 'TCP' },
      // No targetPort: Kubernetes defaults it to the port, as many real manifests rely on.
      { name: 'alt', port: 9100, protocol: 'TCP' },
    ],
  },
};
const POD_PORTS = [{ port: 8000 }, { port: 9100 }];

const takenOver = (service: V1Service | undefined) => isTakeoverSelector(service?.spec?.selector, RELEASE);

describe('a GitOps sync during a release fails no connection', { timeout: suiteTimeout(180_000) }, () => {
  let bed: Testbed;
  let proxy: InProcessProxy | undefined;
  let path = '';
  let tcp: Traffic;
  let alt: Traffic;
  let repairs = 0;

  before(async () => {
    bed = await startTestbed(serviceNet.cidr, podNet.prefix);
    path = await bed.kubectl.manifest('web.yaml', manifest);
    await bed.kubectl('apply', '-f', path);
    const web = await bed.clusterIp('web');
    await bed.startPod('web-v1', { app: 'web', version: 'v1' }, POD_PORTS, 'stable');
    await bed.startPod('web-v2', { app: 'web', version: 'v2' }, POD_PORTS, 'canary');
    // The app serves before the release: every connection from here on must be answered.
    await Promise.all([waitForAnswer(web, 9000, 'TCP'), waitForAnswer(web, 9100, 'TCP')]);
    tcp = startTraffic(() => web, 9000, 'TCP', { maxMs: 170_000 });
    alt = startTraffic(() => web, 9100, 'TCP', { maxMs: 170_000 });
    await sleep(300);
  });

  after(async () => {
    await Promise.all([tcp?.stop(), alt?.stop()]);
    await proxy?.stop();
    await bed.stop();
  });

  /**
   * Every way a GitOps tool writes the owner's manifest. While the release runs, each is repaired
   * before the next; while a hand-back waits, the Service stays as applied (selecting the app's pods).
   */
  async function reapplyEveryWay(t: { diagnostic: (message: string) => void }, repaired = true): Promise<void> {
    for (const command of [
      ['apply', '-f', path],
      ['apply', '--server-side', '--force-conflicts', '--field-manager', 'argocd-controller', '-f', path],
      ['replace', '-f', path],
    ]) {
      await bed.kubectl(...command);
      const service = repaired
        ? await waitForService(bed.cluster, 'web', `taken back after kubectl ${command[0]} ${command[1]}`, takenOver)
        : await getService(bed.cluster, 'web');
      if (repaired) repairs += 1;
      else assert.deepEqual(service?.spec?.selector, manifest.spec.selector, 'as applied');
      assert.deepEqual(
        service?.spec?.ports?.map((port) => port.targetPort),
        [8000, 9100],
        'the targetPorts as the owner wrote them',
      );
      await sleep(150);
    }
    t.diagnostic(`TCP ${JSON.stringify(tcp.counts())}, no targetPort ${JSON.stringify(alt.counts())}`);
    assert.deepEqual([...tcp.failures(), ...alt.failures()], [], 'no connection failed');
  }

  it('the takeover (once a proxy pod carrying the takeover labels is Ready) fails no connection and keeps the targetPorts', async () => {
    const podIP = `${bed.podNet}.250`;
    await bed.startProxyPod(RELEASE, { podIP });
    await createRelease(bed.cluster, RELEASE, {
      services: [
        {
          service: 'web',
          canaryServiceOperations: { add: { version: 'v2' } },
          ports: [
            { port: 9000, protocol: 'TCP' },
            { port: 9100, protocol: 'TCP' },
          ],
        },
      ],
      steps: [
        { weight: 30, pause: { duration: '6s' } },
        { weight: 50, pause: {} },
      ],
    });
    proxy = await startProxy(bed.cluster, RELEASE, PORT_BASE, { podIP });
    const service = await waitForService(bed.cluster, 'web', 'taken over', takenOver, 15_000);
    assert.deepEqual(service?.spec?.selector, { app: 'canary-l4.web-v2', version: 'canary-l4.web-v2' });
    assert.deepEqual(
      service?.spec?.ports?.map((port) => port.targetPort),
      [8000, 9100],
    );
    const release = await waitForRelease(
      bed.cluster,
      RELEASE,
      'step 1 running',
      (found) => found?.status?.currentStep === 0 && found.status.takeover !== undefined,
    );
    assert.deepEqual(
      release?.status?.ports?.map((port) => [port.port, port.proxyPort, port.targetPortKept]),
      [
        [9000, 8000, true],
        [9100, 9100, true],
      ],
    );
    await sleep(500);
    assert.ok((tcp.counts().canary ?? 0) > 0, 'the canary answers through the proxy');
    assert.deepEqual([...tcp.failures(), ...alt.failures()], []);
  });

  it("re-applies while the release runs (step 1): the app's pods answer until the repair, none fails", async (t) => {
    await reapplyEveryWay(t);
    const release = await waitForRelease(
      bed.cluster,
      RELEASE,
      'still running',
      (found) => found?.status?.phase === 'Running',
    );
    assert.equal(release?.status?.transition ?? null, null, 'no deprecation');
  });

  it("re-applies during a step's pause (step 2, until promoted)", async (t) => {
    await waitForRelease(bed.cluster, RELEASE, 'step 2 paused', (found) => found?.status?.currentStep === 1, 20_000);
    await reapplyEveryWay(t);
    assert.equal(
      (await waitForRelease(bed.cluster, RELEASE, 'still step 2', (found) => found?.status?.currentStep === 1))?.status
        ?.phase,
      'Running',
    );
  });

  it('re-applies while Adopting (waiting for a Ready canary: the Service stays as applied), then the release ends adopted onto the canary', async (t) => {
    await bed.pods.markNotReady('web-v2');
    await patchRelease(bed.cluster, RELEASE, { spec: { promotedStep: 1 } });
    await waitForRelease(
      bed.cluster,
      RELEASE,
      'Adopting, waiting for a Ready canary',
      (found) =>
        found?.status?.phase === 'Adopting' && conditionOf(found, 'Progressing')?.reason === 'WaitingForReadyPods',
      20_000,
    );
    await reapplyEveryWay(t, false);
    await bed.pods.markReady('web-v2');
    await waitForRelease(bed.cluster, RELEASE, 'Adopted', (found) => found?.status?.phase === 'Adopted', 20_000);
    const adopted = await getService(bed.cluster, 'web');
    assert.deepEqual(adopted?.spec?.selector, { app: 'web', version: 'v2' });
    assert.deepEqual(
      adopted?.spec?.ports?.map((port) => [port.port, port.targetPort]),
      [
        [9000, 8000],
        [9100, 9100],
      ],
    );
    assert.equal(adopted?.metadata?.annotations?.[ANNOTATION_ORIGINAL], undefined);
    const adoptedAt = tcp.now();
    await sleep(400);
    await Promise.all([tcp.stop(), alt.stop()]);
    t.diagnostic(
      `${repairs} re-applies repaired; TCP ${JSON.stringify(tcp.counts())}, no targetPort ${JSON.stringify(alt.counts())}`,
    );
    assert.deepEqual(
      [...tcp.failures(), ...alt.failures()],
      [],
      'no connection failed from before the takeover to after the adoption',
    );
    assert.deepEqual(Object.keys(tcp.counts(adoptedAt + 100)), ['canary'], 'the adopted version answers');
  });

  it('records the repairs as Events', async () => {
    const events = await bed.cluster.core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: `involvedObject.name=${RELEASE}`,
    });
    const reasons = new Set(events.items.map((event) => event.reason));
    for (const reason of ['Retargeted', 'DriftRepaired', 'Adopting', 'Adopted'])
      assert.ok(reasons.has(reason), `an Event ${reason}; got ${[...reasons].join(', ')}`);
  });
});
