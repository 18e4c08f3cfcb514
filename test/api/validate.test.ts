// The one validation of a CanaryRelease spec, case by case: each bad spec is refused by a line that
// names its field, and the CRD schema refuses it too wherever a schema can say it (so a real API
// server turns it away at `kubectl apply`); what only the proxy can judge is marked so. Every
// documented bound is pinned on both sides: the bound is accepted and one past it refused (an
// exclusive bound the other way round), by the proxy and, where it states the bound, by the schema.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1CustomResourceDefinition, V1PodTemplateSpec } from '@kubernetes/client-node';
import {
  isImageReference,
  parseDuration,
  podTemplateProblems,
  releaseProblems,
  replicasProblem,
  SIGNAL_NAMES,
  SIGNAL_THRESHOLDS,
} from '../../src/api/validate.ts';
import { ignoredFieldNotes } from '../../src/api/ignored-fields.ts';
import { KIND, VERSION } from '../../src/api/names.ts';
import type { CanaryReleaseSpec } from '../../src/api/spec-types.ts';
import { readProxySpec } from '../../src/manager/proxy-spec.ts';
import { theOnly } from '../deploy/manifests.ts';
import { validate, type StructuralSchema } from '../deploy/structural-schema.ts';

const crd = theOnly<V1CustomResourceDefinition>('CustomResourceDefinition');
const schema = crd.spec.versions.find((version) => version.name === VERSION)?.schema
  ?.openAPIV3Schema as StructuralSchema;

const services = [{ service: 'web', ports: [{ port: 80 }] }];
const good: CanaryReleaseSpec = {
  services,
  steps: [{ weight: 5, pause: { duration: '1h' } }, { weight: 50, pause: {} }, { weight: 100 }],
  promotedStep: 1,
  analysis: {
    interval: '30s',
    minSamples: 50,
    failureLimit: 2,
    thresholds: {
      connectErrorRate: { max: 0.01, maxAboveStable: 0.005 },
      resetRate: { max: 1 },
      connectLatencyP99: { maxMs: 250, maxRatioToStable: 1 },
      udpReplyRate: { min: 0, maxBelowStable: 0.1 },
    },
  },
  workloads: [
    {
      name: 'web',
      replicas: 1000,
      patch: { spec: { containers: [{ name: 'web', image: 'registry.example:5000/team/web:v2' }] } },
    },
  ],
};
const object = (spec: unknown) => ({
  apiVersion: `canary-l4.io/${VERSION}`,
  kind: KIND,
  metadata: { name: 'r' },
  spec,
});
const steps = (promotedStep: number) => ({
  services,
  steps: [{ weight: 10, pause: { duration: '1h' } }, { weight: 50 }],
  promotedStep,
});

/** name, spec, the problem (a prefix of it), and whether the CRD schema refuses the spec too. */
const refused: [string, unknown, string, 'schema refuses' | 'only the proxy'][] = [
  [
    'promotedStep past the last step',
    steps(2),
    'spec.promotedStep: 2 is past the last step (there are 2, indexed 0–1: step 2/2 (index 1) is the last), so it would skip every pause and analysis gate',
    'only the proxy',
  ],
  [
    'promotedStep 99 (stale in a reused manifest)',
    steps(99),
    'spec.promotedStep: 99 is past the last step',
    'schema refuses',
  ],
  [
    'promotedStep without steps',
    { services, promotedStep: 0 },
    'spec.promotedStep: is 0 but the release has no spec.steps to promote; remove it',
    'only the proxy',
  ],
  [
    'a negative promotedStep',
    steps(-1),
    "spec.promotedStep: must be a step's index (an integer >= 0: 0 is the first step), got -1",
    'schema refuses',
  ],
  [
    'a ratio under 1',
    { services, analysis: { thresholds: { connectLatencyP99: { maxRatioToStable: 0 } } } },
    'spec.analysis.thresholds.connectLatencyP99.maxRatioToStable: must be a ratio of at least 1',
    'schema refuses',
  ],
  [
    'a rate over 1',
    { services, analysis: { thresholds: { connectErrorRate: { max: 2 } } } },
    'spec.analysis.thresholds.connectErrorRate.max: must be a rate from 0 to 1 (0.01 = 1 %), got 2',
    'schema refuses',
  ],
  [
    'a negative rate',
    { services, analysis: { thresholds: { udpReplyRate: { maxBelowStable: -0.1 } } } },
    'spec.analysis.thresholds.udpReplyRate.maxBelowStable: must be a rate from 0 to 1',
    'schema refuses',
  ],
  [
    'a latency bound of 0 ms',
    { services, analysis: { thresholds: { connectLatencyP99: { maxMs: 0 } } } },
    'spec.analysis.thresholds.connectLatencyP99.maxMs: must be milliseconds, at least 1, got 0',
    'schema refuses',
  ],
  [
    'an unknown signal',
    { services, analysis: { thresholds: { errorRate: { max: 0.01 } } } },
    'spec.analysis.thresholds.errorRate: no such signal, so it would never be judged; the signals are connectErrorRate, resetRate, connectLatencyP99, udpReplyRate',
    'schema refuses',
  ],
  [
    'a misspelt bound',
    { services, analysis: { thresholds: { connectErrorRate: { mx: 0.01 } } } },
    'spec.analysis.thresholds.connectErrorRate.mx: no such bound of connectErrorRate, so it would never be judged; write max or maxAboveStable',
    'schema refuses',
  ],
  [
    'a signal with no bound (what pruning leaves of a misspelt one)',
    { services, analysis: { thresholds: { resetRate: {} } } },
    'spec.analysis.thresholds.resetRate: sets no bound, so it would never fail; set max or maxAboveStable',
    'only the proxy',
  ],
  [
    'a rate as text',
    { services, analysis: { thresholds: { resetRate: { max: '1%' } } } },
    'spec.analysis.thresholds.resetRate.max: must be a rate from 0 to 1 (0.01 = 1 %), got "1%"',
    'schema refuses',
  ],
  [
    'a pause whose end is no time',
    { services, steps: [{ weight: 10, pause: { duration: '100000000000h' } }] },
    'spec.steps[0].pause.duration: "100000000000h" is longer than 720h; for a longer hold leave the duration out',
    'only the proxy',
  ],
  [
    'a pause of 1e9 hours (year +116106)',
    { services, steps: [{ weight: 10, pause: { duration: '1000000000h' } }] },
    'spec.steps[0].pause.duration: "1000000000h" is longer than 720h',
    'only the proxy',
  ],
  [
    'a pause that is not a duration',
    { services, steps: [{ weight: 10, pause: { duration: 'soon' } }] },
    'spec.steps[0].pause.duration: "soon" is not a duration like 30s, 2m or 1h',
    'schema refuses',
  ],
  [
    'an analysis interval of a year',
    { services, analysis: { interval: '8760h' } },
    'spec.analysis.interval: "8760h" is longer than 1h; judge at least once an hour',
    'only the proxy',
  ],
  [
    'an analysis interval under 1s',
    { services, analysis: { interval: '500ms' } },
    'spec.analysis.interval: "500ms" is not a duration of at least 1s',
    'only the proxy',
  ],
  [
    'failureLimit 0',
    { services, analysis: { failureLimit: 0 } },
    'spec.analysis.failureLimit: must be an integer >= 1, got 0',
    'schema refuses',
  ],
  [
    'steps: [] (no weight would ever be set)',
    { services, steps: [] },
    'spec.steps: is empty, so no step would set a weight; list at least one step, or leave spec.steps out',
    'schema refuses',
  ],
  [
    'a step weight over 100',
    { services, steps: [{ weight: 500 }] },
    'spec.steps[0].weight: must be an integer 0–100, got 500',
    'schema refuses',
  ],
  [
    'transition in lower case',
    { services, transition: 'adopted' },
    'spec.transition: "adopted" is not a transition; write Adopted (capitalised), or "" while the release runs',
    'schema refuses',
  ],
  [
    'an unknown transition',
    { services, transition: 'Promoted' },
    'spec.transition: "Promoted" is not a transition; write Adopted or Deprecated, or ""',
    'schema refuses',
  ],
  [
    '10000 canary replicas',
    { services, workloads: [{ name: 'web', replicas: 10000 }] },
    'spec.workloads[0].replicas: must be an integer 0–1000, got 10000',
    'schema refuses',
  ],
  [
    'a workload kind other than Deployment',
    { services, workloads: [{ name: 'web', kind: 'StatefulSet' }] },
    'spec.workloads[0].kind: "StatefulSet" is not supported; only Deployment',
    'schema refuses',
  ],
  [
    'a workload listed twice',
    { services, workloads: [{ name: 'web' }, { name: 'web' }] },
    'spec.workloads[1].name: Deployment web is listed twice',
    'schema refuses',
  ],
  ['no Service', { services: [] }, 'spec.services is empty', 'schema refuses'],
  [
    'a Service listed twice',
    { services: [...services, ...services] },
    'spec.services[1]: Service web is listed twice',
    'schema refuses',
  ],
  [
    'a port listed twice',
    { services: [{ service: 'web', ports: [{ port: 80 }, { port: 80, protocol: 'HTTP' }] }] },
    'spec.services[0].ports[1]: port 80/TCP is listed twice',
    'only the proxy',
  ],
  [
    'a bad canary label',
    { services: [{ service: 'web', canaryServiceOperations: { add: { version: 'v 2' } }, ports: [{ port: 80 }] }] },
    'spec.services[0].canaryServiceOperations.add: label value "v 2" of version is not valid',
    'only the proxy',
  ],
];

/** The refusal of every threshold kind, as releaseProblems words it. */
const KIND_SAYS = {
  rate: 'a rate from 0 to 1',
  ratio: 'a ratio of at least 1',
  milliseconds: 'milliseconds, at least 1',
} as const;
/**
 * The values nearest each bound of a threshold kind, accepted then refused. The scale is continuous,
 * so one past a bound is the adjacent double: -5e-324 below 0, 1.0000000000000002 above 1,
 * 0.9999999999999999 below 1.
 */
const KIND_BOUNDS = {
  rate: [
    [0, -5e-324],
    [1, 1.0000000000000002],
  ],
  ratio: [[1, 0.9999999999999999]],
  milliseconds: [[1, 0.9999999999999999]],
} as const;

const config = (fields: object) => ({ services: [{ service: 'web', ports: [{ port: 80, config: fields }] }] });
const manySteps = (count: number, promotedStep?: number) => ({
  services,
  steps: Array.from({ length: count }, () => ({ weight: 10 })),
  promotedStep,
});

/**
 * Every documented bound: a spec made with a value, the value nearest the bound that is accepted and
 * the nearest that is refused (for an inclusive bound the bound itself and one past it; for an
 * exclusive one a value just inside and the bound), the line that refuses, and whether the CRD schema
 * states the bound too (then it must draw the line at the same place).
 */
type Bound = readonly [
  name: string,
  specWith: (value: any) => unknown,
  accepted: unknown,
  refused: unknown,
  problem: string,
  schemaSays: 'schema too' | 'only the proxy',
];
const bounds: Bound[] = [
  [
    'the shortest analysis interval',
    (interval) => ({ services, analysis: { interval } }),
    '1s',
    '999ms',
    'spec.analysis.interval: "999ms" is not a duration of at least 1s',
    'only the proxy',
  ],
  [
    'the longest analysis interval',
    (interval) => ({ services, analysis: { interval } }),
    '1h',
    '1h1ms',
    'spec.analysis.interval: "1h1ms" is longer than 1h',
    'only the proxy',
  ],
  [
    'the longest timed pause',
    (duration) => ({ services, steps: [{ weight: 10, pause: { duration } }] }),
    '720h',
    '720h1ms',
    'spec.steps[0].pause.duration: "720h1ms" is longer than 720h',
    'only the proxy',
  ],
  ['the fewest steps', (count) => manySteps(count), 1, 0, 'spec.steps: is empty', 'schema too'],
  [
    'the lowest step weight',
    (weight) => ({ services, steps: [{ weight }] }),
    0,
    -1,
    'spec.steps[0].weight: must be an integer 0–100, got -1',
    'schema too',
  ],
  [
    'the highest step weight',
    (weight) => ({ services, steps: [{ weight }] }),
    100,
    101,
    'spec.steps[0].weight: must be an integer 0–100, got 101',
    'schema too',
  ],
  [
    'the lowest step mirror',
    (mirror) => ({ services, steps: [{ mirror }] }),
    0,
    -1,
    'spec.steps[0].mirror: must be an integer 0–100, got -1',
    'schema too',
  ],
  [
    'the highest step mirror',
    (mirror) => ({ services, steps: [{ mirror }] }),
    100,
    101,
    'spec.steps[0].mirror: must be an integer 0–100, got 101',
    'schema too',
  ],
  [
    'the lowest promotedStep',
    steps,
    0,
    -1,
    "spec.promotedStep: must be a step's index (an integer >= 0: 0 is the first step), got -1",
    'schema too',
  ],
  [
    'promotedStep at the last step',
    steps,
    1,
    2,
    'spec.promotedStep: 2 is past the last step (there are 2, indexed 0–1: step 2/2 (index 1) is the last)',
    'only the proxy',
  ],
  [
    'the highest promotedStep (49, the last of the most steps the schema admits)',
    (promoted) => manySteps(50, promoted),
    49,
    50,
    'spec.promotedStep: 50 is past the last step (there are 50, indexed 0–49: step 50/50 (index 49) is the last)',
    'schema too',
  ],
  [
    'the lowest minSamples',
    (minSamples) => ({ services, analysis: { minSamples } }),
    0,
    -1,
    'spec.analysis.minSamples: must be an integer >= 0, got -1',
    'schema too',
  ],
  [
    'the lowest failureLimit',
    (failureLimit) => ({ services, analysis: { failureLimit } }),
    1,
    0,
    'spec.analysis.failureLimit: must be an integer >= 1, got 0',
    'schema too',
  ],
  [
    'the confidence above 0.5 (exclusive)',
    (confidence) => ({ services, analysis: { confidence } }),
    0.5000000000000001,
    0.5,
    'spec.analysis.confidence: must be a number above 0.5 and below 1 (e.g. 0.99), got 0.5',
    'schema too',
  ],
  [
    'the confidence below 1 (exclusive)',
    (confidence) => ({ services, analysis: { confidence } }),
    0.9999999999999999,
    1,
    'spec.analysis.confidence: must be a number above 0.5 and below 1 (e.g. 0.99), got 1',
    'schema too',
  ],
  ...Object.entries(SIGNAL_THRESHOLDS).flatMap(([signal, keys]) =>
    Object.entries(keys).flatMap(([key, kind]) =>
      KIND_BOUNDS[kind].map(
        ([accepted, refused]): Bound => [
          `the ${kind} ${signal}.${key}`,
          (value) => ({ services, analysis: { thresholds: { [signal]: { [key]: value } } } }),
          accepted,
          refused,
          `spec.analysis.thresholds.${signal}.${key}: must be ${KIND_SAYS[kind]}`,
          'schema too',
        ],
      ),
    ),
  ),
  [
    'the fewest Services',
    (count) => ({
      services: Array.from({ length: count }, (_, index) => ({ service: `web${index}`, ports: [{ port: 80 }] })),
    }),
    1,
    0,
    'spec.services is empty',
    'schema too',
  ],
  [
    'the lowest port weight',
    (weight) => config({ weight }),
    0,
    -1,
    'spec.services[0].ports[0].config.weight: must be an integer 0–100, got -1',
    'schema too',
  ],
  [
    'the highest port weight',
    (weight) => config({ weight }),
    100,
    101,
    'spec.services[0].ports[0].config.weight: must be an integer 0–100, got 101',
    'schema too',
  ],
  ...['maxConnectionAgeMs', 'rebalanceWindowMs', 'drainTimeoutMs'].flatMap((key): Bound[] => [
    [
      `the lowest ${key} (0, off)`,
      (value) => config({ [key]: value }),
      0,
      -1,
      `spec.services[0].ports[0].config.${key}: must be an integer 0-2147483647 (milliseconds; 0 = off), got -1`,
      'schema too',
    ],
    [
      `the highest ${key}`,
      (value) => config({ [key]: value }),
      2147483647,
      2147483648,
      `spec.services[0].ports[0].config.${key}: must be an integer 0-2147483647 (milliseconds; 0 = off), got 2147483648`,
      'schema too',
    ],
  ]),
  [
    'the lowest mirror percent',
    (percent) => config({ mirror: { percent } }),
    0,
    -1,
    'spec.services[0].ports[0].config.mirror.percent: must be an integer 0-100 (percent), got -1',
    'schema too',
  ],
  [
    'the highest mirror percent',
    (percent) => config({ mirror: { percent } }),
    100,
    101,
    'spec.services[0].ports[0].config.mirror.percent: must be an integer 0-100 (percent), got 101',
    'schema too',
  ],
  [
    'the smallest mirror maxBytes',
    (maxBytes) => config({ mirror: { maxBytes } }),
    1,
    0,
    'spec.services[0].ports[0].config.mirror.maxBytes: must be an integer 1-1073741824 (bytes), got 0',
    'schema too',
  ],
  [
    'the largest mirror maxBytes (1 GiB)',
    (maxBytes) => config({ mirror: { maxBytes } }),
    1073741824,
    1073741825,
    'spec.services[0].ports[0].config.mirror.maxBytes: must be an integer 1-1073741824 (bytes), got 1073741825',
    'schema too',
  ],
  [
    'the shortest workload name',
    (name) => ({ services, workloads: [{ name }] }),
    'w',
    '',
    'spec.workloads[0].name: must name a Deployment of the namespace, got ""',
    'schema too',
  ],
  [
    "the longest workload name (229, room for -canary and the pods' suffixes)",
    (name) => ({ services, workloads: [{ name }] }),
    'w'.repeat(229),
    'w'.repeat(230),
    `spec.workloads[0].name: ${'w'.repeat(230)} is too long for its canary`,
    'schema too',
  ],
  [
    'the lowest port a workload patch adds on purpose',
    (port) => ({ services, workloads: [{ name: 'web', adds: { containerPorts: [port] } }] }),
    1,
    0,
    'spec.workloads[0].adds.containerPorts[0]: must be a port number 1–65535, got 0',
    'schema too',
  ],
  [
    'the name of a container a workload patch adds on purpose',
    (name) => ({ services, workloads: [{ name: 'web', adds: { containers: [name] } }] }),
    'debug',
    '',
    'spec.workloads[0].adds.containers[0]: must be a name, got ""',
    'schema too',
  ],
  [
    'the fewest canary replicas',
    (replicas) => ({ services, workloads: [{ name: 'web', replicas }] }),
    0,
    -1,
    'spec.workloads[0].replicas: must be an integer 0–1000, got -1',
    'schema too',
  ],
  [
    'the most canary replicas',
    (replicas) => ({ services, workloads: [{ name: 'web', replicas }] }),
    1000,
    1001,
    'spec.workloads[0].replicas: must be an integer 0–1000, got 1001',
    'schema too',
  ],
  [
    'the fewest proxy replicas',
    (replicas) => ({ services, proxy: { replicas } }),
    1,
    0,
    'spec.proxy.replicas: must be an integer 1–1000',
    'schema too',
  ],
  [
    'the most proxy replicas',
    (replicas) => ({ services, proxy: { replicas } }),
    1000,
    1001,
    'spec.proxy.replicas: must be an integer 1–1000',
    'schema too',
  ],
];

/** A value for a test's name: a long name by its length. */
const shown = (value: unknown) =>
  typeof value === 'string' && value.length > 20 ? `a name of ${value.length} characters` : JSON.stringify(value);

/** What the proxy's controller refuses of a spec, and what the manager refuses of its spec.proxy. */
function judged(spec: unknown): string[] {
  const proxy = readProxySpec((spec as { proxy?: unknown }).proxy);
  return [...releaseProblems(spec as CanaryReleaseSpec), ...(proxy.ok ? [] : proxy.problems)];
}

describe('releaseProblems: the one validation of a CanaryRelease', () => {
  it('passes a good spec, with every signal, a 1h pause, a promotion in range and 1000 canary pods; and the schema admits it', () => {
    assert.deepEqual(releaseProblems(good), []);
    assert.deepEqual(validate(object(good), schema), []);
  });

  for (const [name, spec, problem, schemaSays] of refused) {
    it(`refuses ${name}, naming the field${schemaSays === 'schema refuses' ? '; so does the CRD schema' : ' (a schema cannot say it)'}`, () => {
      const problems = releaseProblems(spec as CanaryReleaseSpec);
      assert.ok(
        problems.some((line) => line.startsWith(problem)),
        `${problem}\n---\n${problems.join('\n')}`,
      );
      assert.ok(
        problems.every((line) => line.startsWith('spec.')),
        `every line names its field:\n${problems.join('\n')}`,
      );
      assert.equal(
        validate(object(spec), schema).length > 0,
        schemaSays === 'schema refuses',
        JSON.stringify(validate(object(spec), schema)),
      );
    });
  }

  for (const [bound, specWith, accepted, refused, problem, schemaSays] of bounds) {
    it(`${bound}: ${shown(accepted)} is accepted, ${shown(refused)} refused${schemaSays === 'schema too' ? '; the CRD schema draws the same line' : ' (the schema does not state it)'}`, () => {
      const within = specWith(accepted);
      assert.deepEqual(judged(within), []);
      assert.deepEqual(validate(object(within), schema), []);
      const past = specWith(refused);
      const problems = judged(past);
      assert.ok(
        problems.some((line) => line.startsWith(problem)),
        `${problem}\n---\n${problems.join('\n')}`,
      );
      const schemaProblems = validate(object(past), schema);
      assert.equal(schemaProblems.length > 0, schemaSays === 'schema too', JSON.stringify(schemaProblems));
      const field = problem.split(/[: ]/)[0]!;
      assert.ok(
        schemaProblems.every((line) => line.startsWith(`${field}: `)),
        `the schema refuses ${field} alone: ${JSON.stringify(schemaProblems)}`,
      );
    });
  }

  it('knows exactly the signals of the thresholds type, for the analysis to share', () => {
    assert.deepEqual(SIGNAL_NAMES, [
      'connectErrorRate',
      'resetRate',
      'connectLatencyP99',
      'udpReplyRate',
      'mirrorMismatchRate',
      'mirrorErrorRate',
    ]);
    assert.deepEqual(
      Object.keys(schema.properties!.spec!.properties!.analysis!.properties!.thresholds!.properties!),
      SIGNAL_NAMES,
      'the CRD lists the same signals',
    );
  });

  it("bounds replicas with one rule, for the canary workloads and the manager's proxy", () => {
    assert.equal(replicasProblem(1000, 'spec.proxy.replicas', 1), undefined);
    assert.equal(
      replicasProblem(1001, 'spec.proxy.replicas', 1),
      'spec.proxy.replicas: must be an integer 1–1000, got 1001',
    );
    assert.equal(replicasProblem(0, 'x', 1), 'x: must be an integer 1–1000, got 0');
  });

  it('reads durations', () => {
    assert.deepEqual(
      ['30s', '2m', '1h', '500ms', '1m30s', '1.5s'].map(parseDuration),
      [30_000, 120_000, 3_600_000, 500, 90_000, 1_500],
    );
    assert.deepEqual(['', '2', 'm', '2 m', '-1s'].map(parseDuration), [
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe('podTemplateProblems: the patched template must still make pods of that Deployment', () => {
  const template = (containers: unknown, labels: Record<string, string> = { app: 'web', version: 'v2' }) =>
    ({ metadata: { labels }, spec: { containers } }) as V1PodTemplateSpec;
  const selector = { app: 'web' };

  it('passes containers with names and pullable images, and labels the selector matches', () => {
    assert.deepEqual(
      podTemplateProblems(
        template([
          { name: 'web', image: 'web:v2' },
          { name: 'side', image: `ghcr.io/org/side@sha256:${'a'.repeat(64)}` },
        ]),
        selector,
        'p',
      ),
      [],
    );
  });

  for (const [name, built, problem] of [
    ['no containers left', template([]), 'spec.workloads[0].patch: leaves the pod template without containers'],
    ['containers deleted', template(undefined), 'spec.workloads[0].patch: leaves the pod template without containers'],
    [
      'a blank image (the patch removed it)',
      template([{ name: 'web', image: null }]),
      'spec.workloads[0].patch.spec.containers[name=web].image: the container has no image',
    ],
    [
      'an image of spaces',
      template([{ name: 'web', image: '  ' }]),
      'spec.workloads[0].patch.spec.containers[name=web].image: the container has no image',
    ],
    [
      'an image that is no reference',
      template([{ name: 'web', image: 'Web App:v2!' }]),
      'spec.workloads[0].patch.spec.containers[name=web].image: "Web App:v2!" is not an image reference',
    ],
    [
      'a container without a name',
      template([{ image: 'web:v2' }]),
      'spec.workloads[0].patch.spec.containers[0]: a container has no name',
    ],
    [
      'a label the selector needs dropped',
      template([{ name: 'web', image: 'web:v2' }], { version: 'v2' }),
      "spec.workloads[0].patch.metadata.labels: drops app=web, which the Deployment's selector needs",
    ],
  ] as const) {
    it(`refuses ${name}, naming the field`, () => {
      const problems = podTemplateProblems(built, selector, 'spec.workloads[0].patch');
      assert.ok(
        problems.some((line) => line.startsWith(problem)),
        `${problem}\n---\n${problems.join('\n')}`,
      );
    });
  }

  it('tells image references from other text', () => {
    for (const image of [
      'nginx',
      'nginx:1.27',
      'library/nginx:latest',
      'registry.example:5000/a/b_c-d.e:v1.2-rc',
      'localhost/app',
      `app@sha256:${'0'.repeat(64)}`,
    ]) {
      assert.ok(isImageReference(image), image);
    }
    for (const image of ['', 'Nginx', 'nginx:', 'nginx:-x', 'a b', 'nginx:1.27 ', '-nginx', 'app@sha256:short'])
      assert.ok(!isImageReference(image), image);
  });
});

describe('ignoredFieldNotes: what a valid spec sets that does nothing as written', () => {
  it("says config.weight is ignored once steps set the weights, and where a step's mirror replaces config.mirror.percent", () => {
    assert.deepEqual(
      ignoredFieldNotes({
        services: [
          { service: 'web', ports: [{ port: 80, config: { weight: 25, mirror: { percent: 10 } } }, { port: 81 }] },
        ],
        steps: [{ weight: 0, mirror: 50 }, { weight: 20 }],
      }),
      [
        "spec.services[0].ports[0].config.weight: 25 is ignored: with spec.steps every listed port takes the step's weight (0% → 20%); remove it, or remove spec.steps to set weights by hand",
        'spec.services[0].ports[0].config.mirror.percent: 10 holds only at the steps that set no mirror: step 1/2 (index 0) sets its own',
      ],
    );
    assert.deepEqual(
      ignoredFieldNotes({ services: [{ service: 'web', ports: [{ port: 80, config: { weight: 25 } }] }] }),
      [],
    );
  });
});
