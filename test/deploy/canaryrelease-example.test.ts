// The example CanaryRelease is what a user copies first: it must pass the CRD's admission schema
// and be accepted by an API server that serves deploy/crd.yaml.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiextensionsV1Api, CustomObjectsApi, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { GROUP, KIND, PLURAL, VERSION } from '../../src/api/names.ts';
import { startFakeApiServer, type FakeApiServer } from '../support/fake-apiserver/index.ts';
import { theOnly, type KubeObject } from './manifests.ts';
import { validate, type StructuralSchema } from './structural-schema.ts';

const crd = theOnly<V1CustomResourceDefinition>('CustomResourceDefinition');
const example = theOnly<KubeObject & { spec: unknown }>(KIND);
const served = crd.spec.versions.find((version) => version.name === VERSION);
const schema = served?.schema?.openAPIV3Schema as StructuralSchema | undefined;

/** The example with one change, for showing that the schema check can fail. */
function exampleWith(change: (copy: Record<string, any>) => void): unknown {
  const copy = structuredClone(example) as Record<string, any>;
  change(copy);
  return copy;
}

describe('deploy/canaryrelease-example.yaml', () => {
  it('is a CanaryRelease of the served version', () => {
    assert.equal(example.apiVersion, `${GROUP}/${VERSION}`);
    assert.ok(schema, `crd.yaml serves ${VERSION} with a schema`);
  });

  it('passes the CRD schema', () => {
    assert.ok(schema);
    assert.deepEqual(validate(example, schema), []);
  });

  const refused: [string, (copy: Record<string, any>) => void, string][] = [
    [
      'a weight over 100',
      (copy) => (copy.spec.services[0].ports[0].config.weight = 101),
      'spec.services[0].ports[0].config.weight: Invalid value: 101: spec.services[0].ports[0].config.weight in body should be less than or equal to 100',
    ],
    [
      'a protocol the proxy does not speak',
      (copy) => (copy.spec.services[0].ports[0].protocol = 'SCTP'),
      'spec.services[0].ports[0].protocol: Unsupported value: "SCTP"',
    ],
    ['a Service without ports', (copy) => delete copy.spec.services[0].ports, 'spec.services[0].ports: Required value'],
    [
      'a Service name too long for its -forked copy',
      (copy) => (copy.spec.services[0].service = 'w'.repeat(57)),
      'spec.services[0].service: Too long: may not be more than 56 bytes',
    ],
    [
      'a misspelt field',
      (copy) => (copy.spec.services[0].canaryServiceOperation = {}),
      'spec.services[0].canaryServiceOperation: unknown field',
    ],
    [
      'an unknown transition',
      (copy) => (copy.spec.transition = 'Promoted'),
      'spec.transition: Unsupported value: "Promoted"',
    ],
  ];
  for (const [what, change, expected] of refused) {
    it(`with ${what}, is refused by the schema`, () => {
      assert.ok(schema);
      const problems = validate(exampleWith(change), schema);
      assert.ok(
        problems.some((problem) => problem.startsWith(expected)),
        `expected "${expected}…" among ${JSON.stringify(problems)}`,
      );
    });
  }

  describe('applied to an API server', () => {
    let api: FakeApiServer;
    before(async () => {
      api = await startFakeApiServer();
    });
    after(() => api.stop());

    it('is created once the CRD is, and reads back unchanged', async () => {
      const namespace = 'default';
      await api.kubeConfig.makeApiClient(ApiextensionsV1Api).createCustomResourceDefinition({ body: crd });
      const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
      const target = { group: GROUP, version: VERSION, plural: PLURAL, namespace };
      await custom.createNamespacedCustomObject({ ...target, body: example });
      const stored = (await custom.getNamespacedCustomObject({ ...target, name: example.metadata.name })) as {
        spec: unknown;
      };
      assert.deepEqual(stored.spec, example.spec);
    });
  });
});
