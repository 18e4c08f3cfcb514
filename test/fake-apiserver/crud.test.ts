/** CRUD, selectors, patches, status subresource and finalizers through the real client-node over HTTP. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import {
  AppsV1Api,
  CoordinationV1Api,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  V1MicroTime,
  Watch,
  type V1Pod,
} from '@kubernetes/client-node';
import type { FakeApiServer } from '../support/fake-apiserver/index.ts';
import { apiError, type clients, CR, startFakeWithCrd, svc } from '../support/cluster/api-fixtures.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const strategic = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
const jsonPatch = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

let api: FakeApiServer;
let core: ReturnType<typeof clients>['core'];
let custom: ReturnType<typeof clients>['custom'];
const ns = 'default';

before(async () => {
  ({ api, core, custom } = await startFakeWithCrd({ serviceCidr: addresses.cidr }));
});
after(() => api.stop());

describe('create', () => {
  it('defaults a Service: metadata, type, cluster IP from the range, port protocol and targetPort', async () => {
    const s = await core.createNamespacedService({ namespace: ns, body: svc('defaults') });
    assert.match(s.metadata!.uid!, /^[0-9a-f-]{36}$/);
    assert.match(String(s.metadata!.creationTimestamp!.toISOString()), /^\d{4}-/);
    assert.equal(s.metadata!.generation, 1);
    assert.ok(Number(s.metadata!.resourceVersion) > 0);
    assert.equal(s.spec!.type, 'ClusterIP');
    assert.match(s.spec!.clusterIP!, addresses.addressPattern);
    assert.deepEqual(s.spec!.clusterIPs, [s.spec!.clusterIP]);
    assert.equal(s.spec!.sessionAffinity, 'None');
    assert.deepEqual(JSON.parse(JSON.stringify(s.spec!.ports![0])), {
      name: 'http',
      port: 80,
      protocol: 'TCP',
      targetPort: 80,
    });
  });

  it('allocates distinct cluster IPs and honours a requested one', async () => {
    const a = await core.createNamespacedService({ namespace: ns, body: svc('ip-a') });
    const b = await core.createNamespacedService({
      namespace: ns,
      body: svc('ip-b', { spec: { clusterIP: addresses.ip(200) } }),
    });
    assert.notEqual(a.spec!.clusterIP, b.spec!.clusterIP);
    assert.equal(b.spec!.clusterIP, addresses.ip(200));
    const dup = await apiError(
      core.createNamespacedService({ namespace: ns, body: svc('ip-c', { spec: { clusterIP: addresses.ip(200) } }) }),
    );
    assert.equal(dup.code, 422);
    assert.equal(dup.body.reason, 'Invalid');
  });

  it('generateName, AlreadyExists, namespace mismatch and missing namespace', async () => {
    const cm = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { generateName: 'gen-' }, data: { a: 'b' } },
    });
    assert.match(cm.metadata!.name!, /^gen-[a-z0-9]{5}$/);
    const dup = await apiError(
      core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: cm.metadata!.name } } }),
    );
    assert.equal(dup.code, 409);
    assert.equal(dup.body.reason, 'AlreadyExists');
    assert.equal(dup.body.kind, 'Status');
    assert.equal(dup.body.message, `configmaps "${cm.metadata!.name}" already exists`);
    const mismatch = await apiError(
      core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'x', namespace: 'other' } } }),
    );
    assert.equal(mismatch.code, 400);
    const noNs = await apiError(
      core.createNamespacedConfigMap({ namespace: 'nope', body: { metadata: { name: 'x' } } }),
    );
    assert.equal(noNs.code, 404);
    assert.equal(noNs.body.message, 'namespaces "nope" not found');
  });

  it('drops .status on create when status is a subresource', async () => {
    const cr = await custom.createNamespacedCustomObject({
      ...CR,
      namespace: ns,
      body: {
        apiVersion: 'canary-l4.io/v1alpha1',
        kind: 'CanaryRelease',
        metadata: { name: 'st' },
        spec: { weight: 1 },
        status: { phase: 'x' },
      },
    });
    assert.equal(cr.status, undefined);
    assert.equal(cr.metadata.generation, 1);
  });
});

describe('get and errors', () => {
  it('404 is a NotFound Status with details', async () => {
    const e = await apiError(core.readNamespacedService({ name: 'missing', namespace: ns }));
    assert.equal(e.code, 404);
    assert.deepEqual(e.body, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'services "missing" not found',
      reason: 'NotFound',
      details: { name: 'missing', group: '', kind: 'services' },
      code: 404,
    });
    const c = await apiError(custom.getNamespacedCustomObject({ ...CR, namespace: ns, name: 'c9' }));
    assert.equal(c.body.message, 'canaryreleases.canary-l4.io "c9" not found');
  });

  it('unknown resources get the apiserver 404', async () => {
    const e = await apiError(
      custom.listNamespacedCustomObject({ group: 'nope.io', version: 'v1', plural: 'things', namespace: ns }),
    );
    assert.equal(e.code, 404);
    assert.equal(e.body.message, 'the server could not find the requested resource');
  });
});

describe('list with selectors', () => {
  before(async () => {
    for (const [name, labels] of [
      ['sel-a', { tier: 'fe', track: 'stable' }],
      ['sel-b', { tier: 'fe', track: 'canary' }],
      ['sel-c', { tier: 'be' }],
    ] as const)
      await core.createNamespacedPod({
        namespace: ns,
        body: { metadata: { name, labels }, spec: { containers: [{ name: 'c', image: 'x:1' }] } },
      });
  });
  const names = (l: { items: Array<{ metadata?: { name?: string } }> }) => l.items.map((i) => i.metadata!.name).sort();

  it('equality and set-based label selectors', async () => {
    assert.deepEqual(names(await core.listNamespacedPod({ namespace: ns, labelSelector: 'tier=fe' })), [
      'sel-a',
      'sel-b',
    ]);
    assert.deepEqual(names(await core.listNamespacedPod({ namespace: ns, labelSelector: 'tier=fe,track!=canary' })), [
      'sel-a',
    ]);
    assert.deepEqual(
      names(await core.listNamespacedPod({ namespace: ns, labelSelector: 'track in (canary,stable)' })),
      ['sel-a', 'sel-b'],
    );
    assert.deepEqual(names(await core.listNamespacedPod({ namespace: ns, labelSelector: 'tier,!track' })), ['sel-c']);
    assert.deepEqual(names(await core.listNamespacedPod({ namespace: ns, labelSelector: 'tier notin (fe)' })), [
      'sel-c',
    ]);
  });

  it('a watch with a set-based selector (as the proxy watches pods): ADDED for a match, DELETED when relabelled out of it', async () => {
    const list = await core.listNamespacedPod({
      namespace: ns,
      labelSelector: 'tier in (fe,mid),track in (canary,stable)',
    });
    assert.deepEqual(names(list), ['sel-a', 'sel-b']);
    const events: string[] = [];
    const abort = await new Watch(api.kubeConfig).watch(
      `/api/v1/namespaces/${ns}/pods`,
      { labelSelector: 'tier in (fe,mid),track in (canary,stable)', resourceVersion: list.metadata!.resourceVersion },
      (type, pod: V1Pod) => events.push(`${type} ${pod.metadata!.name}`),
      () => {},
    );
    try {
      for (const [name, labels] of [
        ['sel-w1', { tier: 'mid', track: 'stable' }],
        ['sel-w2', { tier: 'be', track: 'stable' }],
        ['sel-w3', { tier: 'fe' }],
      ] as const)
        await core.createNamespacedPod({
          namespace: ns,
          body: { metadata: { name, labels }, spec: { containers: [{ name: 'c', image: 'x:1' }] } },
        });
      await core.patchNamespacedPod(
        { name: 'sel-w1', namespace: ns, body: { metadata: { labels: { tier: 'be' } } } },
        merge,
      );
      await waitFor(() => events.length >= 2, 'the watch to see sel-w1 come and go');
      assert.deepEqual(events, ['ADDED sel-w1', 'DELETED sel-w1']);
    } finally {
      abort.abort();
      for (const name of ['sel-w1', 'sel-w2', 'sel-w3'])
        await core.deleteNamespacedPod({ name, namespace: ns, gracePeriodSeconds: 0 });
    }
  });

  it('field selectors on metadata.name / metadata.namespace; others are 400', async () => {
    assert.deepEqual(names(await core.listPodForAllNamespaces({ fieldSelector: 'metadata.name=sel-b' })), ['sel-b']);
    assert.deepEqual(
      names(
        await core.listPodForAllNamespaces({
          fieldSelector: 'metadata.namespace=default,metadata.name!=sel-a',
          labelSelector: 'tier',
        }),
      ),
      ['sel-b', 'sel-c'],
    );
    const e = await apiError(core.listNamespacedService({ namespace: ns, fieldSelector: 'spec.type=ClusterIP' }));
    assert.equal(e.code, 400);
    assert.equal(e.body.message, 'field label not supported: spec.type');
  });

  it('returns the list kind, the current RV and pages with limit/continue', async () => {
    const l = await core.listNamespacedPod({ namespace: ns, labelSelector: 'tier', limit: 2 });
    assert.equal(l.kind, 'PodList');
    assert.equal(l.items.length, 2);
    assert.ok(l.metadata!._continue);
    const rest = await core.listNamespacedPod({
      namespace: ns,
      labelSelector: 'tier',
      limit: 2,
      _continue: l.metadata!._continue,
    });
    assert.deepEqual([...names(l), ...names(rest)], ['sel-a', 'sel-b', 'sel-c']);
    assert.equal(rest.metadata!._continue ?? '', '');
    const all = await custom.listCustomObjectForAllNamespaces({
      group: CR.group,
      version: CR.version,
      resourcePlural: CR.plural,
    });
    assert.equal(all.kind, 'CanaryReleaseList');
    assert.equal(all.metadata.resourceVersion, api.resourceVersion());
  });
});

describe('update', () => {
  it('409 Conflict on a stale resourceVersion; succeeds on the current one', async () => {
    const cm = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'upd' }, data: { a: '1' } },
    });
    const fresh = await core.replaceNamespacedConfigMap({
      name: 'upd',
      namespace: ns,
      body: { ...cm, data: { a: '2' } },
    });
    assert.notEqual(fresh.metadata!.resourceVersion, cm.metadata!.resourceVersion);
    const e = await apiError(
      core.replaceNamespacedConfigMap({ name: 'upd', namespace: ns, body: { ...cm, data: { a: '3' } } }),
    );
    assert.equal(e.code, 409);
    assert.equal(e.body.reason, 'Conflict');
    assert.equal(
      e.body.message,
      'Operation cannot be fulfilled on configmaps "upd": the object has been modified; please apply your changes to the latest version and try again',
    );
  });

  // The three below are what a real control plane answered where this fake once did otherwise.
  it("a pod's spec cannot change but for images (and a few fields); its labels can (422 Forbidden, as kube-apiserver)", async () => {
    const pod = await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'fixed' },
        spec: { containers: [{ name: 'app', image: 'app:1', ports: [{ containerPort: 80 }] }] },
      },
    });
    const e = await apiError(
      core.replaceNamespacedPod({
        name: 'fixed',
        namespace: ns,
        body: {
          ...pod,
          spec: {
            ...pod.spec!,
            containers: [{ ...pod.spec!.containers[0]!, ports: [{ name: 'http', containerPort: 80 }] }],
          },
        },
      }),
    );
    assert.equal(e.code, 422);
    assert.match(
      e.body.message,
      /^Pod "fixed" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers\[\*\].image`/,
    );
    const relabelled = await core.patchNamespacedPod(
      {
        name: 'fixed',
        namespace: ns,
        body: { metadata: { labels: { app: 'x' } }, spec: { containers: [{ name: 'app', image: 'app:2' }] } },
      },
      strategic,
    );
    assert.equal(relabelled.spec?.containers[0]?.image, 'app:2');
    const bound = await core.patchNamespacedPod(
      { name: 'fixed', namespace: ns, body: { spec: { nodeName: 'node-a' } } },
      merge,
    );
    assert.equal(bound.spec?.nodeName, 'node-a', 'an unbound pod may be bound');
    assert.equal(
      (
        await apiError(
          core.patchNamespacedPod({ name: 'fixed', namespace: ns, body: { spec: { nodeName: 'node-b' } } }, merge),
        )
      ).code,
      422,
      'but not moved',
    );
  });

  it("a Lease's times are MicroTimes: six fractional digits, or 400 as kube-apiserver cannot decode it", async () => {
    const leases = api.kubeConfig.makeApiClient(CoordinationV1Api);
    const e = await apiError(
      leases.createNamespacedLease({
        namespace: ns,
        body: {
          metadata: { name: 'ms' },
          spec: { holderIdentity: 'a', renewTime: '2026-12-01T23:00:29.094Z' as unknown as V1MicroTime },
        },
      }),
    );
    assert.equal(e.code, 400);
    assert.equal(
      e.body.message,
      'Lease in version "v1" cannot be handled as a Lease: parsing time "2026-12-01T23:00:29.094Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".094Z" as ".000000"',
    );
    const made = await leases.createNamespacedLease({
      namespace: ns,
      body: {
        metadata: { name: 'us' },
        spec: { holderIdentity: 'a', renewTime: new V1MicroTime('2026-12-01T23:00:29.094Z') },
      },
    });
    assert.equal(made.spec?.holderIdentity, 'a');
  });

  it('custom resources need a resourceVersion on update (422); built-ins do not', async () => {
    const cr = await custom.createNamespacedCustomObject({
      ...CR,
      namespace: ns,
      body: {
        apiVersion: 'canary-l4.io/v1alpha1',
        kind: 'CanaryRelease',
        metadata: { name: 'upd' },
        spec: { weight: 1 },
      },
    });
    const body = { ...cr, metadata: { name: 'upd', namespace: ns } };
    const e = await apiError(custom.replaceNamespacedCustomObject({ ...CR, namespace: ns, name: 'upd', body }));
    assert.equal(e.code, 422);
    assert.match(e.body.message, /must be specified for an update/);
    const cm = await core.replaceNamespacedConfigMap({
      name: 'upd',
      namespace: ns,
      body: { metadata: { name: 'upd' }, data: { b: '1' } },
    });
    assert.deepEqual(cm.data, { b: '1' });
  });

  it('leases: get, create, update (leader election path)', async () => {
    const coord = api.kubeConfig.makeApiClient(CoordinationV1Api);
    assert.equal((await apiError(coord.readNamespacedLease({ name: 'leader', namespace: ns }))).code, 404);
    const now = new V1MicroTime();
    const l = await coord.createNamespacedLease({
      namespace: ns,
      body: {
        metadata: { name: 'leader' },
        spec: { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: now, renewTime: now, leaseTransitions: 0 },
      },
    });
    const got = await coord.readNamespacedLease({ name: 'leader', namespace: ns });
    assert.equal(got.spec!.holderIdentity, 'a');
    got.spec!.holderIdentity = 'b';
    got.spec!.leaseTransitions = 1;
    const upd = await coord.replaceNamespacedLease({ name: 'leader', namespace: ns, body: got });
    assert.equal(upd.spec!.holderIdentity, 'b');
    const stale = await apiError(coord.replaceNamespacedLease({ name: 'leader', namespace: ns, body: l }));
    assert.equal(stale.code, 409);
  });

  it('a no-op write keeps the resourceVersion', async () => {
    const cm = await core.createNamespacedConfigMap({
      namespace: ns,
      body: { metadata: { name: 'noop' }, data: { a: '1' } },
    });
    const rvBefore = api.resourceVersion();
    const same = await core.patchNamespacedConfigMap(
      { name: 'noop', namespace: ns, body: { data: { a: '1' } } },
      merge,
    );
    assert.equal(same.metadata!.resourceVersion, cm.metadata!.resourceVersion);
    const put = await core.replaceNamespacedConfigMap({ name: 'noop', namespace: ns, body: cm });
    assert.equal(put.metadata!.resourceVersion, cm.metadata!.resourceVersion);
    assert.equal(api.resourceVersion(), rvBefore);
  });
});

describe('patch', () => {
  before(async () => {
    await core.createNamespacedService({
      namespace: ns,
      body: svc('p', {
        spec: {
          ports: [
            { name: 'http', port: 80, targetPort: 8080 },
            { name: 'm', port: 9090 },
          ],
        },
      }),
    });
    await custom.createNamespacedCustomObject({
      ...CR,
      namespace: ns,
      body: {
        apiVersion: 'canary-l4.io/v1alpha1',
        kind: 'CanaryRelease',
        metadata: { name: 'p' },
        spec: { service: 'p', weight: 10 },
      },
    });
  });

  it('merge patch on a Service (null deletes) keeps the cluster IP', async () => {
    const before = await core.readNamespacedService({ name: 'p', namespace: ns });
    const s = await core.patchNamespacedService(
      {
        name: 'p',
        namespace: ns,
        body: { spec: { selector: { track: 'canary', app: null } }, metadata: { annotations: { w: '10' } } },
      },
      merge,
    );
    assert.deepEqual(s.spec!.selector, { track: 'canary' });
    assert.equal(s.metadata!.annotations!.w, '10');
    assert.equal(s.spec!.clusterIP, before.spec!.clusterIP);
  });

  it('strategic merge patch on a Service: ports by key, $patch delete, $setElementOrder', async () => {
    let s = await core.patchNamespacedService(
      { name: 'p', namespace: ns, body: { spec: { ports: [{ port: 80, targetPort: 8081 }] } } },
      strategic,
    );
    assert.deepEqual(
      s.spec!.ports!.map((p) => [p.port, p.targetPort]),
      [
        [80, 8081],
        [9090, 9090],
      ],
    );
    s = await core.patchNamespacedService(
      {
        name: 'p',
        namespace: ns,
        body: {
          spec: {
            '$setElementOrder/ports': [{ port: 9090 }, { port: 443 }],
            ports: [
              { name: 'https', port: 443 },
              { $patch: 'delete', port: 80 },
            ],
          },
        },
      },
      strategic,
    );
    assert.deepEqual(
      s.spec!.ports!.map((p) => p.port),
      [9090, 443],
    );
    assert.equal(s.spec!.ports![1]!.protocol, 'TCP');
    assert.equal(s.spec!.ports![1]!.targetPort, 443);
  });

  it('JSON patch, with test', async () => {
    const s = await core.patchNamespacedService(
      {
        name: 'p',
        namespace: ns,
        body: [
          { op: 'test', path: '/spec/type', value: 'ClusterIP' },
          { op: 'add', path: '/metadata/labels/x', value: 'y' },
        ],
      },
      jsonPatch,
    );
    assert.equal(s.metadata!.labels!.x, 'y');
    const e = await apiError(
      core.patchNamespacedService(
        { name: 'p', namespace: ns, body: [{ op: 'test', path: '/spec/type', value: 'NodePort' }] },
        jsonPatch,
      ),
    );
    assert.equal(e.code, 422);
  });

  it('an object body without a Content-Type override is sent as JSON patch and rejected (400)', async () => {
    const e = await apiError(
      core.patchNamespacedService({ name: 'p', namespace: ns, body: { metadata: { labels: { z: '1' } } } }),
    );
    assert.equal(e.code, 400);
  });

  it('custom resources: merge and JSON patch work; strategic merge is 415', async () => {
    const cr = await custom.patchNamespacedCustomObject(
      { ...CR, namespace: ns, name: 'p', body: { spec: { weight: 20 } } },
      merge,
    );
    assert.equal(cr.spec.weight, 20);
    assert.equal(cr.metadata.generation, 2);
    const cr2 = await custom.patchNamespacedCustomObject(
      { ...CR, namespace: ns, name: 'p', body: [{ op: 'replace', path: '/spec/weight', value: 30 }] },
      jsonPatch,
    );
    assert.equal(cr2.spec.weight, 30);
    const e = await apiError(
      custom.patchNamespacedCustomObject(
        { ...CR, namespace: ns, name: 'p', body: { spec: { weight: 40 } } },
        strategic,
      ),
    );
    assert.equal(e.code, 415);
    assert.equal(e.body.reason, 'UnsupportedMediaType');
  });

  it('a resourceVersion in the patch body is a precondition', async () => {
    const e = await apiError(
      custom.patchNamespacedCustomObject(
        { ...CR, namespace: ns, name: 'p', body: { metadata: { resourceVersion: '1' }, spec: { weight: 1 } } },
        merge,
      ),
    );
    assert.equal(e.code, 409);
  });

  it('strategic merge on a Deployment merges containers by name', async () => {
    const apps = api.kubeConfig.makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'd' },
        spec: {
          selector: { matchLabels: { a: 'b' } },
          template: {
            metadata: { labels: { a: 'b' } },
            spec: {
              containers: [
                { name: 'app', image: 'a:1' },
                { name: 'side', image: 's:1' },
              ],
            },
          },
        },
      },
    });
    const d = await apps.patchNamespacedDeployment(
      {
        name: 'd',
        namespace: ns,
        body: { spec: { template: { spec: { containers: [{ name: 'app', image: 'a:2' }] } } } },
      },
      strategic,
    );
    assert.deepEqual(
      d.spec!.template.spec!.containers.map((c) => c.image),
      ['a:2', 's:1'],
    );
    assert.equal(d.metadata!.generation, 2);
    assert.equal(d.spec!.replicas, 1);
  });

  it('KubernetesObjectApi (generic client) discovers plurals and patches', async () => {
    const generic = api.kubeConfig.makeApiClient(KubernetesObjectApi);
    const got = await generic.read({
      apiVersion: 'canary-l4.io/v1alpha1',
      kind: 'CanaryRelease',
      metadata: { name: 'p', namespace: ns },
    });
    assert.equal((got as any).spec.service, 'p');
    const patched = await generic.patch(
      {
        apiVersion: 'canary-l4.io/v1alpha1',
        kind: 'CanaryRelease',
        metadata: { name: 'p', namespace: ns },
        spec: { weight: 5 },
      } as any,
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
    assert.equal((patched as any).spec.weight, 5);
  });
});

describe('status subresource', () => {
  it('spec and status are written apart; generation moves only with spec', async () => {
    await custom.createNamespacedCustomObject({
      ...CR,
      namespace: ns,
      body: {
        apiVersion: 'canary-l4.io/v1alpha1',
        kind: 'CanaryRelease',
        metadata: { name: 's' },
        spec: { weight: 1 },
      },
    });
    // Status written through the main resource is ignored.
    const a = await custom.patchNamespacedCustomObject(
      { ...CR, namespace: ns, name: 's', body: { status: { phase: 'Ignored' }, metadata: { labels: { l: '1' } } } },
      merge,
    );
    assert.equal(a.status, undefined);
    assert.equal(a.metadata.labels.l, '1');
    assert.equal(a.metadata.generation, 1);
    // Spec written through /status is ignored; status lands; generation stays.
    const b = await custom.patchNamespacedCustomObjectStatus(
      {
        ...CR,
        namespace: ns,
        name: 's',
        body: { status: { phase: 'Progressing', observedGeneration: 1 }, spec: { weight: 99 } },
      },
      merge,
    );
    assert.deepEqual(b.status, { phase: 'Progressing', observedGeneration: 1 });
    assert.equal(b.spec.weight, 1);
    assert.equal(b.metadata.generation, 1);
    // Spec change bumps generation and keeps status.
    const c = await custom.patchNamespacedCustomObject(
      { ...CR, namespace: ns, name: 's', body: { spec: { weight: 2 } } },
      merge,
    );
    assert.equal(c.metadata.generation, 2);
    assert.equal(c.status.phase, 'Progressing');
    // PUT on /status.
    const d = await custom.replaceNamespacedCustomObjectStatus({
      ...CR,
      namespace: ns,
      name: 's',
      body: { ...c, status: { phase: 'Done' } },
    });
    assert.equal(d.status.phase, 'Done');
    assert.equal(d.metadata.generation, 2);
    const got = await custom.getNamespacedCustomObjectStatus({ ...CR, namespace: ns, name: 's' });
    assert.equal(got.status.phase, 'Done');
  });

  it('Pods: status via replaceNamespacedPodStatus, list/watch sees it', async () => {
    const p = await core.readNamespacedPod({ name: 'sel-a', namespace: ns });
    assert.equal(p.status!.phase, 'Pending');
    p.status = { phase: 'Running', podIP: '127.0.0.5' };
    const r = await core.replaceNamespacedPodStatus({ name: 'sel-a', namespace: ns, body: p });
    assert.equal(r.status!.phase, 'Running');
    assert.equal(r.metadata!.generation, 1);
  });
});

describe('delete and finalizers', () => {
  it('a Service delete returns the object; a ConfigMap delete returns a Success Status', async () => {
    await core.createNamespacedService({ namespace: ns, body: svc('del') });
    const s = await core.deleteNamespacedService({ name: 'del', namespace: ns });
    assert.equal(s.metadata!.name, 'del');
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'del' } } });
    const st = await core.deleteNamespacedConfigMap({ name: 'del', namespace: ns });
    assert.equal(st.status, 'Success');
    assert.equal((await apiError(core.readNamespacedConfigMap({ name: 'del', namespace: ns }))).code, 404);
  });

  it('finalizers hold the object with a deletionTimestamp until they are removed', async () => {
    await custom.createNamespacedCustomObject({
      ...CR,
      namespace: ns,
      body: {
        apiVersion: 'canary-l4.io/v1alpha1',
        kind: 'CanaryRelease',
        metadata: { name: 'fin', finalizers: ['canary-l4.io/cleanup'] },
        spec: { weight: 1 },
      },
    });
    const pending = await custom.deleteNamespacedCustomObject({ ...CR, namespace: ns, name: 'fin' });
    assert.ok(pending.metadata.deletionTimestamp);
    assert.equal(pending.metadata.generation, 2);
    const still = await custom.getNamespacedCustomObject({ ...CR, namespace: ns, name: 'fin' });
    assert.deepEqual(still.metadata.finalizers, ['canary-l4.io/cleanup']);
    // No new finalizers on a terminating object.
    const e = await apiError(
      custom.patchNamespacedCustomObject(
        { ...CR, namespace: ns, name: 'fin', body: { metadata: { finalizers: ['canary-l4.io/cleanup', 'other'] } } },
        merge,
      ),
    );
    assert.equal(e.code, 422);
    // Status writes still work while terminating.
    const cleaning = await custom.patchNamespacedCustomObjectStatus(
      { ...CR, namespace: ns, name: 'fin', body: { status: { phase: 'Cleaning' } } },
      merge,
    );
    const last = await custom.patchNamespacedCustomObject(
      { ...CR, namespace: ns, name: 'fin', body: { metadata: { finalizers: null } } },
      merge,
    );
    assert.equal((await apiError(custom.getNamespacedCustomObject({ ...CR, namespace: ns, name: 'fin' }))).code, 404);
    // As kube-apiserver answers (deleteWithoutFinalizers): the patched object, at the resourceVersion
    // it had before; a watch shows the deletion at a later one.
    assert.equal(last.metadata.resourceVersion, cleaning.metadata.resourceVersion);
    assert.equal(last.metadata.finalizers, undefined);
  });

  it('preconditions and dryRun', async () => {
    const cm = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'pre' } } });
    const e = await apiError(
      core.deleteNamespacedConfigMap({ name: 'pre', namespace: ns, body: { preconditions: { uid: 'not-it' } } }),
    );
    assert.equal(e.code, 409);
    await core.deleteNamespacedConfigMap({ name: 'pre', namespace: ns, dryRun: 'All' });
    const still = await core.readNamespacedConfigMap({ name: 'pre', namespace: ns });
    assert.equal(still.metadata!.uid, cm.metadata!.uid);
    const dry = await core.createNamespacedConfigMap({
      namespace: ns,
      dryRun: 'All',
      body: { metadata: { name: 'dry' } },
    });
    assert.equal(dry.metadata!.name, 'dry');
    assert.equal((await apiError(core.readNamespacedConfigMap({ name: 'dry', namespace: ns }))).code, 404);
    // With a body, kube-apiserver reads DeleteOptions from the body alone (a real control plane ignored
    // a query gracePeriodSeconds=0 beside one): here the query's dryRun does not count.
    const other = await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'pre-body' } } });
    await core.deleteNamespacedConfigMap({
      name: 'pre-body',
      namespace: ns,
      dryRun: 'All',
      body: { preconditions: { uid: other.metadata!.uid! } },
    });
    assert.equal((await apiError(core.readNamespacedConfigMap({ name: 'pre-body', namespace: ns }))).code, 404);
  });

  it('namespaces: create content, delete → Terminating → gone with its content', async () => {
    await core.createNamespace({ body: { metadata: { name: 'tmp' } } });
    await core.createNamespacedConfigMap({ namespace: 'tmp', body: { metadata: { name: 'x' } } });
    const n = await core.deleteNamespace({ name: 'tmp' });
    assert.ok(n);
    for (let i = 0; i < 100; i++) {
      const r = await core.readNamespace({ name: 'tmp' }).catch(() => undefined);
      if (!r) break;
      await new Promise((res) => setTimeout(res, 10));
    }
    assert.equal((await apiError(core.readNamespace({ name: 'tmp' }))).code, 404);
    assert.equal((await apiError(core.readNamespacedConfigMap({ name: 'x', namespace: 'tmp' }))).code, 404);
  });
});

describe('request log', () => {
  it('records RBAC verbs with group, resource, subresource, namespace and name', () => {
    const has = (r: Partial<(typeof api.requests)[number]>) =>
      api.requests.some((x) => Object.entries(r).every(([k, v]) => (x as any)[k] === v));
    assert.ok(has({ verb: 'create', group: '', resource: 'services', namespace: ns }));
    assert.ok(
      has({ verb: 'patch', group: 'canary-l4.io', resource: 'canaryreleases', subresource: 'status', name: 's' }),
    );
    assert.ok(has({ verb: 'list', group: 'canary-l4.io', resource: 'canaryreleases', namespace: '' }));
    assert.ok(has({ verb: 'update', group: 'coordination.k8s.io', resource: 'leases', name: 'leader' }));
    assert.ok(has({ verb: 'get', resource: '', nonResourceURL: '/apis/canary-l4.io/v1alpha1' }));
  });
});

describe('watch list', () => {
  it('sendInitialEvents: the current objects as ADDED, then the initial-events-end bookmark, then changes (kubectl 1.37 rollout status waits for it)', async () => {
    await core.createNamespacedService({ namespace: ns, body: svc('listed-a') });
    await core.createNamespacedService({ namespace: ns, body: svc('listed-b') });
    const controller = new AbortController();
    const query =
      'watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=10';
    const response = await fetch(`${api.url}/api/v1/namespaces/${ns}/services?${query}`, { signal: controller.signal });
    const lines: { type: string; object: { metadata: { name?: string; annotations?: Record<string, string> } } }[] = [];
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffered = '';
    let created = false;
    try {
      while (!lines.some((event) => event.object.metadata.name === 'listed-c')) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += value;
        for (let newline = buffered.indexOf('\n'); newline >= 0; newline = buffered.indexOf('\n')) {
          lines.push(JSON.parse(buffered.slice(0, newline)));
          buffered = buffered.slice(newline + 1);
        }
        const end = lines.findIndex((event) => event.type === 'BOOKMARK');
        if (end >= 0 && !created) {
          created = true;
          await core.createNamespacedService({ namespace: ns, body: svc('listed-c') });
        }
      }
    } finally {
      controller.abort();
    }
    const end = lines.findIndex((event) => event.type === 'BOOKMARK');
    assert.ok(end > 0, JSON.stringify(lines.map((event) => event.type)));
    const initial = lines.slice(0, end);
    assert.ok(initial.every((event) => event.type === 'ADDED'));
    assert.ok(['listed-a', 'listed-b'].every((name) => initial.some((event) => event.object.metadata.name === name)));
    assert.equal(lines[end]!.object.metadata.annotations?.['k8s.io/initial-events-end'], 'true');
    assert.deepEqual(
      lines.slice(end + 1).map((event) => [event.type, event.object.metadata.name]),
      [['ADDED', 'listed-c']],
    );
  });
});
