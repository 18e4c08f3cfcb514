/** Owner-reference garbage collection (background, foreground, orphan) and switching it off. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, type V1OwnerReference } from '@kubernetes/client-node';
import { type FakeApiServer, startFakeApiServer } from '../support/fake-apiserver/index.ts';
import { apiError, clients, CR, startFakeWithCrd, svc } from '../support/cluster/api-fixtures.ts';
import { waitFor } from '../support/wait.ts';

let api: FakeApiServer;
let core: ReturnType<typeof clients>['core'];
let custom: ReturnType<typeof clients>['custom'];
const ns = 'default';

before(async () => {
  ({ api, core, custom } = await startFakeWithCrd());
});
after(() => api.stop());

async function owner(name: string): Promise<V1OwnerReference> {
  const cr = await custom.createNamespacedCustomObject({
    ...CR,
    namespace: ns,
    body: { apiVersion: 'canary-l4.io/v1alpha1', kind: 'CanaryRelease', metadata: { name }, spec: { weight: 1 } },
  });
  return {
    apiVersion: 'canary-l4.io/v1alpha1',
    kind: 'CanaryRelease',
    name,
    uid: cr.metadata.uid,
    controller: true,
    blockOwnerDeletion: true,
  };
}
const gone = async (p: Promise<unknown>) => (await apiError(p)).code === 404;
const exists = async (p: Promise<unknown>) => {
  try {
    await p;
    return true;
  } catch {
    return false;
  }
};

describe('garbage collection', () => {
  it('background: dependents are deleted after the owner', async () => {
    const ref = await owner('bg');
    await core.createNamespacedService({
      namespace: ns,
      body: svc('bg-svc', { metadata: { ownerReferences: [ref] } }),
    });
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'bg-cm', ownerReferences: [ref] } },
    });
    await custom.deleteNamespacedCustomObject({ ...CR, namespace: ns, name: 'bg', propagationPolicy: 'Background' });
    await waitFor(() => gone(core.readNamespacedService({ name: 'bg-svc', namespace: ns })), 'service collected');
    await waitFor(() => gone(core.readNamespacedConfigMap({ name: 'bg-cm', namespace: ns })), 'configmap collected');
  });

  it('a dependent keeps living while another owner exists; the dangling reference is dropped', async () => {
    const a = await owner('multi-a');
    const b = await owner('multi-b');
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: {
        metadata: {
          name: 'multi',
          ownerReferences: [
            { ...a, controller: false },
            { ...b, controller: false },
          ],
        },
      },
    });
    await custom.deleteNamespacedCustomObject({ ...CR, namespace: ns, name: 'multi-a' });
    await waitFor(
      async () =>
        (await core.readNamespacedConfigMap({ name: 'multi', namespace: ns })).metadata!.ownerReferences!.length === 1,
      'dangling ref removed',
    );
  });

  it('foreground (propagation policy in the body, as kubectl sends it): owner waits for blocking dependents', async () => {
    const ref = await owner('fg');
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'fg-cm', ownerReferences: [ref], finalizers: ['test/hold'] } },
    });
    const res = await custom.deleteNamespacedCustomObject({
      ...CR,
      namespace: ns,
      name: 'fg',
      body: { propagationPolicy: 'Foreground' },
    });
    assert.ok(res.metadata.deletionTimestamp);
    assert.ok(res.metadata.finalizers.includes('foregroundDeletion'));
    // The dependent is being deleted but held by its own finalizer; the owner waits.
    await waitFor(
      async () =>
        Boolean((await core.readNamespacedConfigMap({ name: 'fg-cm', namespace: ns })).metadata!.deletionTimestamp),
      'dependent terminating',
    );
    assert.ok(await exists(custom.getNamespacedCustomObject({ ...CR, namespace: ns, name: 'fg' })));
    await core.patchNamespacedConfigMap(
      { name: 'fg-cm', namespace: ns, body: [{ op: 'remove', path: '/metadata/finalizers' }] },
      (await import('@kubernetes/client-node')).setHeaderOptions('Content-Type', 'application/json-patch+json'),
    );
    await waitFor(
      () => gone(custom.getNamespacedCustomObject({ ...CR, namespace: ns, name: 'fg' })),
      'owner removed after dependent',
    );
  });

  it('orphan: dependents lose the owner reference and survive', async () => {
    const ref = await owner('orph');
    await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'orph-cm', ownerReferences: [ref] } },
    });
    await custom.deleteNamespacedCustomObject({ ...CR, namespace: ns, name: 'orph', propagationPolicy: 'Orphan' });
    await waitFor(
      () => gone(custom.getNamespacedCustomObject({ ...CR, namespace: ns, name: 'orph' })),
      'owner removed',
    );
    const cm = await core.readNamespacedConfigMap({ name: 'orph-cm', namespace: ns });
    assert.equal(cm.metadata!.ownerReferences, undefined);
  });

  it('cascades through Deployment → ReplicaSet → Pod', async () => {
    const apps = api.kubeConfig.makeApiClient(AppsV1Api);
    const tmpl = { metadata: { labels: { a: 'b' } }, spec: { containers: [{ name: 'c', image: 'x:1' }] } };
    const d = await apps.createNamespacedDeployment({
      namespace: ns,
      body: { metadata: { name: 'casc' }, spec: { selector: { matchLabels: { a: 'b' } }, template: tmpl } },
    });
    const rs = await apps.createNamespacedReplicaSet({
      namespace: ns,
      body: {
        metadata: {
          name: 'casc-1',
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'Deployment', name: 'casc', uid: d.metadata!.uid!, controller: true },
          ],
        },
        spec: { selector: { matchLabels: { a: 'b' } }, template: tmpl },
      },
    });
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: {
          name: 'casc-1-x',
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'casc-1', uid: rs.metadata!.uid!, controller: true },
          ],
        },
        spec: tmpl.spec,
      },
    });
    await apps.deleteNamespacedDeployment({ name: 'casc', namespace: ns });
    await waitFor(() => gone(core.readNamespacedPod({ name: 'casc-1-x', namespace: ns })), 'pod collected');
    assert.ok(await gone(apps.readNamespacedReplicaSet({ name: 'casc-1', namespace: ns })));
  });
});

describe('garbage collection switched off (envtest-like)', () => {
  it('leaves dependents and foreground finalizers alone until switched back on', async () => {
    api.setGc(false);
    try {
      const ref = await owner('off');
      await core.createNamespacedConfigMap({
        namespace: ns,
        body: { metadata: { name: 'off-cm', ownerReferences: [ref] } },
      });
      await custom.deleteNamespacedCustomObject({ ...CR, namespace: ns, name: 'off' });
      await new Promise((r) => setTimeout(r, 50));
      assert.ok(await exists(core.readNamespacedConfigMap({ name: 'off-cm', namespace: ns })));
      const ref2 = await owner('off-fg');
      await custom.deleteNamespacedCustomObject({
        ...CR,
        namespace: ns,
        name: 'off-fg',
        propagationPolicy: 'Foreground',
      });
      await new Promise((r) => setTimeout(r, 50));
      const held = await custom.getNamespacedCustomObject({ ...CR, namespace: ns, name: 'off-fg' });
      assert.deepEqual(held.metadata.finalizers, ['foregroundDeletion']);
      assert.ok(ref2.uid);
    } finally {
      api.setGc(true);
    }
    await waitFor(() => gone(core.readNamespacedConfigMap({ name: 'off-cm', namespace: ns })), 'collected once on');
    await waitFor(
      () => gone(custom.getNamespacedCustomObject({ ...CR, namespace: ns, name: 'off-fg' })),
      'foreground finished once on',
    );
  });

  it('startFakeApiServer({ gc: false }) starts with it off', async () => {
    const off = await startFakeApiServer({ gc: false });
    try {
      const c = clients(off.kubeConfig).core;
      const cm = await c.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'owner' } } });
      await c.createNamespacedConfigMap({
        namespace: ns,
        body: {
          metadata: {
            name: 'dep',
            ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: 'owner', uid: cm.metadata!.uid! }],
          },
        },
      });
      await c.deleteNamespacedConfigMap({ name: 'owner', namespace: ns });
      await new Promise((r) => setTimeout(r, 50));
      assert.ok(await exists(c.readNamespacedConfigMap({ name: 'dep', namespace: ns })));
    } finally {
      await off.stop();
    }
  });
});
