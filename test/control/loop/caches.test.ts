// The proxy's caches against the fake kube-apiserver: only the Pods and ReplicaSets its release's
// selectors can match are held (and the proxy's own pods), and a Service selector change moves the
// watch to the pods it selects now.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { ReleaseCaches } from '../../../src/control/loop/caches.ts';
import { defaultProxySelector, GROUP, PLURAL, VERSION, type Labels } from '../../../src/api/names.ts';
import { makeClients } from '../../../src/kube/client.ts';

import { Pods } from '../../support/cluster/pods.ts';
import { NAMESPACE, startCluster, type Cluster } from '../../support/cluster/release-cluster.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { waitFor } from '../../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const RELEASE = 'web-v2';
let cluster: Cluster;

before(async () => {
  cluster = await startCluster(addresses.cidr);
});
after(() => cluster.stop());

async function createReplicaSet(name: string, labels: Labels): Promise<void> {
  await cluster.apps.createNamespacedReplicaSet({
    namespace: NAMESPACE,
    body: {
      metadata: { name, labels: { ...labels } },
      spec: {
        replicas: 0,
        selector: { matchLabels: { ...labels } },
        template: { metadata: { labels: { ...labels } }, spec: { containers: [{ name: 'app', image: 'app:1' }] } },
      },
    },
  });
}

const names = (objects: readonly { metadata?: { name?: string } }[]) =>
  objects.map((object) => object.metadata?.name ?? '').sort();

describe('ReleaseCaches', () => {
  test("holds the pods and ReplicaSets its release can select and the proxy's own, not the rest of the namespace; follows a Service selector change", async (t) => {
    const { core, custom, api } = cluster;
    const pods = new Pods(api.kubeConfig, NAMESPACE);
    await core.createNamespacedService({
      namespace: NAMESPACE,
      body: { metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ port: 80 }] } },
    });
    await custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: NAMESPACE,
      plural: PLURAL,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'CanaryRelease',
        metadata: { name: RELEASE },
        spec: {
          services: [
            {
              service: 'web',
              canaryServiceOperations: { add: { track: 'canary' } },
              ports: [{ port: 80, config: { weight: 10 } }],
            },
          ],
        },
      },
    });
    await pods.create({ name: 'web-1', labels: { app: 'web' } });
    await pods.create({ name: 'web-canary-1', labels: { app: 'web', track: 'canary' } });
    await pods.create({ name: 'proxy-1', labels: defaultProxySelector(RELEASE) });
    await pods.create({ name: 'shop-1', labels: { app: 'shop' } });
    for (let i = 0; i < 20; i++)
      await pods.create({ name: `other-${i}`, labels: { app: `other-${i % 3}`, tier: 'web' } });
    await pods.create({ name: 'unlabelled' });
    await createReplicaSet('web-rs', { app: 'web' });
    await createReplicaSet('shop-rs', { app: 'shop' });
    await createReplicaSet('other-rs', { app: 'other-0' });

    let changes = 0;
    const caches = new ReleaseCaches({
      clients: makeClients(api.kubeConfig),
      namespace: NAMESPACE,
      release: RELEASE,
      proxySelector: defaultProxySelector(RELEASE),
      callOptions: undefined,
      onChange: () => changes++,
      onRestarted: () => {},
      log: pino({ level: 'silent' }),
    });
    t.after(() => caches.stop());
    await caches.synced;
    assert.equal(caches.settled(), true);
    assert.deepEqual(names(caches.pods()), ['proxy-1', 'web-1', 'web-canary-1']);
    assert.deepEqual(names(caches.replicaSets()), ['web-rs']);

    // The Service now selects the shop pods: the watch moves to them.
    const before = changes;
    await core.patchNamespacedService(
      { name: 'web', namespace: NAMESPACE, body: { spec: { selector: { app: 'shop' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    await waitFor(
      () => caches.settled() && names(caches.pods()).includes('shop-1'),
      'the pods watch to follow the Service selector',
      5_000,
    );
    assert.deepEqual(names(caches.pods()), ['proxy-1', 'shop-1']);
    assert.deepEqual(names(caches.replicaSets()), ['shop-rs']);
    assert.ok(changes > before, 'the switch is announced, so that a pass runs on the new pods');

    // A pod created afterwards that the release selects arrives by the watch; an unrelated one does not.
    await pods.create({ name: 'shop-2', labels: { app: 'shop' } });
    await pods.create({ name: 'other-late', labels: { app: 'other-1' } });
    await waitFor(() => names(caches.pods()).includes('shop-2'), 'a new pod of the release to arrive', 5_000);
    assert.deepEqual(names(caches.pods()), ['proxy-1', 'shop-1', 'shop-2']);
  });
});
