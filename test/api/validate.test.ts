// The one validation of a CanaryRelease spec, case by case: each bad spec is refused by a line that
// names its field, and the CRD schema refuses it too wherever a schema can say it (so a real API
// server turns it away at `kubectl apply`); what only the proxy can judge is marked so.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1CustomResourceDefinition, V1PodTemplateSpec } from '@kubernetes/client-node';
import { isImageReference, parseDuration, podTemplateProblems, releaseProblems, replicasProblem, SIGNAL_NAMES } from '../../src/api/validate.ts';
import { KIND, VERSION, type CanaryReleaseSpec } from '../../src/api/types.ts';
import { theOnly } from '../deploy/manifests.ts';
import { validate, type StructuralSchema } from '../deploy/structural-schema.ts';

const crd = theOnly<V1CustomResourceDefinition>('CustomResourceDefinition');
const schema = crd.spec.versions.find((version) => version.name === VERSION)?.schema?.openAPIV3Schema as StructuralSchema;

const services = [{ service: 'web', ports: [{ port: 80 }] }];
const good: CanaryReleaseSpec = {
  services,
  steps: [{ weight: 5, pause: { duration: '1h' } }, { weight: 50, pause: {} }, { weight: 100 }],
  promotedStep: 1,
  analysis: {
    interval: '30s', minSamples: 50, failureLimit: 2,
    thresholds: { connectErrorRate: { max: 0.01, maxAboveStable: 0.005 }, resetRate: { max: 1 }, connectLatencyP99: { maxMs: 250, maxRatioToStable: 1 }, udpReplyRate: { min: 0, maxBelowStable: 0.1 } },
  },
  workloads: [{ name: 'web', replicas: 1000, patch: { spec: { containers: [{ name: 'web', image: 'registry.example:5000/team/web:v2' }] } } }],
};
const object = (spec: unknown) => ({ apiVersion: `canary-l4.io/${VERSION}`, kind: KIND, metadata: { name: 'r' }, spec });
const steps = (promotedStep: number) => ({ services, steps: [{ weight: 10, pause: { duration: '1h' } }, { weight: 50 }], promotedStep });

/** name, spec, the problem (a prefix of it), and whether the CRD schema refuses the spec too. */
const refused: [string, unknown, string, 'schema refuses' | 'only the proxy'][] = [
  ['promotedStep past the last step', steps(2), 'spec.promotedStep: 2 is past the last step (there are 2, indexed 0–1), so it would skip every pause and analysis gate', 'only the proxy'],
  ['promotedStep 99 (stale in a reused manifest)', steps(99), 'spec.promotedStep: 99 is past the last step', 'schema refuses'],
  ['promotedStep without steps', { services, promotedStep: 0 }, 'spec.promotedStep: is 0 but the release has no spec.steps to promote; remove it', 'only the proxy'],
  ['a negative promotedStep', steps(-1), 'spec.promotedStep: must be a step\'s index (an integer >= 0), got -1', 'schema refuses'],
  ['a ratio under 1', { services, analysis: { thresholds: { connectLatencyP99: { maxRatioToStable: 0 } } } }, 'spec.analysis.thresholds.connectLatencyP99.maxRatioToStable: must be a ratio of at least 1', 'schema refuses'],
  ['a rate over 1', { services, analysis: { thresholds: { connectErrorRate: { max: 2 } } } }, 'spec.analysis.thresholds.connectErrorRate.max: must be a rate from 0 to 1 (0.01 = 1 %), got 2', 'schema refuses'],
  ['a negative rate', { services, analysis: { thresholds: { udpReplyRate: { maxBelowStable: -0.1 } } } }, 'spec.analysis.thresholds.udpReplyRate.maxBelowStable: must be a rate from 0 to 1', 'schema refuses'],
  ['a latency bound of 0 ms', { services, analysis: { thresholds: { connectLatencyP99: { maxMs: 0 } } } }, 'spec.analysis.thresholds.connectLatencyP99.maxMs: must be milliseconds, at least 1, got 0', 'schema refuses'],
  ['an unknown signal', { services, analysis: { thresholds: { errorRate: { max: 0.01 } } } }, 'spec.analysis.thresholds.errorRate: no such signal, so it would never be judged; the signals are connectErrorRate, resetRate, connectLatencyP99, udpReplyRate', 'schema refuses'],
  ['a misspelt bound', { services, analysis: { thresholds: { connectErrorRate: { mx: 0.01 } } } }, 'spec.analysis.thresholds.connectErrorRate.mx: no such bound of connectErrorRate, so it would never be judged; write max or maxAboveStable', 'schema refuses'],
  ['a signal with no bound (what pruning leaves of a misspelt one)', { services, analysis: { thresholds: { resetRate: {} } } }, 'spec.analysis.thresholds.resetRate: sets no bound, so it would never fail; set max or maxAboveStable', 'only the proxy'],
  ['a rate as text', { services, analysis: { thresholds: { resetRate: { max: '1%' } } } }, 'spec.analysis.thresholds.resetRate.max: must be a rate from 0 to 1 (0.01 = 1 %), got "1%"', 'schema refuses'],
  ['a pause whose end is no time', { services, steps: [{ weight: 10, pause: { duration: '100000000000h' } }] }, 'spec.steps[0].pause.duration: "100000000000h" is longer than 720h; for a longer hold leave the duration out', 'only the proxy'],
  ['a pause of 1e9 hours (year +116106)', { services, steps: [{ weight: 10, pause: { duration: '1000000000h' } }] }, 'spec.steps[0].pause.duration: "1000000000h" is longer than 720h', 'only the proxy'],
  ['a pause that is not a duration', { services, steps: [{ weight: 10, pause: { duration: 'soon' } }] }, 'spec.steps[0].pause.duration: "soon" is not a duration like 30s, 2m or 1h', 'schema refuses'],
  ['an analysis interval of a year', { services, analysis: { interval: '8760h' } }, 'spec.analysis.interval: "8760h" is longer than 1h; judge at least once an hour', 'only the proxy'],
  ['an analysis interval under 1s', { services, analysis: { interval: '500ms' } }, 'spec.analysis.interval: "500ms" is not a duration of at least 1s', 'only the proxy'],
  ['failureLimit 0', { services, analysis: { failureLimit: 0 } }, 'spec.analysis.failureLimit: must be an integer >= 1, got 0', 'schema refuses'],
  ['steps: [] (no weight would ever be set)', { services, steps: [] }, 'spec.steps: is empty, so no step would set a weight; list at least one step, or leave spec.steps out', 'schema refuses'],
  ['a step weight over 100', { services, steps: [{ weight: 500 }] }, 'spec.steps[0].weight: must be an integer 0–100, got 500', 'schema refuses'],
  ['transition in lower case', { services, transition: 'adopted' }, 'spec.transition: "adopted" is not a transition; write Adopted (capitalised), or "" while the release runs', 'schema refuses'],
  ['an unknown transition', { services, transition: 'Promoted' }, 'spec.transition: "Promoted" is not a transition; write Adopted or Deprecated, or ""', 'schema refuses'],
  ['10000 canary replicas', { services, workloads: [{ name: 'web', replicas: 10000 }] }, 'spec.workloads[0].replicas: must be an integer 0–1000, got 10000', 'schema refuses'],
  ['a workload kind other than Deployment', { services, workloads: [{ name: 'web', kind: 'StatefulSet' }] }, 'spec.workloads[0].kind: "StatefulSet" is not supported; only Deployment', 'schema refuses'],
  ['a workload listed twice', { services, workloads: [{ name: 'web' }, { name: 'web' }] }, 'spec.workloads[1].name: Deployment web is listed twice', 'schema refuses'],
  ['no Service', { services: [] }, 'spec.services is empty', 'schema refuses'],
  ['a Service listed twice', { services: [...services, ...services] }, 'spec.services[1]: Service web is listed twice', 'schema refuses'],
  ['a port listed twice', { services: [{ service: 'web', ports: [{ port: 80 }, { port: 80, protocol: 'HTTP' }] }] }, 'spec.services[0].ports[1]: port 80/TCP is listed twice', 'only the proxy'],
  ['a bad canary label', { services: [{ service: 'web', canaryServiceOperations: { add: { version: 'v 2' } }, ports: [{ port: 80 }] }] }, 'spec.services[0].canaryServiceOperations.add: label value "v 2" of version is not valid', 'only the proxy'],
];

describe('releaseProblems: the one validation of a CanaryRelease', () => {
  it('passes a good spec, with every signal, a 1h pause, a promotion in range and 1000 canary pods; and the schema admits it', () => {
    assert.deepEqual(releaseProblems(good), []);
    assert.deepEqual(validate(object(good), schema), []);
  });

  for (const [name, spec, problem, schemaSays] of refused) {
    it(`refuses ${name}, naming the field${schemaSays === 'schema refuses' ? '; so does the CRD schema' : ' (a schema cannot say it)'}`, () => {
      const problems = releaseProblems(spec as CanaryReleaseSpec);
      assert.ok(problems.some((line) => line.startsWith(problem)), `${problem}\n---\n${problems.join('\n')}`);
      assert.ok(problems.every((line) => line.startsWith('spec.')), `every line names its field:\n${problems.join('\n')}`);
      assert.equal(validate(object(spec), schema).length > 0, schemaSays === 'schema refuses', JSON.stringify(validate(object(spec), schema)));
    });
  }

  it('knows exactly the signals of the thresholds type, for the analysis to share', () => {
    assert.deepEqual(SIGNAL_NAMES, ['connectErrorRate', 'resetRate', 'connectLatencyP99', 'udpReplyRate', 'mirrorMismatchRate', 'mirrorErrorRate']);
    assert.deepEqual(Object.keys(schema.properties!.spec!.properties!.analysis!.properties!.thresholds!.properties!), SIGNAL_NAMES, 'the CRD lists the same signals');
  });

  it('bounds replicas with one rule, for the canary workloads and the manager\'s proxy', () => {
    assert.equal(replicasProblem(1000, 'spec.proxy.replicas', 1), undefined);
    assert.equal(replicasProblem(1001, 'spec.proxy.replicas', 1), 'spec.proxy.replicas: must be an integer 1–1000, got 1001');
    assert.equal(replicasProblem(0, 'x', 1), 'x: must be an integer 1–1000, got 0');
  });

  it('reads durations', () => {
    assert.deepEqual(['30s', '2m', '1h', '500ms', '1m30s', '1.5s'].map(parseDuration), [30_000, 120_000, 3_600_000, 500, 90_000, 1_500]);
    assert.deepEqual(['', '2', 'm', '2 m', '-1s'].map(parseDuration), [undefined, undefined, undefined, undefined, undefined]);
  });
});

describe('podTemplateProblems: the patched template must still make pods of that Deployment', () => {
  const template = (containers: unknown, labels: Record<string, string> = { app: 'web', version: 'v2' }) =>
    ({ metadata: { labels }, spec: { containers } }) as V1PodTemplateSpec;
  const selector = { app: 'web' };

  it('passes containers with names and pullable images, and labels the selector matches', () => {
    assert.deepEqual(podTemplateProblems(template([{ name: 'web', image: 'web:v2' }, { name: 'side', image: 'ghcr.io/org/side@sha256:' + 'a'.repeat(64) }]), selector, 'p'), []);
  });

  for (const [name, built, problem] of [
    ['no containers left', template([]), 'spec.workloads[0].patch: leaves the pod template without containers'],
    ['containers deleted', template(undefined), 'spec.workloads[0].patch: leaves the pod template without containers'],
    ['a blank image (the patch removed it)', template([{ name: 'web', image: null }]), 'spec.workloads[0].patch.spec.containers[name=web].image: the container has no image'],
    ['an image of spaces', template([{ name: 'web', image: '  ' }]), 'spec.workloads[0].patch.spec.containers[name=web].image: the container has no image'],
    ['an image that is no reference', template([{ name: 'web', image: 'Web App:v2!' }]), 'spec.workloads[0].patch.spec.containers[name=web].image: "Web App:v2!" is not an image reference'],
    ['a container without a name', template([{ image: 'web:v2' }]), 'spec.workloads[0].patch.spec.containers[0]: a container has no name'],
    ['a label the selector needs dropped', template([{ name: 'web', image: 'web:v2' }], { version: 'v2' }), 'spec.workloads[0].patch.metadata.labels: drops app=web, which the Deployment\'s selector needs'],
  ] as const) {
    it(`refuses ${name}, naming the field`, () => {
      const problems = podTemplateProblems(built, selector, 'spec.workloads[0].patch');
      assert.ok(problems.some((line) => line.startsWith(problem)), `${problem}\n---\n${problems.join('\n')}`);
    });
  }

  it('tells image references from other text', () => {
    for (const image of ['nginx', 'nginx:1.27', 'library/nginx:latest', 'registry.example:5000/a/b_c-d.e:v1.2-rc', 'localhost/app', 'app@sha256:' + '0'.repeat(64)]) {
      assert.ok(isImageReference(image), image);
    }
    for (const image of ['', 'Nginx', 'nginx:', 'nginx:-x', 'a b', 'nginx:1.27 ', '-nginx', 'app@sha256:short']) assert.ok(!isImageReference(image), image);
  });
});
