import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { statusDecisions, stepDecision } from '../../src/control/decisions.ts';
import type { CanaryReleaseCondition, CanaryReleaseStatus, ConditionType, PortStatus } from '../../src/control/types.ts';

const port = (weight: number, served = weight, override: number | null = null): PortStatus =>
  ({ service: 'web', port: 80, protocol: 'TCP', proxyPort: 8080, weight, override, served });

const condition = (type: ConditionType, status: boolean, reason = 'None', message = ''): CanaryReleaseCondition =>
  ({ type, status: status ? 'True' : 'False', reason, message, lastTransitionTime: '2025-01-01T00:00:00Z', observedGeneration: 1 });

function status(ports: PortStatus[], extra: Partial<CanaryReleaseStatus> = {}, conditions: CanaryReleaseCondition[] = []): CanaryReleaseStatus {
  return { phase: 'Running', observedGeneration: 1, transition: null, ports, weights: '', conditions, ...extra };
}

describe('decisions worth an Event', () => {
  it('a served weight that changes, once', () => {
    assert.deepEqual(statusDecisions(status([port(10)]), status([port(50)])),
      [{ type: 'Normal', reason: 'WeightChanged', message: 'web:80/TCP: canary weight 10% → 50%' }]);
    assert.deepEqual(statusDecisions(status([port(50)]), status([port(50)])), [], 'nothing changed, nothing said');
  });

  it('a weight held away from what it asks is a Warning, said when it starts', () => {
    assert.deepEqual(statusDecisions(status([port(20)]), status([port(20, 0)])),
      [{ type: 'Warning', reason: 'WeightHeld', message: 'web:80/TCP: canary weight held at 0% (asks 20%): a side has no Ready pod' }]);
    assert.deepEqual(statusDecisions(undefined, status([port(20, 0)])).map((decision) => decision.reason), ['WeightHeld'], 'also on the first pass of a process');
    assert.deepEqual(statusDecisions(undefined, status([port(20)])), [], 'a first pass serving as asked says nothing');
  });

  it('a new or changed Failure is a Warning with its reason; the same one again is not', () => {
    const failing = status([], {}, [condition('Failure', true, 'SelectorsMix', 'they mix')]);
    assert.deepEqual(statusDecisions(status([]), failing), [{ type: 'Warning', reason: 'SelectorsMix', message: 'they mix' }]);
    assert.deepEqual(statusDecisions(failing, failing), []);
  });

  it('a wait that starts is said; ordinary progress is not', () => {
    const waiting = status([], {}, [condition('Progressing', true, 'WaitingForReadyPods', 'no Ready canary')]);
    assert.deepEqual(statusDecisions(status([]), waiting).map((decision) => decision.reason), ['WaitingForReadyPods']);
    assert.deepEqual(statusDecisions(status([]), status([], {}, [condition('Progressing', true, 'Retargeting', 'recording ports')])), []);
  });

  it('the end of the release', () => {
    const done = status([], { phase: 'Adopted', transition: { type: 'Adopted', reason: 'Requested', message: 'spec.transition is Adopted' } });
    assert.deepEqual(statusDecisions(status([], { phase: 'Adopting' }), done),
      [{ type: 'Normal', reason: 'Adopted', message: 'the release is over: spec.transition is Adopted' }]);
  });

  it('writes that move traffic, not the bookkeeping ones', () => {
    const patch = { metadata: {} };
    assert.equal(stepDecision({ kind: 'patchService', reason: 'retarget', name: 'web', patch })?.reason, 'Retargeted');
    assert.equal(stepDecision({ kind: 'patchService', reason: 'repair', name: 'web', patch })?.reason, 'DriftRepaired');
    assert.equal(stepDecision({ kind: 'patchService', reason: 'restore', name: 'web', patch })?.reason, 'Restored');
    assert.equal(stepDecision({ kind: 'patchService', reason: 'saveOriginal', name: 'web', patch }), undefined);
    assert.equal(stepDecision({ kind: 'patchRelease', reason: 'addFinalizer', patch: { metadata: { finalizers: [] } } }), undefined);
  });
});
