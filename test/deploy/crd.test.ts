import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { CONDITION_TYPES } from '../../src/api/conditions.ts';
import { GROUP, KIND, PLURAL, VERSION } from '../../src/api/names.ts';
import { PHASES } from '../../src/api/status-types.ts';
import { PROXY_CONDITION } from '../../src/manager/names.ts';

type Schema = { [key: string]: unknown; properties?: Record<string, Schema>; items?: Schema };

const crd = parse(readFileSync(new URL('../../deploy/crd.yaml', import.meta.url), 'utf8')) as {
  metadata: { name: string };
  spec: {
    group: string;
    scope: string;
    names: { kind: string; plural: string; shortNames: string[] };
    versions: {
      name: string;
      subresources?: { status?: object };
      additionalPrinterColumns: { name: string; jsonPath: string }[];
      schema: { openAPIV3Schema: Schema };
    }[];
  };
};

function at(schema: Schema, path: string): Schema {
  return path.split('.').reduce((node, key) => {
    const next = key === '[]' ? node.items : node.properties?.[key];
    assert.ok(next, `schema has no ${path} (stopped at ${key})`);
    return next;
  }, schema);
}

describe('deploy/crd.yaml', () => {
  const version = crd.spec.versions.find((item) => item.name === VERSION);
  assert.ok(version);
  const root = version.schema.openAPIV3Schema;

  it('names the API the control loop uses', () => {
    assert.equal(crd.metadata.name, `${PLURAL}.${GROUP}`);
    assert.equal(crd.spec.group, GROUP);
    assert.equal(crd.spec.scope, 'Namespaced');
    assert.equal(crd.spec.names.kind, KIND);
    assert.equal(crd.spec.names.plural, PLURAL);
    assert.deepEqual(crd.spec.names.shortNames, ['crel']);
    assert.deepEqual(version.subresources?.status, {});
  });

  it('bounds weights and ports, and enumerates protocols and transitions', () => {
    const port = at(root, 'spec.services.[].ports.[]');
    assert.deepEqual([at(port, 'port').minimum, at(port, 'port').maximum], [1, 65535]);
    assert.deepEqual([at(port, 'config.weight').minimum, at(port, 'config.weight').maximum], [0, 100]);
    assert.deepEqual(at(port, 'protocol').enum, ['TCP', 'UDP', 'HTTP', 'HTTPS']);
    for (const field of ['maxConnectionAgeMs', 'rebalanceWindowMs', 'drainTimeoutMs']) {
      assert.deepEqual(
        [at(port, `config.${field}`).minimum, at(port, `config.${field}`).maximum],
        [0, 2147483647],
        field,
      );
    }
    assert.deepEqual(at(port, 'config.affinity').enum, ['none', 'clientIP']);
    assert.deepEqual(at(root, 'spec.transition').enum, ['', 'Adopted', 'Deprecated']);
    assert.deepEqual(at(root, 'status.ports.[].protocol').enum, ['TCP', 'UDP']);
    assert.deepEqual(
      at(root, 'status.conditions.[].type').enum,
      [...CONDITION_TYPES, PROXY_CONDITION],
      "the proxy's conditions and the manager's",
    );
    assert.deepEqual(
      at(root, 'status.phase').enum,
      ['', ...PHASES],
      'every phase the proxy writes, and the "" of releases written before 0.2',
    );
  });

  it('keys its lists so duplicates are refused at admission', () => {
    assert.deepEqual(at(root, 'spec.services')['x-kubernetes-list-map-keys'], ['service']);
    assert.deepEqual(at(root, 'spec.services.[].ports')['x-kubernetes-list-map-keys'], ['port', 'protocol']);
    assert.equal(
      at(root, 'spec.services.[].ports.[].protocol').default,
      'TCP',
      'a list-map key must be required or defaulted',
    );
    assert.deepEqual(at(root, 'status.conditions')['x-kubernetes-list-map-keys'], ['type']);
  });

  it('describes both selector operations with the same structural schema', () => {
    const service = at(root, 'spec.services.[]');
    for (const operations of ['canaryServiceOperations', 'forkedServiceOperations']) {
      assert.deepEqual(at(service, `${operations}.add`).additionalProperties, { type: 'string' });
      assert.equal(at(service, `${operations}.remove.[]`).type, 'string');
    }
    assert.doesNotMatch(JSON.stringify(root), /\$ref/, 'structural schemas cannot use $ref');
  });

  it('prints phase, weights, step, proxies, readiness and age, each from a status field the proxy or the manager writes', () => {
    assert.deepEqual(
      version.additionalPrinterColumns.map((column) => [column.name, column.jsonPath]),
      [
        ['Phase', '.status.phase'],
        ['Weights', '.status.weights'],
        ['Step', '.status.step'],
        ['Proxy', '.status.proxy.ready'],
        ['Ready', '.status.conditions[?(@.type=="Ready")].status'],
        ['Age', '.metadata.creationTimestamp'],
      ],
    );
    assert.equal(at(root, 'status.weights').type, 'string');
    assert.equal(at(root, 'status.step').type, 'string');
    assert.equal(at(root, 'status.proxy.ready').type, 'string');
  });
});
