/**
 * Server-side apply (`application/apply-patch+yaml`): the merge itself (pure), the wire behaviour
 * through client-node and fetch, and the GitOps re-apply after a takeover through kubectl.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PatchStrategy, setHeaderOptions, type V1Service } from '@kubernetes/client-node';
import { applyConfiguration } from '../support/fake-apiserver/verbs/apply.ts';
import type { FakeApiServer } from '../support/fake-apiserver/index.ts';
import { builtinTypes } from '../support/fake-apiserver/resources/registry.ts';
import {
  apiError,
  type clients,
  CR,
  type Kubectl,
  kubectlFor,
  startFakeWithCrd,
} from '../support/cluster/api-fixtures.ts';
import { requireTool } from '../support/process/required-tool.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';

const addresses = loopbackRange(import.meta.url);

// Awaited before any suite is declared: under --test-force-exit, a suite declared after a top-level
// await never runs (the runner exits once the suites before it are done).
const kubectlAtHand = await requireTool('kubectl');

const serviceMeta = builtinTypes().find((t) => t.plural === 'services')!.patchMeta;
const deploymentMeta = builtinTypes().find((t) => t.plural === 'deployments')!.patchMeta;
const ssa = setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply);
const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

describe('applyConfiguration (the merge)', () => {
  it('merges maps and keeps what others set', () => {
    const live = { spec: { selector: { 'canary-l4.io/release': 'web-v2' }, type: 'ClusterIP' } };
    const applied = { spec: { selector: { app: 'web' } } };
    assert.deepEqual(applyConfiguration(live, applied, applied, serviceMeta), {
      spec: { selector: { 'canary-l4.io/release': 'web-v2', app: 'web' }, type: 'ClusterIP' },
    });
  });

  it('removes only what the same manager applied last time and applies no more', () => {
    const live = {
      metadata: { labels: { tier: 'front', team: 'a', other: 'x' } },
      spec: { sessionAffinity: 'ClientIP', type: 'ClusterIP' },
    };
    const previous = { metadata: { labels: { tier: 'front', team: 'a' } }, spec: { sessionAffinity: 'ClientIP' } };
    const applied = { metadata: { labels: { team: 'a' } } };
    assert.deepEqual(applyConfiguration(live, applied, previous, serviceMeta), {
      metadata: { labels: { team: 'a', other: 'x' } },
      spec: { type: 'ClusterIP' },
    });
    // A map left empty goes; nothing is removed on a first apply.
    assert.deepEqual(
      applyConfiguration(
        { metadata: { labels: { tier: 'front' } } },
        { metadata: {} },
        { metadata: { labels: { tier: 'front' } } },
        serviceMeta,
      ),
      { metadata: {} },
    );
    assert.deepEqual(applyConfiguration(live, applied, undefined, serviceMeta), live);
  });

  it('merges Service ports by port and protocol (protocol defaulting to TCP)', () => {
    const live = {
      spec: {
        ports: [
          { name: 'dns', port: 53, protocol: 'UDP', targetPort: 5353 },
          { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 18080 },
        ],
      },
    };
    const applied = { spec: { ports: [{ name: 'dns-tcp', port: 53, targetPort: 5353 }] } };
    assert.deepEqual(applyConfiguration(live, applied, undefined, serviceMeta).spec.ports, [
      { name: 'dns', port: 53, protocol: 'UDP', targetPort: 5353 },
      { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 5353 },
    ]);
    // An element the manager withdrew goes; one another client added stays.
    const previous = { spec: { ports: [{ port: 80 }, { port: 81 }] } };
    const withOthers = {
      spec: {
        ports: [
          { port: 80, protocol: 'TCP' },
          { port: 81, protocol: 'TCP' },
          { port: 9000, protocol: 'TCP' },
        ],
      },
    };
    assert.deepEqual(
      applyConfiguration(withOthers, { spec: { ports: [{ port: 80 }] } }, previous, serviceMeta).spec.ports,
      [
        { port: 80, protocol: 'TCP' },
        { port: 9000, protocol: 'TCP' },
      ],
    );
  });

  it('merges containers by name; finalizers as a set; other lists are replaced', () => {
    const live = {
      metadata: { finalizers: ['a', 'b', 'theirs'] },
      spec: {
        template: {
          spec: {
            containers: [
              { name: 'app', image: 'a:1', args: ['x', 'y'] },
              { name: 'mesh', image: 'm:1' },
            ],
          },
        },
      },
    };
    const previous = {
      metadata: { finalizers: ['a', 'b'] },
      spec: { template: { spec: { containers: [{ name: 'app', image: 'a:1', args: ['x', 'y'] }] } } },
    };
    const applied = {
      metadata: { finalizers: ['b', 'c'] },
      spec: { template: { spec: { containers: [{ name: 'app', image: 'a:2', args: ['z'] }] } } },
    };
    assert.deepEqual(applyConfiguration(live, applied, previous, deploymentMeta), {
      metadata: { finalizers: ['b', 'theirs', 'c'] },
      spec: {
        template: {
          spec: {
            containers: [
              { name: 'app', image: 'a:2', args: ['z'] },
              { name: 'mesh', image: 'm:1' },
            ],
          },
        },
      },
    });
  });

  it('custom resources (no list metadata): maps merge, lists are replaced', () => {
    const live = {
      spec: {
        ports: [
          { port: 80, weight: 10 },
          { port: 81, weight: 5 },
        ],
        paused: true,
      },
    };
    assert.deepEqual(applyConfiguration(live, { spec: { ports: [{ port: 80, weight: 20 }] } }, undefined, {}), {
      spec: { ports: [{ port: 80, weight: 20 }], paused: true },
    });
  });

  it('does not mutate its inputs', () => {
    const live = { spec: { selector: { a: '1' } } };
    const applied = { spec: { selector: { b: '2' } } };
    applyConfiguration(live, applied, { spec: { selector: { a: '1' } } }, serviceMeta);
    assert.deepEqual([live, applied], [{ spec: { selector: { a: '1' } } }, { spec: { selector: { b: '2' } } }]);
  });
});

describe('server-side apply over HTTP', () => {
  let api: FakeApiServer;
  let core: ReturnType<typeof clients>['core'];
  let custom: ReturnType<typeof clients>['custom'];
  const ns = 'default';
  const applyRaw = (path: string, body: string, query = 'fieldManager=raw') =>
    fetch(`${api.url}${path}?${query}`, {
      method: 'PATCH',
      body,
      headers: { 'Content-Type': 'application/apply-patch+yaml' },
    });
  const service = (name: string, spec: Record<string, unknown>, labels?: Record<string, string>) =>
    ({ apiVersion: 'v1', kind: 'Service', metadata: { name, ...(labels ? { labels } : {}) }, spec }) as V1Service;
  const apply = (body: V1Service, fieldManager: string) =>
    core.patchNamespacedService({ name: body.metadata!.name!, namespace: ns, body, fieldManager, force: true }, ssa);

  before(async () => {
    ({ api, core, custom } = await startFakeWithCrd({ serviceCidr: `${addresses.prefix}.0/28` }));
  });
  after(() => api.stop());

  it('creates when absent (201, YAML body), then updates (200)', async () => {
    const yaml = 'apiVersion: v1\nkind: Service\nmetadata:\n  name: raw\nspec:\n  ports:\n  - port: 80\n';
    const created = await applyRaw(`/api/v1/namespaces/${ns}/services/raw`, yaml);
    assert.equal(created.status, 201);
    assert.equal(((await created.json()) as any).spec.clusterIP.startsWith(`${addresses.prefix}.`), true);
    const updated = await applyRaw(`/api/v1/namespaces/${ns}/services/raw`, yaml.replace('80', '81'));
    assert.equal(updated.status, 200);
    assert.deepEqual(
      ((await updated.json()) as any).spec.ports.map((p: any) => p.port),
      [81],
    );
  });

  it('requires fieldManager (422, as kube-apiserver); force is only for apply', async () => {
    const e = await apiError(
      core.patchNamespacedService({ name: 'raw', namespace: ns, body: service('raw', {}) }, ssa),
    );
    assert.deepEqual(
      [e.code, e.body.reason, e.body.message],
      [
        422,
        'Invalid',
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch',
      ],
    );
    const f = await apiError(core.patchNamespacedService({ name: 'raw', namespace: ns, body: {}, force: true }, merge));
    assert.equal(f.code, 422);
    const noKind = await applyRaw(`/api/v1/namespaces/${ns}/services/raw`, 'metadata:\n  name: raw\n');
    assert.equal(noKind.status, 400);
  });

  it("removes what the manager stopped applying, keeps other writers' fields, records one Apply entry per manager", async () => {
    await apply(
      service('three-way', { ports: [{ port: 80 }], sessionAffinity: 'ClientIP' }, { tier: 'front', team: 'a' }),
      'gitops',
    );
    await core.patchNamespacedService(
      { name: 'three-way', namespace: ns, body: { metadata: { labels: { owner: 'ops' } } } },
      merge,
    );
    await apply(service('three-way', { ports: [{ port: 80 }], selector: { app: 'x' } }, { team: 'a' }), 'gitops');
    const s = await apply(service('three-way', { selector: { extra: 'y' } }), 'tuner');
    assert.deepEqual(s.metadata!.labels, { team: 'a', owner: 'ops' });
    assert.equal(s.spec!.sessionAffinity, 'None'); // removed, then defaulted again
    assert.deepEqual(s.spec!.selector, { app: 'x', extra: 'y' });
    assert.deepEqual(
      s.metadata!.managedFields!.map((e) => [e.manager, e.operation, e.apiVersion, e.fieldsType]),
      [
        ['gitops', 'Apply', 'v1', 'FieldsV1'],
        ['tuner', 'Apply', 'v1', 'FieldsV1'],
      ],
    );
  });

  it("an identical re-apply is a no-op (same resourceVersion), another manager's is not; dryRun persists nothing", async () => {
    const body = service('noop', { ports: [{ port: 80 }] });
    const first = await apply(body, 'gitops');
    const again = await apply(body, 'gitops');
    assert.equal(again.metadata!.resourceVersion, first.metadata!.resourceVersion);
    const shared = await apply(body, 'other');
    assert.deepEqual(
      shared.metadata!.managedFields!.map((e) => e.manager),
      ['gitops', 'other'],
    );
    assert.notEqual(shared.metadata!.resourceVersion, first.metadata!.resourceVersion);
    const dry = await core.patchNamespacedService(
      {
        name: 'noop',
        namespace: ns,
        body: service('noop', { ports: [{ port: 80 }], selector: { a: 'b' } }),
        fieldManager: 'gitops',
        dryRun: 'All',
      },
      ssa,
    );
    assert.deepEqual(dry.spec!.selector, { a: 'b' });
    const live = await core.readNamespacedService({ name: 'noop', namespace: ns });
    assert.equal(live.spec!.selector, undefined);
    // Nor is a dry run remembered as what gitops applied: the selector someone else sets stays.
    await core.patchNamespacedService({ name: 'noop', namespace: ns, body: { spec: { selector: { a: 'b' } } } }, merge);
    assert.deepEqual((await apply(body, 'gitops')).spec!.selector, { a: 'b' });
  });

  it('managedFields survive writes that leave them out', async () => {
    await core.patchNamespacedService(
      { name: 'noop', namespace: ns, body: { metadata: { labels: { touched: 'yes' } } } },
      merge,
    );
    const live = await core.readNamespacedService({ name: 'noop', namespace: ns });
    delete live.metadata!.managedFields;
    const replaced = await core.replaceNamespacedService({ name: 'noop', namespace: ns, body: live });
    assert.deepEqual(
      replaced.metadata!.managedFields!.map((e) => e.manager),
      ['gitops', 'other'],
    );
  });

  it('custom resources: lists are replaced; the status subresource takes only status', async () => {
    const body = {
      apiVersion: 'canary-l4.io/v1alpha1',
      kind: 'CanaryRelease',
      metadata: { name: 'ssa' },
      spec: {
        ports: [
          { port: 80, weight: 10 },
          { port: 81, weight: 10 },
        ],
      },
    };
    await custom.patchNamespacedCustomObject({ ...CR, namespace: ns, name: 'ssa', body, fieldManager: 'gitops' }, ssa);
    const cr = await custom.patchNamespacedCustomObject(
      {
        ...CR,
        namespace: ns,
        name: 'ssa',
        body: { ...body, spec: { ports: [{ port: 80, weight: 20 }] } },
        fieldManager: 'gitops',
      },
      ssa,
    );
    assert.deepEqual(cr.spec.ports, [{ port: 80, weight: 20 }]);
    const st = await custom.patchNamespacedCustomObjectStatus(
      {
        ...CR,
        namespace: ns,
        name: 'ssa',
        body: { ...body, spec: { ports: [] }, status: { phase: 'Running' } },
        fieldManager: 'controller',
      },
      ssa,
    );
    assert.deepEqual([st.status, st.spec.ports.length], [{ phase: 'Running' }, 1]);
  });
});

describe('GitOps re-apply after a takeover, through kubectl', kubectlAtHand, () => {
  let api: FakeApiServer;
  let core: ReturnType<typeof clients>['core'];
  let k: Kubectl;

  before(async () => {
    ({ api, core } = await startFakeWithCrd({ serviceCidr: `${addresses.prefix}.16/28` }));
    k = await kubectlFor(api);
  });
  after(async () => {
    await api.stop();
    await k.cleanup();
  });

  const modes = [
    {
      how: 'kubectl apply --server-side',
      first: ['--server-side'],
      again: ['--server-side', '--force-conflicts'],
      said: /serverside-applied/,
    },
    { how: 'client-side kubectl apply', first: [], again: [], said: /created/ },
  ];
  for (const [i, mode] of modes.entries()) {
    it(`${mode.how}: the re-apply leaves the mixed selector real clusters produce, and the original targetPort`, async () => {
      const name = `web-${i}`;
      const manifest = await k.manifest(`${name}.yaml`, {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name },
        spec: { selector: { app: 'web', version: 'v1' }, ports: [{ name: 'http', port: 80, targetPort: 8000 }] },
      });
      assert.match(await k('apply', ...mode.first, '-f', manifest), mode.said);
      // What a takeover does: the selector handed to the proxy, the port pointed at it.
      await core.patchNamespacedService(
        {
          name,
          namespace: 'default',
          body: {
            spec: {
              selector: { app: null, version: null, 'canary-l4.io/release': 'web-v2' },
              ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 18080 }],
            },
          },
        },
        merge,
      );
      await k('apply', ...mode.again, '-f', manifest);
      const live = await core.readNamespacedService({ name, namespace: 'default' });
      assert.deepEqual(live.spec!.selector, { app: 'web', version: 'v1', 'canary-l4.io/release': 'web-v2' });
      assert.deepEqual(
        live.spec!.ports!.map((p) => p.targetPort),
        [8000],
      );
    });
  }

  it('kubectl apply --server-side records its field manager', async () => {
    const managers = JSON.parse(await k('get', 'svc', 'web-0', '-o', 'jsonpath={.metadata.managedFields}'));
    assert.ok(managers.some((e: any) => e.manager === 'kubectl' && e.operation === 'Apply'));
  });
});
