/** Fault injection and discovery, through client-node. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type FakeApiServer, startFakeApiServer } from '../support/fake-apiserver/index.ts';
import { apiError, clients } from '../support/cluster/api-fixtures.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';

const addresses = loopbackRange(import.meta.url);

let api: FakeApiServer;
let core: ReturnType<typeof clients>['core'];

before(async () => {
  api = await startFakeApiServer({ serviceCidr: `${addresses.prefix}.0/28` });
  ({ core } = clients(api.kubeConfig));
});
after(() => api.stop());

describe('faults', () => {
  it('failNext fails exactly `count` matching requests with a Status of the right reason', async () => {
    api.faults.failNext({ verb: 'get', resource: 'services', code: 503, count: 2 });
    const list = await core.listNamespacedService({ namespace: 'default' }); // other verb: unaffected
    assert.equal(list.kind, 'ServiceList');
    for (let i = 0; i < 2; i++) {
      const e = await apiError(core.readNamespacedService({ name: 'x', namespace: 'default' }));
      assert.equal(e.code, 503);
      assert.equal(e.body.reason, 'ServiceUnavailable');
    }
    assert.equal((await apiError(core.readNamespacedService({ name: 'x', namespace: 'default' }))).code, 404);
  });

  it('429 carries Retry-After; subresource-specific rules', async () => {
    api.faults.failNext({ code: 429 });
    const e = await apiError(core.listNamespace());
    assert.equal(e.code, 429);
    assert.equal(e.body.reason, 'TooManyRequests');
    await core.createNamespacedPod({
      namespace: 'default',
      body: { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'x:1' }] } },
    });
    api.faults.failNext({ resource: 'pods/status', code: 409 });
    const p = await core.readNamespacedPod({ name: 'p', namespace: 'default' }); // main resource unaffected
    assert.equal(
      (await apiError(core.replaceNamespacedPodStatus({ name: 'p', namespace: 'default', body: p }))).code,
      409,
    );
  });

  it('setLatency delays requests', async () => {
    api.faults.setLatency(120);
    const t0 = Date.now();
    await core.listNamespace();
    assert.ok(Date.now() - t0 >= 100);
    api.faults.setLatency(0);
  });

  it('refuseConnections closes the port, then serves again on the same port', async () => {
    const reopened = api.faults.refuseConnections(300);
    await assert.rejects(core.listNamespace(), (e: any) =>
      /ECONNREFUSED|fetch failed|other side closed|socket/i.test(
        `${e?.message} ${e?.cause?.code ?? ''} ${e?.cause?.message ?? ''}`,
      ),
    );
    await reopened;
    const ns = await core.listNamespace();
    assert.ok(ns.items.length >= 4);
  });

  it('allocates from a small configured range until it is full', async () => {
    const ips = new Set<string>();
    for (let i = 0; i < 14; i++) {
      const s = await core.createNamespacedService({
        namespace: 'default',
        body: { metadata: { name: `s${i}` }, spec: { ports: [{ port: 80 }] } },
      });
      ips.add(s.spec!.clusterIP!);
    }
    assert.equal(ips.size, 14);
    assert.ok(
      [...ips].every(
        (ip) => addresses.addressPattern.test(ip) && /^\.([1-9]|1[0-4])$/.test(ip.slice(addresses.prefix.length)),
      ),
    );
    const e = await apiError(
      core.createNamespacedService({
        namespace: 'default',
        body: { metadata: { name: 'full' }, spec: { ports: [{ port: 80 }] } },
      }),
    );
    assert.equal(e.code, 500);
    await core.deleteNamespacedService({ name: 's0', namespace: 'default' });
    const again = await core.createNamespacedService({
      namespace: 'default',
      body: { metadata: { name: 'reuse' }, spec: { ports: [{ port: 80 }] } },
    });
    assert.equal(again.spec!.clusterIP, addresses.ip(1));
  });
});

describe('discovery', () => {
  const get = async (path: string) => {
    const res = await fetch(api.url + path);
    return { status: res.status, body: (await res.json()) as any };
  };
  it('serves /version, /api, /apis, /api/v1, /apis/<g>/<v>, /openapi/v3 and /openapi/v2', async () => {
    assert.equal((await get('/version')).body.major, '1');
    assert.deepEqual((await get('/api')).body.versions, ['v1']);
    const groups = (await get('/apis')).body.groups.map((g: any) => g.name);
    assert.deepEqual(groups.sort(), [
      'admissionregistration.k8s.io',
      'apiextensions.k8s.io',
      'apps',
      'autoscaling',
      'batch',
      'coordination.k8s.io',
      'networking.k8s.io',
      'policy',
      'rbac.authorization.k8s.io',
      'scheduling.k8s.io',
    ]);
    const v1 = (await get('/api/v1')).body;
    const svc = v1.resources.find((r: any) => r.name === 'services');
    assert.deepEqual([svc.kind, svc.namespaced, svc.shortNames], ['Service', true, ['svc']]);
    assert.ok(v1.resources.some((r: any) => r.name === 'services/status'));
    assert.equal((await get('/apis/apps/v1')).body.groupVersion, 'apps/v1');
    const oa = (await get('/openapi/v3')).body;
    assert.ok(oa.paths['api/v1'].serverRelativeURL.startsWith('/openapi/v3/api/v1?hash='));
    const doc = (await get('/openapi/v3/apis/apps/v1')).body;
    assert.deepEqual(
      doc.paths['/apis/apps/v1/namespaces/{namespace}/deployments/{name}'].patch['x-kubernetes-group-version-kind'],
      { group: 'apps', version: 'v1', kind: 'Deployment' },
    );
    const v2 = await get('/openapi/v2');
    assert.deepEqual([v2.status, v2.body.swagger], [200, '2.0']);
    // kubectl asks for protobuf only: gnostic's Document { swagger: "2.0", info: {...} }, typed with a
    // dot for the `@` (Go's mime parser refuses the `@`, and kubectl with it).
    const protobuf = await fetch(`${api.url}/openapi/v2`, {
      headers: { accept: 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf' },
    });
    assert.equal(protobuf.headers.get('content-type'), 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf');
    assert.deepEqual(
      [...new Uint8Array(await protobuf.arrayBuffer()).subarray(0, 5)],
      [0x0a, 3, ...Buffer.from('2.0')],
    );
  });
});
