// The fields of a CanaryRelease's spec, as deploy/crd.yaml declares them (a test keeps the two
// equal), so that a typo in a manifest is named with its path and what it likely meant before
// anything is planned or applied (`kubectl canary-l4 plan`): the API server's own refusal names the
// field but suggests nothing. Pure.

import { closestKey } from '../util/closest.ts';

/** A field's children: a map of fields, a list of items (`[item]`), free-form (`ANY`), or a value (`null`). */
export type FieldTree = { readonly [field: string]: FieldTree } | readonly [FieldTree] | typeof ANY | null;

/** A map whose keys are the user's (labels, a pod template patch, resources), or that validate.ts judges itself. */
export const ANY = 'any';

const SELECTOR_OPERATIONS = { add: ANY, remove: [null] } as const;

/** spec, as deploy/crd.yaml declares it. analysis.thresholds is validate.ts's: it knows each signal's bounds. */
export const SPEC_FIELDS: FieldTree = {
  services: [
    {
      service: null,
      canaryServiceOperations: SELECTOR_OPERATIONS,
      forkedServiceOperations: SELECTOR_OPERATIONS,
      ports: [
        {
          port: null,
          protocol: null,
          config: {
            weight: null,
            maxConnectionAgeMs: null,
            rebalanceWindowMs: null,
            drainTimeoutMs: null,
            affinity: null,
            mirror: { percent: null, compare: null, maxBytes: null },
          },
        },
      ],
    },
  ],
  transition: null,
  transitionReason: null,
  steps: [{ weight: null, mirror: null, pause: { duration: null } }],
  autoAdopt: null,
  paused: null,
  promotedStep: null,
  analysis: { interval: null, minSamples: null, failureLimit: null, confidence: null, thresholds: ANY },
  proxy: {
    replicas: null,
    resources: { requests: ANY, limits: ANY },
    nodeSelector: ANY,
    tolerations: [{ key: null, operator: null, value: null, effect: null, tolerationSeconds: null }],
    priorityClassName: null,
  },
  workloads: [
    {
      kind: null,
      name: null,
      replicas: null,
      patch: ANY,
      adds: { containers: [null], initContainers: [null], volumes: [null], containerPorts: [null] },
    },
  ],
};

/** A CanaryRelease's top-level fields: what a manifest holds (status is the controller's, metadata the API's). */
const RELEASE_FIELDS: FieldTree = { apiVersion: null, kind: null, metadata: ANY, spec: SPEC_FIELDS, status: ANY };

const isMap = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Each field of `release` (a manifest's object) that a CanaryRelease does not have, one line naming
 * its path and the field it likely meant: `spec.services[0].ports[0].protocl: no such field; did you
 * mean protocol?`. A value of the wrong shape is not judged here (the schema and validate.ts say so).
 */
export function unknownFieldProblems(release: unknown): string[] {
  const problems: string[] = [];
  walk(release, RELEASE_FIELDS, '', problems);
  return problems;
}

function walk(value: unknown, fields: FieldTree, path: string, problems: string[]): void {
  if (fields === null || fields === ANY) return;
  if (Array.isArray(fields)) {
    if (!Array.isArray(value)) return;
    for (const [index, item] of value.entries()) walk(item, fields[0], `${path}[${index}]`, problems);
    return;
  }
  if (!isMap(value)) return;
  const known = Object.keys(fields);
  for (const [key, child] of Object.entries(value)) {
    const at = path === '' ? key : `${path}.${key}`;
    if (Object.hasOwn(fields, key)) {
      walk(child, (fields as Record<string, FieldTree>)[key]!, at, problems);
      continue;
    }
    const meant = closestKey(key, known);
    problems.push(
      `${at}: no such field${meant === undefined ? `; the fields here are ${known.join(', ')}` : `; did you mean ${meant}?`}`,
    );
  }
}
