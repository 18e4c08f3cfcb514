// Bad CanaryReleases (issue 20) as a user applies them with kubectl, through a proxy against the fake
// apiserver: each is held (Holding, Failure InvalidRelease naming the field, an Event), nothing it
// asks for is acted on (the Service is not touched, no canary Deployment is made, no step advances),
// and a running release edited into a bad one keeps serving its last good weights. Every object
// here is one the CRD schema admits: what the schema refuses is shown in test/api/validate.test.ts.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import type { CanaryRelease } from '../../../src/api/release-types.ts';
import type { CanaryReleaseSpec } from '../../../src/api/spec-types.ts';
import { suiteTimeout } from '../../support/cluster/api-under-test.ts';
import { kubectlFor, type Kubectl } from '../../support/cluster/api-fixtures.ts';
import {
  conditionOf,
  createService,
  getService,
  judgedCurrentSpec,
  NAMESPACE,
  patchRelease,
  serving,
  split,
  startBackends,
  startCluster,
  startProxy,
  waitForRelease,
  type Backends,
  type Cluster,
  type InProcessProxy,
} from '../../support/cluster/release-cluster.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { waitFor } from '../../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const PORT_BASE = await freePortBlock(50);
const manifest = (name: string, spec: CanaryReleaseSpec) => ({
  apiVersion: 'canary-l4.io/v1alpha1',
  kind: 'CanaryRelease',
  metadata: { name },
  spec,
});
const entry = (service: string, port: number, weight?: number) => ({
  service,
  canaryServiceOperations: { add: { version: 'v2' } },
  ports: [{ port, ...(weight === undefined ? {} : { config: { weight } }) }],
});
const invalid = (field: string) => (found: CanaryRelease | undefined) =>
  found?.status?.phase === 'Holding' &&
  conditionOf(found, 'Failure')?.reason === 'InvalidRelease' &&
  conditionOf(found, 'Failure')!.message.includes(field);

describe('bad CanaryReleases, applied with kubectl, through a proxy', { timeout: suiteTimeout(90_000) }, () => {
  let cluster: Cluster;
  let kubectl: Kubectl;
  const proxies: InProcessProxy[] = [];
  const backends: Backends[] = [];

  before(async () => {
    cluster = await startCluster(addresses.cidr);
    kubectl = await kubectlFor(cluster.api);
  });

  after(async () => {
    await Promise.all(proxies.map((proxy) => proxy.stop()));
    await Promise.all(backends.map((started) => started.close()));
    await kubectl.cleanup();
    await cluster.stop();
  });

  const apply = async (name: string, spec: CanaryReleaseSpec) =>
    kubectl('apply', '-f', await kubectl.manifest(`${name}.yaml`, manifest(name, spec)));
  /** The release's first Event of `reason` whose message has `text`, once the recorder has sent it (it sends after the pass). */
  const eventOf = async (name: string, reason: string, text: string) =>
    waitFor(
      async () =>
        (
          await cluster.core.listNamespacedEvent({ namespace: NAMESPACE, fieldSelector: `involvedObject.name=${name}` })
        ).items.find((event) => event.reason === reason && event.message?.includes(text) === true),
      `an Event ${reason} on ${name} saying ${text}`,
    );

  it('promotedStep past the last step is refused by name, with an Event; the Service is not touched and no step is skipped', async () => {
    const service = await createService(cluster, 'stale', [{ name: 'http', port: 8600, targetPort: 9600 }]);
    const hourly = [
      { weight: 10, pause: { duration: '1h' } },
      { weight: 30, pause: { duration: '1h' } },
      { weight: 60, pause: { duration: '1h' } },
    ];
    await apply('stale-v2', { services: [entry('stale', 8600)], steps: hourly, promotedStep: 3 });
    proxies.push(await startProxy(cluster, 'stale-v2', PORT_BASE));
    const held = await waitForRelease(
      cluster,
      'stale-v2',
      'held on spec.promotedStep',
      invalid('spec.promotedStep: 3 is past the last step'),
    );
    assert.equal(conditionOf(held, 'Ready')?.status, 'False');
    assert.match(conditionOf(held, 'Ready')!.message, /spec.promotedStep/, 'READY says why');
    // An edit that leaves it as wrong: once the proxy has judged it, it had its chance to go on.
    await patchRelease(cluster, 'stale-v2', { spec: { promotedStep: 4 } });
    const still = await waitForRelease(
      cluster,
      'stale-v2',
      'the edit judged, still held',
      (found) => judgedCurrentSpec(found) && invalid('spec.promotedStep: 4')(found),
    );
    assert.equal(still?.status?.transition ?? null, null, 'not adopted');
    assert.equal(still?.status?.currentStep, undefined, 'no step started, none skipped');
    assert.equal(
      (await getService(cluster, 'stale'))?.metadata?.resourceVersion,
      service.metadata?.resourceVersion,
      'the Service is byte-for-byte as it was',
    );
    const warned = await eventOf(
      'stale-v2',
      'InvalidRelease',
      'spec.promotedStep: 3 is past the last step (there are 3, indexed 0–2: step 3/3 (index 2) is the last)',
    );
    assert.equal(warned?.type, 'Warning');

    // Fixed with kubectl apply: the first step is promoted, and only it.
    await apply('stale-v2', { services: [entry('stale', 8600)], steps: hourly, promotedStep: 0 });
    backends.push(await startBackends(cluster, 'stale', [{ port: 8600 }]));
    const running = await waitForRelease(
      cluster,
      'stale-v2',
      'step 2 of 3, holding for its hour',
      (found) =>
        serving(found) &&
        found?.status?.step === '2/3 (index 1)' &&
        /step 2\/3 \(index 1\) holds until/.test(found.status.pause?.reason ?? ''),
    );
    assert.equal(running?.status?.phase, 'Running');
  });

  it('a running release edited into a bad one (a pause with no end, a threshold that never fails) keeps serving its last good weight', async () => {
    await createService(cluster, 'keep', [{ name: 'http', port: 8610, targetPort: 9610 }]);
    await apply('keep-v2', { services: [entry('keep', 8610)], steps: [{ weight: 20, pause: {} }, { weight: 100 }] });
    proxies.push(await startProxy(cluster, 'keep-v2', PORT_BASE + 10));
    backends.push(await startBackends(cluster, 'keep', [{ port: 8610 }]));
    await waitForRelease(
      cluster,
      'keep-v2',
      'serving at 20 %',
      (found) => serving(found) && found?.status?.ports?.[0]?.served === 20,
    );
    assert.deepEqual(await split(PORT_BASE + 10, 10), { stable: 8, canary: 2 });
    const before = await getService(cluster, 'keep');

    await apply('keep-v2', {
      services: [entry('keep', 8610)],
      steps: [{ weight: 80, pause: { duration: '100000000000h' } }, { weight: 100 }],
      analysis: { thresholds: { resetRate: {} } },
    });
    const held = await waitForRelease(
      cluster,
      'keep-v2',
      'held on the pause',
      invalid('spec.steps[0].pause.duration: "100000000000h" is longer than 720h'),
    );
    assert.match(
      conditionOf(held, 'Failure')!.message,
      /spec.analysis.thresholds.resetRate: sets no bound, so it would never fail/,
    );
    assert.equal(conditionOf(held, 'Available')?.reason, 'LastGoodState');
    assert.equal(held?.status?.ports?.[0]?.served, 20, 'the last good weight is served');
    assert.deepEqual(await split(PORT_BASE + 10, 10), { stable: 8, canary: 2 }, 'and the proxy still splits by it');
    assert.equal(
      (await getService(cluster, 'keep'))?.metadata?.resourceVersion,
      before?.metadata?.resourceVersion,
      'the Service stays as it was',
    );
    await eventOf('keep-v2', 'InvalidRelease', 'spec.steps[0].pause.duration');
  });

  /** No canary Deployment was made of shop, and its Service is byte-for-byte as it was. */
  const assertShopUntouched = async (service: V1Service | undefined) => {
    const deployments = await cluster.apps.listNamespacedDeployment({ namespace: NAMESPACE });
    assert.deepEqual(
      deployments.items.map((item) => item.metadata?.name),
      ['shop'],
      'no canary Deployment',
    );
    assert.equal((await getService(cluster, 'shop'))?.metadata?.resourceVersion, service?.metadata?.resourceVersion);
  };

  it('a workload patch that drops a label the Deployment selects by, or blanks the image, is refused by name; no canary Deployment is made', async () => {
    // Patches as stored: the apiserver drops a null (`app: null`), so the label goes by `$patch: replace`.
    await cluster.apps.createNamespacedDeployment({
      namespace: NAMESPACE,
      body: {
        metadata: { name: 'shop' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'shop' } },
          template: {
            metadata: { labels: { app: 'shop', version: 'v1' } },
            spec: { containers: [{ name: 'shop', image: 'example/shop:1' }] },
          },
        },
      },
    });
    await createService(cluster, 'shop', [{ name: 'https', port: 8620, targetPort: 9620 }], {
      selector: { app: 'shop' },
    });
    const service = await getService(cluster, 'shop');
    await apply('shop-v2', {
      services: [{ service: 'shop', ports: [{ port: 8620, config: { weight: 10 } }] }],
      workloads: [{ name: 'shop', patch: { metadata: { labels: { $patch: 'replace', version: 'v2' } } } }],
    });
    proxies.push(await startProxy(cluster, 'shop-v2', PORT_BASE + 20));
    await waitForRelease(
      cluster,
      'shop-v2',
      'held on the patch',
      invalid("spec.workloads[0].patch.metadata.labels: drops app=shop, which the Deployment's selector needs"),
    );
    await apply('shop-v2', {
      services: [{ service: 'shop', ports: [{ port: 8620, config: { weight: 10 } }] }],
      workloads: [{ name: 'shop', patch: { spec: { containers: [{ name: 'shop', image: '' }] } } }],
    });
    await waitForRelease(
      cluster,
      'shop-v2',
      'held on the image',
      invalid('spec.workloads[0].patch.spec.containers[name=shop].image: the container has no image'),
    );
    await assertShopUntouched(service);
  });

  it('a workload patch that would add a container it meant to change (shpo for shop) is refused by name with an Event; nothing is made, the Service is untouched', async () => {
    // The Deployment shop, Service shop and the proxy of shop-v2 are the test's before.
    const service = await getService(cluster, 'shop');
    await apply('shop-v2', {
      services: [{ service: 'shop', ports: [{ port: 8620, config: { weight: 10 } }] }],
      workloads: [{ name: 'shop', patch: { spec: { containers: [{ name: 'shpo', image: 'example/shop:2' }] } } }],
    });
    const problem =
      'spec.workloads[0].patch.spec.containers[name=shpo]: the stable template has no container shpo (it has shop), so the patch would add one instead of changing one: did you mean shop?';
    const held = await waitForRelease(cluster, 'shop-v2', 'held on the added container', invalid(problem));
    assert.equal(conditionOf(held, 'Ready')?.status, 'False');
    assert.equal((await eventOf('shop-v2', 'InvalidRelease', problem))?.type, 'Warning');
    await assertShopUntouched(service);
  });

  it('a second transition is ignored as documented, but said: a condition message and a TransitionIgnored Event', async () => {
    await createService(cluster, 'twice', [{ name: 'http', port: 8630, targetPort: 9630 }]);
    await apply('twice-v2', { services: [entry('twice', 8630, 10)] });
    proxies.push(await startProxy(cluster, 'twice-v2', PORT_BASE + 30));
    backends.push(await startBackends(cluster, 'twice', [{ port: 8630 }]));
    await waitForRelease(cluster, 'twice-v2', 'serving', serving);
    await kubectl('patch', 'canaryrelease', 'twice-v2', '--type=merge', '-p', '{"spec":{"transition":"Adopted"}}');
    await kubectl('patch', 'canaryrelease', 'twice-v2', '--type=merge', '-p', '{"spec":{"transition":"Deprecated"}}');
    const said = await waitForRelease(
      cluster,
      'twice-v2',
      'the ignored Deprecated said',
      (found) =>
        conditionOf(found, 'Progressing')?.message.includes('spec.transition "Deprecated" is ignored') === true,
      15_000,
    );
    assert.equal(said?.status?.transition?.type, 'Adopted', 'the first transition wins');
    assert.match(
      conditionOf(said, 'Progressing')!.message,
      /the transition Adopted \(Requested\) was recorded first and wins; set spec.transition back to Adopted/,
    );
    await waitForRelease(cluster, 'twice-v2', 'adopted', (found) => found?.status?.phase === 'Adopted', 15_000);
    assert.equal(
      (await eventOf('twice-v2', 'TransitionIgnored', 'spec.transition "Deprecated" is ignored'))?.type,
      'Warning',
    );
  });

  it('a release asking 0 % everywhere runs, and says the canary gets no traffic', async () => {
    await createService(cluster, 'idle', [{ name: 'http', port: 8640, targetPort: 9640 }]);
    await apply('idle-v2', { services: [entry('idle', 8640)] });
    proxies.push(await startProxy(cluster, 'idle-v2', PORT_BASE + 40));
    backends.push(await startBackends(cluster, 'idle', [{ port: 8640 }]));
    const running = await waitForRelease(cluster, 'idle-v2', 'serving', serving);
    assert.match(
      conditionOf(running, 'Available')!.message,
      /every port asks 0 %, so the canary gets no traffic: set spec.services\[\]\.ports\[\]\.config.weight \(kubectl canary-l4 set-weight\) or spec.steps/,
    );
  });
});
