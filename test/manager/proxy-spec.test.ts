// spec.proxy: what the manager accepts, and for what it refuses, one line naming the field.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { parseQuantity, readProxySpec } from '../../src/manager/proxy-spec.ts';
import { KIND, VERSION } from '../../src/api/names.ts';
import { theOnly } from '../deploy/manifests.ts';
import { validate, type StructuralSchema } from '../deploy/structural-schema.ts';

describe('spec.proxy', () => {
  it('replicas over 1000 (10000 for 10): refused by the manager, and by the CRD schema at kubectl apply', () => {
    const schema = theOnly<V1CustomResourceDefinition>('CustomResourceDefinition').spec.versions.find(
      (version) => version.name === VERSION,
    )?.schema?.openAPIV3Schema as StructuralSchema;
    const release = (replicas: number) => ({
      apiVersion: `canary-l4.io/${VERSION}`,
      kind: KIND,
      metadata: { name: 'r' },
      spec: { services: [{ service: 'web', ports: [{ port: 80 }] }], proxy: { replicas } },
    });
    assert.deepEqual(validate(release(10000), schema), [
      'spec.proxy.replicas: Invalid value: 10000: spec.proxy.replicas in body should be less than or equal to 1000',
    ]);
    assert.deepEqual(validate(release(1000), schema), []);
    assert.equal(readProxySpec({ replicas: 1000 }).ok, true);
  });

  it('absent: two replicas and the defaults', () => {
    assert.deepEqual(readProxySpec(undefined), {
      ok: true,
      spec: {
        replicas: 2,
        resources: undefined,
        nodeSelector: undefined,
        tolerations: undefined,
        priorityClassName: undefined,
      },
    });
  });

  it('every field, as given', () => {
    const proxy = {
      replicas: 3,
      resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: 1, memory: '1Gi' } },
      nodeSelector: { 'kubernetes.io/os': 'linux', pool: 'edge' },
      tolerations: [
        { key: 'dedicated', operator: 'Equal', value: 'proxy', effect: 'NoSchedule' },
        { operator: 'Exists' },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 },
      ],
      priorityClassName: 'system-cluster-critical',
    };
    assert.deepEqual(readProxySpec(proxy), {
      ok: true,
      spec: { ...proxy, resources: { requests: { cpu: '250m', memory: '64Mi' }, limits: { cpu: '1', memory: '1Gi' } } },
    });
  });

  const refused: [string, unknown, string][] = [
    ['not an object', 'big', 'spec.proxy: must be an object, got "big"'],
    [
      'ten thousand replicas (a typo)',
      { replicas: 10000 },
      'spec.proxy.replicas: must be an integer 1–1000 (every proxy pod serves; the Services need one), got 10000',
    ],
    [
      'no replicas',
      { replicas: 0 },
      'spec.proxy.replicas: must be an integer 1–1000 (every proxy pod serves; the Services need one), got 0',
    ],
    [
      'half a replica',
      { replicas: 1.5 },
      'spec.proxy.replicas: must be an integer 1–1000 (every proxy pod serves; the Services need one), got 1.5',
    ],
    [
      'replicas as text',
      { replicas: '2' },
      'spec.proxy.replicas: must be an integer 1–1000 (every proxy pod serves; the Services need one), got "2"',
    ],
    ['a misspelt field', { replica: 2 }, 'spec.proxy.replica: unknown key, did you mean "replicas"?'],
    [
      'a quantity that is not one',
      { resources: { limits: { memory: '1 GB' } } },
      'spec.proxy.resources.limits.memory: must be a quantity such as 500m, 2, 128Mi or 1Gi, got "1 GB"',
    ],
    [
      'a negative quantity',
      { resources: { requests: { cpu: '-1' } } },
      'spec.proxy.resources.requests.cpu: must be a quantity such as 500m, 2, 128Mi or 1Gi, got "-1"',
    ],
    [
      'an unknown resource',
      { resources: { requests: { gpu: '1' } } },
      'spec.proxy.resources.requests.gpu: not a resource name (cpu, memory, ephemeral-storage, hugepages-<size> or domain/name)',
    ],
    [
      'a request above its limit',
      { resources: { requests: { memory: '1Gi' }, limits: { memory: '512Mi' } } },
      'spec.proxy.resources.requests.memory: must be less than or equal to the limit 512Mi, got 1Gi',
    ],
    [
      'resources as a list',
      { resources: [] },
      'spec.proxy.resources: must be an object with requests and limits, got []',
    ],
    [
      'a misspelt resources field',
      { resources: { request: {} } },
      'spec.proxy.resources.request: unknown key, did you mean "requests"?',
    ],
    [
      'a node label value that is not one',
      { nodeSelector: { pool: 'edge nodes' } },
      'spec.proxy.nodeSelector: label value "edge nodes" of pool is not valid',
    ],
    [
      'a node selector of numbers',
      { nodeSelector: { pool: 1 } },
      'spec.proxy.nodeSelector: must be a map of node label to value (strings), got {"pool":1}',
    ],
    [
      'tolerations not a list',
      { tolerations: { key: 'a' } },
      'spec.proxy.tolerations: must be a list, got {"key":"a"}',
    ],
    [
      'an unknown operator',
      { tolerations: [{ key: 'a', operator: 'In' }] },
      'spec.proxy.tolerations[0].operator: must be Exists or Equal, got "In"',
    ],
    [
      'Equal without a key',
      { tolerations: [{ value: 'x' }] },
      'spec.proxy.tolerations[0].operator: must be Exists when key is empty (a toleration of every taint)',
    ],
    [
      'Exists with a value',
      { tolerations: [{ key: 'a', operator: 'Exists', value: 'x' }] },
      'spec.proxy.tolerations[0].value: must be empty when operator is Exists, got "x"',
    ],
    [
      'an unknown effect',
      { tolerations: [{ key: 'a', effect: 'NoRun' }] },
      'spec.proxy.tolerations[0].effect: must be one of NoSchedule, PreferNoSchedule, NoExecute (or empty for all), got "NoRun"',
    ],
    [
      'tolerationSeconds without NoExecute',
      { tolerations: [{ key: 'a', effect: 'NoSchedule', tolerationSeconds: 5 }] },
      'spec.proxy.tolerations[0].tolerationSeconds: only applies with effect NoExecute, got effect "NoSchedule"',
    ],
    [
      'a priority class that cannot be a name',
      { priorityClassName: 'High Priority' },
      "spec.proxy.priorityClassName: must be the name of a PriorityClass (lower-case letters, digits, '-' and '.'), got \"High Priority\"",
    ],
  ];
  for (const [what, proxy, expected] of refused) {
    it(`refuses ${what}, naming the field`, () => {
      const result = readProxySpec(proxy);
      assert.equal(result.ok, false);
      assert.ok(
        !result.ok && result.problems.some((problem) => problem.startsWith(expected)),
        `expected "${expected}…" among ${JSON.stringify(!result.ok && result.problems)}`,
      );
    });
  }

  it('says every problem at once', () => {
    const result = readProxySpec({ replicas: 0, priorityClassName: 'A', tolerations: [{ operator: 'In' }] });
    assert.equal(result.ok ? 0 : result.problems.length, 4);
  });
});

describe('quantities', () => {
  const values: [unknown, number | undefined][] = [
    ['500m', 0.5],
    ['0.5', 0.5],
    [2, 2],
    ['1Gi', 2 ** 30],
    ['128Mi', 128 * 2 ** 20],
    ['1k', 1000],
    ['1e3', 1000],
    ['1.5G', 1.5e9],
    ['.5', 0.5],
    ['1 Gi', undefined],
    ['Gi', undefined],
    ['-1', undefined],
    ['1.2.3', undefined],
    ['1Ki2', undefined],
    [null, undefined],
  ];
  for (const [text, value] of values) {
    it(`${JSON.stringify(text)} is ${value ?? 'not a quantity'}`, () => assert.equal(parseQuantity(text), value));
  }
});
