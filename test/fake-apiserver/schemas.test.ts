/**
 * Schemas as a real API server keeps them, driven with kubectl and client-node: kubectl's default
 * validation of a List and of a multi-document file, `kubectl explain` of a CRD's fields, server-side
 * field validation of unknown fields (Strict, Warn, Ignore), custom resources refused by their CRD's
 * schema with a 422 naming each field on create, update and patch, and /openapi/v3 following CRDs.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { setHeaderOptions } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { type FakeApiServer, startFakeApiServer } from '../support/fake-apiserver/index.ts';
import { apiError, clients, type Kubectl, kubectlFor } from '../support/cluster/api-fixtures.ts';
import { requireTool } from '../support/process/required-tool.ts';

const deployed = (file: string) => new URL(`../../deploy/${file}`, import.meta.url).pathname;
const canaryCrd = parseYaml(readFileSync(deployed('crd.yaml'), 'utf8'));
const canarySpecSchema = canaryCrd.spec.versions[0].schema.openAPIV3Schema.properties.spec;
const example = parseYaml(readFileSync(deployed('canaryrelease-example.yaml'), 'utf8'));

/** A CRD of this test's own, so the status and OpenAPI checks do not hang on canary-l4's schema. */
const widgetCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.test.io' },
  spec: {
    group: 'test.io',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: {
                type: 'object',
                required: ['size'],
                properties: {
                  size: { type: 'integer', minimum: 1, maximum: 10, description: 'How big.' },
                  color: { type: 'string', enum: ['red', 'blue'] },
                  amount: { 'x-kubernetes-int-or-string': true },
                },
              },
              status: { type: 'object', properties: { phase: { type: 'string', enum: ['Ready', 'Failed'] } } },
            },
          },
        },
      },
    ],
  },
};
const WIDGETS = { group: 'test.io', version: 'v1', plural: 'widgets', namespace: 'default' } as const;
const merge = setHeaderOptions('Content-Type', 'application/merge-patch+json');
const jsonPatch = setHeaderOptions('Content-Type', 'application/json-patch+json');

/** kubectl's failure: its stderr. */
async function refusal(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    return String((e as { stderr?: string }).stderr ?? e);
  }
  throw new Error('expected kubectl to fail');
}

describe('schemas, through kubectl', await requireTool('kubectl'), () => {
  let api: FakeApiServer;
  let k: Kubectl;

  before(async () => {
    api = await startFakeApiServer();
    k = await kubectlFor(api);
    await k('apply', '-f', deployed('crd.yaml'));
  });
  after(async () => {
    await api.stop();
    await k.cleanup();
  });

  it('kubectl apply of a v1 List (as kubectl get -o json writes one) and of a multi-document file, with default validation', async () => {
    const list = {
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'listed' }, data: { a: '1' } },
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'web' },
          spec: { selector: { app: 'web' }, ports: [{ port: 80 }] },
        },
        example,
      ],
    };
    const created = await k('apply', '-f', await k.manifest('list.json', list));
    assert.deepEqual(created.trim().split('\n'), [
      'configmap/listed created',
      'service/web created',
      `canaryrelease.canary-l4.io/${example.metadata.name} created`,
    ]);
    assert.ok(
      api.requests.some((r) => r.nonResourceURL === '/openapi/v2' && r.code === 200),
      'kubectl read /openapi/v2 to validate the List',
    );
    const multi = await k(
      'apply',
      '-f',
      await k.manifest(
        'multi.yaml',
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'first' } },
        { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'second' } },
      ),
    );
    assert.deepEqual(multi.trim().split('\n'), ['configmap/first created', 'configmap/second created']);
    assert.match(
      await k('apply', '-f', await k.manifest('list.json', list)),
      /^canaryrelease.canary-l4.io\/\S+ unchanged$/m,
    );
  });

  it("kubectl explain canaryreleases.spec.analysis prints the CRD's descriptions and fields", async () => {
    const explained = await k('explain', 'canaryreleases.spec.analysis');
    const flat = explained.replace(/\s+/g, ' ');
    assert.match(explained, /^KIND:\s+CanaryRelease$/m);
    assert.ok(flat.includes(canarySpecSchema.properties.analysis.description.replace(/\s+/g, ' ')), explained);
    for (const field of Object.keys(canarySpecSchema.properties.analysis.properties))
      assert.match(explained, new RegExp(`^  ${field}\\s`, 'm'));
    assert.ok(
      (await k('explain', 'canaryreleases.spec'))
        .replace(/\s+/g, ' ')
        .includes(canarySpecSchema.properties.steps.description.replace(/\s+/g, ' ')),
    );
  });

  it('a CanaryRelease the schema refuses is a 422 listing each field, from kubectl and client-node alike', async () => {
    const bad = {
      ...example,
      metadata: { name: 'bad' },
      spec: {
        ...example.spec,
        transition: 'adopted',
        promotedStep: -1,
        analysis: { thresholds: { connectErrorRate: { max: 2 } } },
      },
    };
    const said = await refusal(k('apply', '-f', await k.manifest('bad.yaml', bad)));
    assert.match(said, /The CanaryRelease "bad" is invalid:/);
    assert.match(said, /spec\.transition: Unsupported value: "adopted": supported values: /);
    assert.match(
      said,
      /spec\.promotedStep: Invalid value: -1: spec\.promotedStep in body should be greater than or equal to 0/,
    );
    assert.match(
      said,
      /spec\.analysis\.thresholds\.connectErrorRate\.max: Invalid value: 2: spec\.analysis\.thresholds\.connectErrorRate\.max in body should be less than or equal to 1/,
    );
    const { custom } = clients(api.kubeConfig);
    const e = await apiError(
      custom.createNamespacedCustomObject({
        group: 'canary-l4.io',
        version: 'v1alpha1',
        plural: 'canaryreleases',
        namespace: 'default',
        body: bad,
      }),
    );
    assert.deepEqual(
      [e.code, e.body.reason, e.body.details.kind, e.body.details.group, e.body.details.name],
      [422, 'Invalid', 'CanaryRelease', 'canary-l4.io', 'bad'],
    );
    assert.match(e.body.message, /^CanaryRelease\.canary-l4\.io "bad" is invalid: \[spec\.\S+: .+, spec\.\S+: .+\]$/);
    const fields = Object.fromEntries(e.body.details.causes.map((c: any) => [c.field, c.reason]));
    assert.equal(fields['spec.transition'], 'FieldValueNotSupported');
    assert.equal(fields['spec.promotedStep'], 'FieldValueInvalid');
    assert.equal(fields['spec.analysis.thresholds.connectErrorRate.max'], 'FieldValueInvalid');
    assert.equal(await k('get', 'canaryreleases', 'bad', '--ignore-not-found'), '');
  });

  it('x-kubernetes-list-type: a port listed twice, a key twice in a set, is refused as kube-apiserver refuses it', async () => {
    const { custom } = clients(api.kubeConfig);
    const made = (name: string, service: object) =>
      custom.createNamespacedCustomObject({
        group: 'canary-l4.io',
        version: 'v1alpha1',
        plural: 'canaryreleases',
        namespace: 'default',
        body: {
          apiVersion: 'canary-l4.io/v1alpha1',
          kind: 'CanaryRelease',
          metadata: { name },
          spec: { services: [service] },
        },
      });
    const create = (name: string, service: object) => apiError(made(name, service));
    const twice = await create('twice', {
      service: 'web',
      ports: [
        { port: 8400, protocol: 'TCP', config: { weight: 10 } },
        { port: 8400, protocol: 'TCP', config: { weight: 20 } },
      ],
    });
    // Word for word what a real control plane answered (npm run test:cluster).
    assert.deepEqual(
      [twice.code, twice.body.message, twice.body.details.causes],
      [
        422,
        'CanaryRelease.canary-l4.io "twice" is invalid: spec.services[0].ports[1]: Duplicate value: {"port":8400,"protocol":"TCP"}',
        [
          {
            reason: 'FieldValueDuplicate',
            message: 'Duplicate value: {"port":8400,"protocol":"TCP"}',
            field: 'spec.services[0].ports[1]',
          },
        ],
      ],
    );
    // One port number over two protocols is two keys.
    await made('protocols', {
      service: 'web',
      ports: [
        { port: 53, protocol: 'TCP', config: { weight: 1 } },
        { port: 53, protocol: 'UDP', config: { weight: 1 } },
      ],
    });
    const set = await create('set', {
      service: 'web',
      canaryServiceOperations: { remove: ['version', 'version'] },
      ports: [{ port: 80, protocol: 'TCP', config: { weight: 1 } }],
    });
    assert.equal(
      set.body.message,
      'CanaryRelease.canary-l4.io "set" is invalid: spec.services[0].canaryServiceOperations.remove[1]: Duplicate value: "version"',
    );
  });

  it('a field the schema does not know: refused by default (--validate=strict), warned of and pruned with --validate=warn, pruned silently with --validate=false', async () => {
    const unknown = { ...example, metadata: { name: 'unknown' }, spec: { ...example.spec, surprise: 1 } };
    const file = await k.manifest('unknown.yaml', unknown);
    const strict = await refusal(k('apply', '-f', file));
    assert.match(
      strict,
      /Error from server \(BadRequest\): error when creating ".*unknown\.yaml": CanaryRelease in version "v1alpha1" cannot be handled as a CanaryRelease: strict decoding error: unknown field "spec\.surprise"/,
    );
    const warned = await k.run('apply', '-f', file, '--validate=warn');
    assert.match(warned.stdout, /canaryrelease.canary-l4.io\/unknown created/);
    assert.match(warned.stderr, /^Warning: unknown field "spec\.surprise"$/m);
    assert.equal(await k('get', 'canaryrelease', 'unknown', '-o', 'jsonpath={.spec.surprise}'), '');
    // Applied again, the object exists: kubectl's merge patch is checked as strictly.
    const patched = await refusal(
      k('apply', '-f', await k.manifest('unknown.yaml', { ...unknown, spec: { ...unknown.spec, other: 1 } })),
    );
    assert.match(
      patched,
      /error when patching ".*unknown\.yaml": strict decoding error: unknown field "spec\.other", unknown field "spec\.surprise"/,
    );
    const ignored = await k.run(
      'apply',
      '-f',
      await k.manifest('unknown.yaml', { ...unknown, spec: { ...unknown.spec, more: 2 } }),
      '--validate=false',
    );
    assert.deepEqual([ignored.stdout.trim(), ignored.stderr], ['canaryrelease.canary-l4.io/unknown configured', '']);
    assert.equal(await k('get', 'canaryrelease', 'unknown', '-o', 'jsonpath={.spec.more}'), '');
  });

  it('/openapi/v3 follows CRDs: published with its GVK when applied, gone when deleted', async () => {
    const index = async () =>
      (await (await fetch(`${api.url}/openapi/v3`)).json()).paths as Record<string, { serverRelativeURL: string }>;
    assert.equal((await index())['apis/test.io/v1'], undefined);
    await k('apply', '-f', await k.manifest('widget-crd.yaml', widgetCrd));
    const url = (await index())['apis/test.io/v1']?.serverRelativeURL;
    assert.match(url ?? '', /^\/openapi\/v3\/apis\/test\.io\/v1\?hash=[0-9A-F]{128}$/);
    const doc = await (await fetch(`${api.url}${url}`)).json();
    const widget = doc.components.schemas['io.test.v1.Widget'];
    assert.deepEqual(widget['x-kubernetes-group-version-kind'], [{ group: 'test.io', kind: 'Widget', version: 'v1' }]);
    assert.equal(widget.properties.spec.properties.size.description, 'How big.');
    assert.deepEqual(doc.components.schemas['io.test.v1.WidgetList']['x-kubernetes-group-version-kind'], [
      { group: 'test.io', kind: 'WidgetList', version: 'v1' },
    ]);
    assert.match(await k('explain', 'widgets.spec.size'), /How big\./);
    // A changed schema is a new document, under a new hash.
    const changed = structuredClone(widgetCrd);
    changed.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.size.description = 'How large.';
    await k('apply', '-f', await k.manifest('widget-crd.yaml', changed));
    assert.notEqual((await index())['apis/test.io/v1']?.serverRelativeURL, url);
    await k('delete', 'crd', 'widgets.test.io');
    assert.equal((await index())['apis/test.io/v1'], undefined);
    assert.equal((await fetch(`${api.url}${url}`)).status, 404);
  });
});

describe("custom resources against their CRD's schema, through client-node", () => {
  let api: FakeApiServer;
  let custom: ReturnType<typeof clients>['custom'];

  before(async () => {
    api = await startFakeApiServer();
    ({ custom } = clients(api.kubeConfig));
    const created = await fetch(`${api.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(widgetCrd),
    });
    assert.equal(created.status, 201);
    await custom.createNamespacedCustomObject({
      ...WIDGETS,
      body: { apiVersion: 'test.io/v1', kind: 'Widget', metadata: { name: 'w' }, spec: { size: 3 } },
    });
  });
  after(() => api.stop());

  it('update, merge patch and JSON patch are validated as create is', async () => {
    const current = await custom.getNamespacedCustomObject({ ...WIDGETS, name: 'w' });
    const put = await apiError(
      custom.replaceNamespacedCustomObject({ ...WIDGETS, name: 'w', body: { ...current, spec: { size: 11 } } }),
    );
    assert.deepEqual(
      [put.code, put.body.message],
      [
        422,
        'Widget.test.io "w" is invalid: spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10',
      ],
    );
    const patched = await apiError(
      custom.patchNamespacedCustomObject(
        { ...WIDGETS, name: 'w', body: { spec: { size: null, color: 'green' } } },
        merge,
      ),
    );
    assert.deepEqual(patched.body.details.causes, [
      { reason: 'FieldValueRequired', message: 'Required value', field: 'spec.size' },
      {
        reason: 'FieldValueNotSupported',
        message: 'Unsupported value: "green": supported values: "red", "blue"',
        field: 'spec.color',
      },
    ]);
    const typed = await apiError(
      custom.patchNamespacedCustomObject(
        { ...WIDGETS, name: 'w', body: [{ op: 'replace', path: '/spec/size', value: 'big' }] },
        jsonPatch,
      ),
    );
    assert.deepEqual(typed.body.details.causes, [
      {
        reason: 'FieldValueTypeInvalid',
        message: 'Invalid value: "string": spec.size in body must be of type integer: "string"',
        field: 'spec.size',
      },
    ]);
    const ok = await custom.patchNamespacedCustomObject(
      { ...WIDGETS, name: 'w', body: { spec: { size: 4, color: 'red' } } },
      merge,
    );
    assert.deepEqual(ok.spec, { size: 4, color: 'red' });
  });

  it('x-kubernetes-int-or-string takes an integer or a string and refuses a fraction, on create and on patch, as kube-apiserver does', async () => {
    const widget = (name: string, amount: unknown) => ({
      apiVersion: 'test.io/v1',
      kind: 'Widget',
      metadata: { name },
      spec: { size: 1, amount },
    });
    assert.equal(
      (await custom.createNamespacedCustomObject({ ...WIDGETS, body: widget('amounts', 2) })).spec.amount,
      2,
    );
    assert.equal(
      (
        await custom.patchNamespacedCustomObject(
          { ...WIDGETS, name: 'amounts', body: { spec: { amount: '50%' } } },
          merge,
        )
      ).spec.amount,
      '50%',
    );
    // kube-apiserver types the field integer,string; a fraction is a JSON number, neither.
    const cause = {
      reason: 'FieldValueTypeInvalid',
      message: 'Invalid value: "number": spec.amount in body must be of type integer,string: "number"',
      field: 'spec.amount',
    };
    const patched = await apiError(
      custom.patchNamespacedCustomObject({ ...WIDGETS, name: 'amounts', body: { spec: { amount: 1.5 } } }, merge),
    );
    assert.deepEqual(
      [patched.code, patched.body.reason, patched.body.message, patched.body.details.causes],
      [422, 'Invalid', `Widget.test.io "amounts" is invalid: spec.amount: ${cause.message}`, [cause]],
    );
    const created = await apiError(custom.createNamespacedCustomObject({ ...WIDGETS, body: widget('fraction', 1.5) }));
    assert.deepEqual([created.code, created.body.details.causes], [422, [cause]]);
    assert.equal(
      (await custom.getNamespacedCustomObject({ ...WIDGETS, name: 'amounts' })).spec.amount,
      '50%',
      'the refused patch changed nothing',
    );
  });

  it('the status subresource validates status only; a main write ignores status, and answers for the rest alone', async () => {
    const refused = await apiError(
      custom.patchNamespacedCustomObjectStatus({ ...WIDGETS, name: 'w', body: { status: { phase: 'Lost' } } }, merge),
    );
    assert.deepEqual([refused.code, refused.body.details.causes.map((c: any) => c.field)], [422, ['status.phase']]);
    const written = await custom.patchNamespacedCustomObjectStatus(
      { ...WIDGETS, name: 'w', body: { spec: { size: 99 }, status: { phase: 'Ready', stray: 1 } } },
      merge,
    );
    assert.deepEqual([written.spec.size, written.status], [4, { phase: 'Ready' }]);
    const main = await custom.patchNamespacedCustomObject(
      { ...WIDGETS, name: 'w', body: { spec: { size: 5 }, status: { phase: 'Lost' } } },
      merge,
    );
    assert.deepEqual([main.spec.size, main.status], [5, { phase: 'Ready' }]);
  });

  it('fieldValidation=Ignore prunes silently, Warn (the default) says so in a Warning header, Strict is a 400', async () => {
    const write = (fieldValidation?: string) =>
      fetch(
        `${api.url}/apis/test.io/v1/namespaces/default/widgets/w${fieldValidation ? `?fieldValidation=${fieldValidation}` : ''}`,
        {
          method: 'PATCH',
          headers: { 'Content-Type': 'application/merge-patch+json' },
          body: JSON.stringify({ spec: { stray: 1 } }),
        },
      );
    const ignored = await write('Ignore');
    assert.deepEqual(
      [ignored.status, ignored.headers.get('warning'), (await ignored.json()).spec.stray],
      [200, null, undefined],
    );
    const warned = await write();
    assert.deepEqual([warned.status, warned.headers.get('warning')], [200, '299 - "unknown field \\"spec.stray\\""']);
    const strict = await write('Strict');
    assert.deepEqual(
      [strict.status, (await strict.json()).message],
      [400, 'strict decoding error: unknown field "spec.stray"'],
    );
    assert.equal((await write('Sloppy')).status, 400);
  });

  it('a CRD whose schema is not one is refused', async () => {
    const broken = structuredClone(widgetCrd);
    broken.metadata.name = 'gadgets.test.io';
    Object.assign(broken.spec.names, { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' });
    (broken.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.size as Record<string, unknown>).type =
      'widget';
    const answer = await fetch(`${api.url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(broken),
    });
    const body = await answer.json();
    assert.deepEqual([answer.status, body.details.causes[0].field], [422, 'spec.versions[0].schema.openAPIV3Schema']);
  });
});
