/** Fault injection over HTTP (`/_fake/faults/...`), driven with plain fetch as any client would. */
import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { type FakeApiServer, startFakeApiServer } from '../support/fake-apiserver/index.ts';
import { apiError, clients, svc } from '../support/cluster/api-fixtures.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

let api: FakeApiServer;
let core: ReturnType<typeof clients>['core'];

before(async () => {
  api = await startFakeApiServer({ serviceCidr: `${addresses.prefix}.0/28` });
  ({ core } = clients(api.kubeConfig));
  await core.createNamespacedService({ namespace: 'default', body: svc('web') });
});
afterEach(() => control('DELETE', '/_fake/faults'));
after(() => api.stop());

async function control(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(api.url + path, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: { 'Content-Type': 'application/json' },
  });
  return { status: res.status, body: await res.json() };
}

const patchStatus = () =>
  core.patchNamespacedServiceStatus(
    { name: 'web', namespace: 'default', body: { status: { loadBalancer: {} } } },
    merge,
  );
const patchLabels = (v: string) =>
  core.patchNamespacedService({ name: 'web', namespace: 'default', body: { metadata: { labels: { v } } } }, merge);

describe('POST /_fake/faults/fail-next', () => {
  it('fails `count` requests of the named verb, resource and subresource, and nothing else', async () => {
    const r = await control('POST', '/_fake/faults/fail-next', {
      verb: 'patch',
      resource: 'services',
      subresource: 'status',
      code: 503,
      count: 2,
      message: 'drill',
    });
    assert.equal(r.status, 200);
    await patchLabels('a'); // main resource: unaffected
    for (let i = 0; i < 2; i++) {
      const e = await apiError(patchStatus());
      assert.deepEqual([e.code, e.body.reason, e.body.message], [503, 'ServiceUnavailable', 'drill']);
    }
    await patchStatus();
  });

  it('keeps the resource/subresource shorthand; subresource "" means the main resource only', async () => {
    await control('POST', '/_fake/faults/fail-next', { resource: 'services/status', code: 500 });
    await patchLabels('b');
    assert.equal((await apiError(patchStatus())).code, 500);
    await control('POST', '/_fake/faults/fail-next', { resource: 'services', subresource: '', code: 409 });
    await patchStatus();
    assert.equal((await apiError(patchLabels('c'))).code, 409);
  });

  it('fails only the requests of the named user (bearer token), when one is named', async () => {
    await control('POST', '/_fake/faults/fail-next', {
      user: 'someone-else',
      verb: 'patch',
      resource: 'services',
      code: 403,
    });
    await patchLabels('d');
    await control('POST', '/_fake/faults/fail-next', {
      user: 'fake-token',
      verb: 'patch',
      resource: 'services',
      code: 403,
    });
    assert.equal((await apiError(patchLabels('e'))).code, 403);
  });

  it('is itself neither faulted nor logged as a request', async () => {
    const before = api.requests.length;
    await control('POST', '/_fake/faults/fail-next', { code: 500, count: 3 }); // any request
    assert.equal((await control('POST', '/_fake/faults/latency', { ms: 0 })).status, 200);
    assert.equal((await control('POST', '/_fake/faults/drop-watches')).status, 200);
    assert.equal(api.requests.length, before);
    assert.equal((await apiError(core.listNamespace())).code, 500); // the rule is still armed
    assert.ok(api.requests.slice(before).every((r) => !r.nonResourceURL?.startsWith('/_fake')));
  });
});

describe('POST /_fake/faults/latency and DELETE /_fake/faults', () => {
  it('delays API requests but not control requests, until reset', async () => {
    await control('POST', '/_fake/faults/latency', { ms: 150 });
    let t0 = Date.now();
    await core.listNamespace();
    assert.ok(Date.now() - t0 >= 140, 'API request delayed');
    await control('POST', '/_fake/faults/fail-next', { verb: 'get', code: 500 });
    t0 = Date.now();
    assert.deepEqual(await control('DELETE', '/_fake/faults'), { status: 200, body: { reset: true } });
    assert.ok(Date.now() - t0 < 140, 'control request not delayed');
    t0 = Date.now();
    await core.readNamespacedService({ name: 'web', namespace: 'default' }); // the rule is gone too
    assert.ok(Date.now() - t0 < 140, 'latency reset');
  });
});

describe('POST /_fake/faults/drop-watches', () => {
  for (const abrupt of [false, true]) {
    it(`ends open watch streams${abrupt ? ' abruptly' : ''} and says how many`, async () => {
      const res = await fetch(`${api.url}/api/v1/namespaces/default/services?watch=true`);
      const reader = res.body!.getReader();
      await waitFor(() => api.openWatches() === 1, 'the watch to open');
      assert.deepEqual(await control('POST', '/_fake/faults/drop-watches', abrupt ? { abrupt } : undefined), {
        status: 200,
        body: { dropped: 1 },
      });
      const drain = async () => {
        for (let i = 0; i < 100; i++) if ((await reader.read()).done) return 'ended';
        return 'still open';
      };
      if (abrupt) await assert.rejects(drain());
      else assert.equal(await drain(), 'ended');
    });
  }
});

describe('POST /_fake/faults/refuse', () => {
  it('answers 202 first, then refuses connections for `ms`, then serves again', async () => {
    const r = await control('POST', '/_fake/faults/refuse', { ms: 300 });
    assert.deepEqual(r, { status: 202, body: { refusingForMs: 300 } });
    await waitFor(
      async () =>
        await fetch(`${api.url}/version`).then(
          () => false,
          () => true,
        ),
      'connections to be refused',
      2000,
    );
    await waitFor(
      async () =>
        await fetch(`${api.url}/version`).then(
          (res) => res.ok,
          () => false,
        ),
      'the listener to reopen',
      3000,
    );
  });
});

describe('bad control requests', () => {
  const cases: Array<[string, string, unknown, RegExp]> = [
    [
      'fail-next without code',
      '/_fake/faults/fail-next',
      { verb: 'get' },
      /fail-next: code: required, must be an integer from 400 to 599/,
    ],
    ['code as a string', '/_fake/faults/fail-next', { code: '500' }, /code: must be an integer/],
    ['unknown verb', '/_fake/faults/fail-next', { code: 500, verb: 'gets' }, /verb: must be one of get, /],
    ['zero count', '/_fake/faults/fail-next', { code: 500, count: 0 }, /count: must be an integer from 1/],
    ['misspelt field', '/_fake/faults/fail-next', { code: 500, resources: 'pods' }, /resources: unknown field/],
    [
      'subresource twice',
      '/_fake/faults/fail-next',
      { code: 500, resource: 'pods/status', subresource: 'status' },
      /subresource: give it either here or in resource/,
    ],
    ['latency without ms', '/_fake/faults/latency', {}, /latency: ms: required/],
    ['negative latency', '/_fake/faults/latency', { ms: -1 }, /latency: ms: must be an integer from 0/],
    [
      'abrupt not a boolean',
      '/_fake/faults/drop-watches',
      { abrupt: 'yes' },
      /drop-watches: abrupt: must be true or false/,
    ],
    ['refuse for 0 ms', '/_fake/faults/refuse', { ms: 0 }, /refuse: ms: must be an integer from 1/],
    ['a list body', '/_fake/faults/latency', [1], /latency: the body must be a JSON object/],
  ];
  for (const [name, path, body, message] of cases) {
    it(`${name} → 400 naming the field`, async () => {
      const r = await control('POST', path, body);
      assert.equal(r.status, 400);
      assert.equal(r.body.reason, 'BadRequest');
      assert.match(r.body.message, message);
      assert.doesNotMatch(r.body.message, /\n/);
    });
  }

  it('malformed JSON → 400; unknown action → 404; wrong method → 405; nothing was armed', async () => {
    const res = await fetch(`${api.url}/_fake/faults/latency`, { method: 'POST', body: '{ms:' });
    assert.equal(res.status, 400);
    assert.equal((await control('POST', '/_fake/faults/compact-everything', {})).status, 404);
    assert.equal((await control('GET', '/_fake/faults/latency')).status, 405);
    assert.equal((await control('POST', '/_fake/faults')).status, 405);
    await core.listNamespace();
  });
});
