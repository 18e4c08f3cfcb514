// The fields of a CanaryRelease's spec as the plugin knows them (api/fields.ts) are deploy/crd.yaml's,
// and a misspelt one is named with its path and what it likely meant.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse } from 'yaml';
import { ANY, type FieldTree, SPEC_FIELDS, unknownFieldProblems } from '../../src/api/fields.ts';

interface Schema {
  readonly properties?: Record<string, Schema>;
  readonly items?: Schema;
  readonly additionalProperties?: unknown;
  readonly 'x-kubernetes-preserve-unknown-fields'?: boolean;
}

/** The CRD's schema as a field tree: free-form maps (labels, a patch, resources) are ANY. */
function treeOf(schema: Schema): FieldTree {
  if (schema.items !== undefined) return [treeOf(schema.items)];
  if (schema['x-kubernetes-preserve-unknown-fields'] === true || schema.additionalProperties !== undefined) return ANY;
  if (schema.properties === undefined) return null;
  return Object.fromEntries(Object.entries(schema.properties).map(([key, child]) => [key, treeOf(child)]));
}

const crd = parse(readFileSync(new URL('../../deploy/crd.yaml', import.meta.url), 'utf8')) as {
  spec: { versions: { schema: { openAPIV3Schema: Schema } }[] };
};

describe("a CanaryRelease's fields", () => {
  it("are deploy/crd.yaml's, analysis.thresholds left to validate.ts (it knows each signal's bounds)", () => {
    const spec = treeOf(crd.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!) as Record<string, any>;
    spec.analysis.thresholds = ANY;
    assert.deepEqual(SPEC_FIELDS, spec);
  });

  const release = (spec: unknown, top: Record<string, unknown> = {}) => ({
    apiVersion: 'canary-l4.io/v1alpha1',
    kind: 'CanaryRelease',
    metadata: { name: 'web-v2', labels: { anything: 'goes' } },
    spec,
    ...top,
  });
  const cases: readonly (readonly [string, unknown, readonly string[]])[] = [
    [
      'a good release, with free-form labels, patch and thresholds',
      release({
        services: [{ service: 'web', canaryServiceOperations: { add: { version: 'v2' } }, ports: [{ port: 80 }] }],
        workloads: [{ name: 'web', patch: { spec: { containers: [{ name: 'web', image: 'x/y:2' }] } } }],
        analysis: { thresholds: { resetRate: { max: 0.01 } } },
      }),
      [],
    ],
    [
      'a misspelt field deep in a list',
      release({ services: [{ service: 'web', ports: [{ port: 80 }, { port: 81, protocl: 'TCP' }] }] }),
      ['spec.services[0].ports[1].protocl: no such field; did you mean protocol?'],
    ],
    [
      'every one, at every level',
      release({ sevrices: [], steps: [{ wieght: 10, pause: { duraton: '1m' } }] }, { spce: {} }),
      [
        'spec.sevrices: no such field; did you mean services?',
        'spec.steps[0].wieght: no such field; did you mean weight?',
        'spec.steps[0].pause.duraton: no such field; did you mean duration?',
        'spce: no such field; did you mean spec?',
      ],
    ],
    [
      'nothing close: the fields there',
      release({ steps: [{ weight: 10, hold: '1m' }] }),
      ['spec.steps[0].hold: no such field; the fields here are weight, mirror, pause'],
    ],
    [
      'a key an object has by inheritance is no field',
      release({ services: [], toString: 1 }),
      [
        'spec.toString: no such field; the fields here are services, transition, transitionReason, steps, autoAdopt, paused, promotedStep, analysis, proxy, workloads',
      ],
    ],
  ];
  for (const [name, object, expected] of cases)
    it(name, () => assert.deepEqual(unknownFieldProblems(object), expected));
});
