import { formatStep } from '../../../src/api/steps.ts';
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { statusDecisions, stepDecision } from '../../../src/control/pass/decisions.ts';
import type {
  CanaryReleaseCondition,
  CanaryReleaseStatus,
  ConditionType,
  PortStatus,
} from '../../../src/api/status-types.ts';

const port = (weight: number, served = weight, override: number | null = null): PortStatus => ({
  service: 'web',
  port: 80,
  protocol: 'TCP',
  proxyPort: 8080,
  weight,
  override,
  served,
});

const condition = (type: ConditionType, status: boolean, reason = 'None', message = ''): CanaryReleaseCondition => ({
  type,
  status: status ? 'True' : 'False',
  reason,
  message,
  lastTransitionTime: '2025-01-01T00:00:00Z',
  observedGeneration: 1,
});

function status(
  ports: PortStatus[],
  extra: Partial<CanaryReleaseStatus> = {},
  conditions: CanaryReleaseCondition[] = [],
): CanaryReleaseStatus {
  return { phase: 'Running', observedGeneration: 1, transition: null, ports, weights: '', conditions, ...extra };
}

describe('decisions worth an Event', () => {
  it('a served weight that changes, once', () => {
    assert.deepEqual(statusDecisions(status([port(10)]), status([port(50)])), [
      { type: 'Normal', reason: 'WeightChanged', message: 'web:80/TCP: canary weight 10% → 50%' },
    ]);
    assert.deepEqual(statusDecisions(status([port(50)]), status([port(50)])), [], 'nothing changed, nothing said');
  });

  it('a weight held away from what it asks is a Warning, said when it starts', () => {
    assert.deepEqual(statusDecisions(status([port(20)]), status([port(20, 0)])), [
      {
        type: 'Warning',
        reason: 'WeightHeld',
        message: 'web:80/TCP: canary weight held at 0% (asks 20%): a side has no Ready pod',
      },
    ]);
    assert.deepEqual(
      statusDecisions(undefined, status([port(20, 0)])).map((decision) => decision.reason),
      ['WeightHeld'],
      'also on the first pass of a process',
    );
    assert.deepEqual(statusDecisions(undefined, status([port(20)])), [], 'a first pass serving as asked says nothing');
  });

  it('a new or changed Failure is a Warning with its reason; the same one again is not', () => {
    const failing = status([], {}, [condition('Failure', true, 'SelectorsMix', 'they mix')]);
    assert.deepEqual(statusDecisions(status([]), failing), [
      { type: 'Warning', reason: 'SelectorsMix', message: 'they mix' },
    ]);
    assert.deepEqual(statusDecisions(failing, failing), []);
  });

  it('a wait that starts is said; ordinary progress is not', () => {
    const waiting = status([], {}, [condition('Progressing', true, 'WaitingForReadyPods', 'no Ready canary')]);
    assert.deepEqual(
      statusDecisions(status([]), waiting).map((decision) => decision.reason),
      ['WaitingForReadyPods'],
    );
    assert.deepEqual(
      statusDecisions(status([]), status([], {}, [condition('Progressing', true, 'Retargeting', 'recording ports')])),
      [],
    );
  });

  it('the end of the release', () => {
    const done = status([], {
      phase: 'Adopted',
      transition: { type: 'Adopted', reason: 'Requested', message: 'spec.transition is Adopted' },
    });
    assert.deepEqual(statusDecisions(status([], { phase: 'Adopting' }), done), [
      { type: 'Normal', reason: 'Adopted', message: 'the release is over: spec.transition is Adopted' },
    ]);
  });

  it('steps: one that begins, a pause that starts (not its every interval), an analysis interval that failed', () => {
    const atStep = (currentStep: number, pause: string | null, extra: Partial<CanaryReleaseStatus> = {}) =>
      status([], {
        currentStep,
        step: formatStep(currentStep, 2),
        pause: pause === null ? null : { reason: pause, since: 'then' },
        ...extra,
      });
    const reasons = (before: CanaryReleaseStatus, after: CanaryReleaseStatus) =>
      statusDecisions(before, after).map((decision) => `${decision.reason}: ${decision.message}`);
    assert.deepEqual(reasons(atStep(0, 'step 1 holds until noon'), atStep(1, 'step 2 waits for a promotion')), [
      'StepAdvanced: step 2/2 (index 1) begins',
      'StepHeld: step 2 waits for a promotion',
    ]);
    assert.deepEqual(reasons(atStep(1, 'held'), atStep(1, 'held')), [], 'the same pause again says nothing');
    assert.deepEqual(reasons(atStep(1, null), atStep(2, null)), [
      'StepAdvanced: every step is done: step 2/2 done (index 2)',
    ]);
    const analysis = (at: string, failures: number) => ({
      at,
      intervalMs: 1000,
      replicas: 1,
      samples: 60,
      verdict: 'Failed' as const,
      signals: [],
      failures,
      message: 'resetRate: canary 0.3',
    });
    assert.deepEqual(
      reasons(atStep(0, null, { analysis: analysis('t1', 1) }), atStep(0, null, { analysis: analysis('t2', 2) })),
      ['AnalysisIntervalFailed: 2 in a row: resetRate: canary 0.3'],
    );
    assert.deepEqual(
      reasons(atStep(0, null, { analysis: analysis('t2', 2) }), atStep(0, null, { analysis: analysis('t2', 2) })),
      [],
      'the same interval once',
    );
  });

  it('writes that move traffic, not the bookkeeping ones', () => {
    const patch = { metadata: {} };
    assert.equal(stepDecision({ kind: 'patchService', reason: 'retarget', name: 'web', patch })?.reason, 'Retargeted');
    assert.equal(stepDecision({ kind: 'patchService', reason: 'repair', name: 'web', patch })?.reason, 'DriftRepaired');
    assert.equal(stepDecision({ kind: 'patchService', reason: 'restore', name: 'web', patch })?.reason, 'Restored');
    assert.equal(stepDecision({ kind: 'patchService', reason: 'saveOriginal', name: 'web', patch }), undefined);
    assert.equal(
      stepDecision({ kind: 'patchRelease', reason: 'addFinalizer', patch: { metadata: { finalizers: [] } } }),
      undefined,
    );
  });

  it('the takeover as it is: the values set, the targetPorts only when it moves them', () => {
    const retarget = { metadata: {}, spec: { selector: { app: 'canary-l4.web-v2', version: 'canary-l4.web-v2' } } };
    assert.equal(
      stepDecision({ kind: 'patchService', reason: 'retarget', name: 'web', patch: retarget })?.message,
      'Service web now selects the proxy pods: selector app=canary-l4.web-v2,version=canary-l4.web-v2',
    );
    const moved = {
      metadata: {},
      spec: { selector: { app: 'canary-l4.web-v2' }, ports: [{ port: 80, targetPort: 8080 }] },
    };
    assert.match(
      stepDecision({ kind: 'patchService', reason: 'repair', name: 'web', patch: moved })?.message ?? '',
      /selects the proxy pods again: selector app=canary-l4.web-v2; targetPorts 8080/,
    );
  });

  it('a targetPort the takeover must move, once (a Warning: a re-apply that omits it leaves it there)', () => {
    const takeover = (movedPorts: string[]) => ({
      takeover: { keys: ['app'], value: 'canary-l4.web-v2', namedPorts: [], movedPorts },
    });
    const moved = "api:80/TCP: targetPort 8000 → 8080 (8000 is web:80/TCP's on the proxy pods)";
    assert.deepEqual(statusDecisions(status([], takeover([])), status([], takeover([moved]))), [
      {
        type: 'Warning',
        reason: 'TargetPortMoved',
        message: `the takeover moves targetPorts to proxy ports (a re-apply that omits them leaves them there): ${moved}`,
      },
    ]);
    assert.deepEqual(statusDecisions(status([], takeover([moved])), status([], takeover([moved]))), [], 'said once');
  });
});
