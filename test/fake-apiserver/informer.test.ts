/**
 * Informers (ListWatch / makeInformer / Watch) of the real client-node against the fake:
 * add/update/delete, re-watch after a dropped stream, relist after 410, restart after a 500,
 * bookmarks, timeouts and selector transitions. No test waits on client-node's 30 s inactivity
 * timeout or its reconnect backoff beyond the first 1 s step.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { type KubernetesObject, ListWatch, makeInformer, type V1Service, Watch } from '@kubernetes/client-node';
import type { FakeApiServer } from '../support/fake-apiserver/index.ts';
import { type clients, CR, startFakeWithCrd, svc } from '../support/cluster/api-fixtures.ts';
import { waitFor } from '../support/wait.ts';

let api: FakeApiServer;
let core: ReturnType<typeof clients>['core'];
let custom: ReturnType<typeof clients>['custom'];
const stops: Array<() => Promise<void> | void> = [];

before(async () => {
  ({ api, core, custom } = await startFakeWithCrd({ bookmarkIntervalMs: 100 }));
  await core.createNamespace({ body: { metadata: { name: 'inf' } } });
});
afterEach(async () => {
  for (const s of stops.splice(0)) await s();
});
after(() => api.stop());

/** A ListWatch on services in `ns` recording every callback. */
function serviceInformer(ns: string, opts: { labelSelector?: string; watch?: Watch } = {}) {
  const events: string[] = [];
  const errors: any[] = [];
  let lists = 0;
  const inf = new ListWatch<V1Service>(
    `/api/v1/namespaces/${ns}/services`,
    opts.watch ?? new Watch(api.kubeConfig),
    async () => {
      lists++;
      return core.listNamespacedService({ namespace: ns, labelSelector: opts.labelSelector });
    },
    false,
    opts.labelSelector,
  );
  inf.on('add', (o) => events.push(`add:${o.metadata!.name}`));
  inf.on('update', (o) => events.push(`update:${o.metadata!.name}`));
  inf.on('delete', (o) => events.push(`delete:${o.metadata!.name}`));
  inf.on('error', (e) => errors.push(e));
  stops.push(() => inf.stop());
  return { inf, events, errors, lists: () => lists };
}

/** A Watch that asks for bookmarks and a server-side timeout (as the control loop will). */
class TunedWatch extends Watch {
  timeoutSeconds = 300;
  override watch(
    path: string,
    qp: Record<string, string | number | boolean | undefined>,
    cb: (phase: string, obj: any, watchObj?: any) => void,
    done: (err: any) => void,
  ) {
    return super.watch(path, { ...qp, allowWatchBookmarks: true, timeoutSeconds: this.timeoutSeconds }, cb, done);
  }
}

describe('informer', () => {
  it('fires add, update and delete, and starts when the watch headers arrive', async () => {
    await core.createNamespacedService({ namespace: 'inf', body: svc('pre') });
    const { inf, events } = serviceInformer('inf');
    await inf.start();
    assert.deepEqual(events, ['add:pre']);
    await core.createNamespacedService({ namespace: 'inf', body: svc('live') });
    await waitFor(() => events.includes('add:live'), 'add');
    await core.patchNamespacedService(
      { name: 'live', namespace: 'inf', body: { metadata: { labels: { v: '2' } } } },
      (await import('@kubernetes/client-node')).setHeaderOptions('Content-Type', 'application/merge-patch+json'),
    );
    await waitFor(() => events.includes('update:live'), 'update');
    await core.deleteNamespacedService({ name: 'live', namespace: 'inf' });
    await waitFor(() => events.includes('delete:live'), 'delete');
    assert.equal(inf.get('pre', 'inf')?.metadata?.name, 'pre');
    assert.equal(inf.latestResourceVersion(), api.resourceVersion());
    await core.deleteNamespacedService({ name: 'pre', namespace: 'inf' });
  });

  it('re-watches from its resourceVersion after the server drops the stream (no relist)', async () => {
    const { inf, events, lists } = serviceInformer('inf');
    await inf.start();
    const watchesBefore = api.requests.filter((r) => r.verb === 'watch').length;
    assert.equal(api.faults.dropWatches(), 1);
    await core.createNamespacedService({ namespace: 'inf', body: svc('after-drop') });
    await waitFor(() => events.includes('add:after-drop'), 'event after re-watch');
    assert.equal(lists(), 1);
    assert.ok(api.requests.filter((r) => r.verb === 'watch').length > watchesBefore);
    await core.deleteNamespacedService({ name: 'after-drop', namespace: 'inf' });
  });

  it('relists after 410 Expired and reports objects deleted meanwhile', async () => {
    await core.createNamespacedService({ namespace: 'inf', body: svc('gone') });
    const { inf, events, lists } = serviceInformer('inf');
    await inf.start();
    assert.ok(events.includes('add:gone'));
    // Advance the global RV with another type, then compact: the informer's RV is now too old.
    await core.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name: 'bump' } } });
    api.faults.setLatency(50); // let the delete below land before the re-watch
    api.faults.compact();
    api.faults.dropWatches();
    await core.deleteNamespacedService({ name: 'gone', namespace: 'inf' });
    api.faults.setLatency(0);
    await waitFor(() => lists() === 2, 'relist');
    await waitFor(() => events.includes('delete:gone'), 'delete seen through relist');
  });

  it('a watch from the RV the list just returned is never 410', async () => {
    api.faults.compact();
    const list = await core.listNamespacedService({ namespace: 'inf' });
    const seen: string[] = [];
    const w = new Watch(api.kubeConfig);
    const req = await w.watch(
      '/api/v1/namespaces/inf/services',
      { resourceVersion: list.metadata!.resourceVersion },
      (type) => seen.push(type),
      () => {},
    );
    stops.push(() => req.abort());
    await core.createNamespacedService({ namespace: 'inf', body: svc('fresh') });
    await waitFor(() => seen.includes('ADDED'), 'ADDED');
    assert.ok(!seen.includes('ERROR'));
    await core.deleteNamespacedService({ name: 'fresh', namespace: 'inf' });
  });

  it('an HTTP 410 on the watch also relists', async () => {
    const { inf, lists, errors } = serviceInformer('inf');
    await inf.start();
    api.faults.failNext({ verb: 'watch', resource: 'services', code: 410 });
    api.faults.dropWatches();
    await waitFor(() => lists() === 2, 'relist after HTTP 410');
    assert.equal(errors.length, 0);
  });

  it('stops with an error on a 500 and resumes after start()', async () => {
    const { inf, events, errors } = serviceInformer('inf');
    await inf.start();
    api.faults.failNext({ verb: 'watch', resource: 'services', code: 500 });
    api.faults.dropWatches();
    await waitFor(() => errors.length === 1, 'error callback');
    assert.equal(errors[0].statusCode, 500);
    await core.createNamespacedService({ namespace: 'inf', body: svc('while-down') });
    await inf.start();
    await waitFor(() => events.includes('add:while-down'), 'catch-up after restart');
    await core.deleteNamespacedService({ name: 'while-down', namespace: 'inf' });
  });

  it('a failing list surfaces as an error', async () => {
    const { inf, errors } = serviceInformer('inf');
    api.faults.failNext({ verb: 'list', resource: 'services', code: 503 });
    await inf.start();
    await waitFor(() => errors.length === 1, 'list error');
    assert.equal(errors[0].code, 503);
  });

  it('BOOKMARKs advance the informer RV; timeoutSeconds closes the stream and it re-watches', async () => {
    const watch = new TunedWatch(api.kubeConfig);
    watch.timeoutSeconds = 1;
    const { inf, lists } = serviceInformer('inf', { watch });
    await inf.start();
    await core.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name: 'bm' } } });
    const target = api.resourceVersion();
    await waitFor(() => inf.latestResourceVersion() === target, 'bookmark RV');
    const watches = () =>
      api.requests.filter((r) => r.verb === 'watch' && r.resource === 'services' && r.namespace === 'inf').length;
    const before = watches();
    await waitFor(() => watches() > before, 're-watch after timeoutSeconds', 3000);
    assert.equal(lists(), 1);
  });

  it('label-selector watches turn matching transitions into ADDED / DELETED', async () => {
    const { inf, events } = serviceInformer('inf', { labelSelector: 'track=canary' });
    await inf.start();
    await core.createNamespacedService({
      namespace: 'inf',
      body: svc('sw', { metadata: { labels: { track: 'stable' } } }),
    });
    const { setHeaderOptions } = await import('@kubernetes/client-node');
    const merge = setHeaderOptions('Content-Type', 'application/merge-patch+json');
    await core.patchNamespacedService(
      { name: 'sw', namespace: 'inf', body: { metadata: { labels: { track: 'canary' } } } },
      merge,
    );
    await waitFor(() => events.includes('add:sw'), 'ADDED when it starts matching');
    await core.patchNamespacedService(
      { name: 'sw', namespace: 'inf', body: { metadata: { labels: { track: 'stable' } } } },
      merge,
    );
    await waitFor(() => events.includes('delete:sw'), 'DELETED when it stops matching');
    assert.deepEqual(events, ['add:sw', 'delete:sw']);
    await core.deleteNamespacedService({ name: 'sw', namespace: 'inf' });
  });

  it('makeInformer on the CRD path (all namespaces) with status updates', async () => {
    const path = `/apis/${CR.group}/${CR.version}/${CR.plural}`;
    const inf = makeInformer<KubernetesObject & { status?: any }>(api.kubeConfig, path, () =>
      custom.listCustomObjectForAllNamespaces({ group: CR.group, version: CR.version, resourcePlural: CR.plural }),
    );
    stops.push(() => inf.stop());
    const seen: string[] = [];
    inf.on('add', (o) => seen.push(`add:${o.metadata!.namespace}/${o.metadata!.name}`));
    inf.on('update', (o) => seen.push(`update:${o.status?.phase ?? ''}`));
    await inf.start();
    await custom.createNamespacedCustomObject({
      ...CR,
      namespace: 'inf',
      body: {
        apiVersion: 'canary-l4.io/v1alpha1',
        kind: 'CanaryRelease',
        metadata: { name: 'c1' },
        spec: { weight: 1 },
      },
    });
    await waitFor(() => seen.includes('add:inf/c1'), 'CR add');
    const { setHeaderOptions } = await import('@kubernetes/client-node');
    await custom.patchNamespacedCustomObjectStatus(
      { ...CR, namespace: 'inf', name: 'c1', body: { status: { phase: 'Progressing' } } },
      setHeaderOptions('Content-Type', 'application/merge-patch+json'),
    );
    await waitFor(() => seen.includes('update:Progressing'), 'status update');
  });

  it('raw watch: resourceVersion replay without synthetic ADDED; no RV gives synthetic ADDED', async () => {
    const rv0 = api.resourceVersion();
    await core.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name: 'r1' } } });
    await core.deleteNamespacedConfigMap({ name: 'r1', namespace: 'inf' });
    const replay: string[] = [];
    const w = new Watch(api.kubeConfig);
    const r1 = await w.watch(
      '/api/v1/namespaces/inf/configmaps',
      { resourceVersion: rv0 },
      (t, o) => replay.push(`${t}:${o.metadata.name}`),
      () => {},
    );
    stops.push(() => r1.abort());
    await waitFor(() => replay.length === 2, 'replay');
    assert.deepEqual(replay, ['ADDED:r1', 'DELETED:r1']);
    const synthetic: string[] = [];
    const r2 = await w.watch(
      '/api/v1/namespaces/inf/configmaps',
      {},
      (t, o) => synthetic.push(`${t}:${o.metadata.name}`),
      () => {},
    );
    stops.push(() => r2.abort());
    await waitFor(() => synthetic.includes('ADDED:bm'), 'synthetic ADDED');
    assert.ok(!synthetic.includes('ADDED:r1'));
  });

  it('a watch from below the compaction floor gets a 410 Expired ERROR event', async () => {
    await core.createNamespacedConfigMap({ namespace: 'inf', body: { metadata: { name: 'old' } } });
    api.faults.compact();
    const got: any[] = [];
    let doneErr: unknown = 'pending';
    const w = new Watch(api.kubeConfig);
    await w.watch(
      '/api/v1/namespaces/inf/configmaps',
      { resourceVersion: '2' },
      (t, o) => got.push([t, o]),
      (e) => (doneErr = e),
    );
    await waitFor(() => doneErr !== 'pending', 'stream end');
    assert.equal(got.length, 1);
    assert.equal(got[0][0], 'ERROR');
    assert.equal(got[0][1].code, 410);
    assert.equal(got[0][1].reason, 'Expired');
  });
});
