/** The Deployment simulation's pure parts: the rollout arithmetic and the pod-template-hash. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  maxUnavailable,
  newReplicaSetReplicas,
  oldReplicaSetScaleDowns,
  resolveFenceposts,
  scaledValue,
} from '../support/fake-apiserver/simulation/rollout.ts';
import { podTemplateHash, sameTemplateIgnoringHash } from '../support/fake-apiserver/simulation/template-hash.ts';

const rs = (name: string, replicas: number, available: number) => ({ name, replicas, available });

describe('rollout arithmetic', () => {
  it('scales percentages of the replicas: surge rounds up, unavailability down, never both 0', () => {
    assert.equal(scaledValue('25%', 10, true), 3);
    assert.equal(scaledValue('25%', 10, false), 2);
    assert.equal(scaledValue(4, 10, true), 4);
    assert.deepEqual(resolveFenceposts({ maxSurge: '50%', maxUnavailable: '50%' }, 3), {
      maxSurge: 2,
      maxUnavailable: 1,
    });
    assert.deepEqual(resolveFenceposts(undefined, 4), { maxSurge: 1, maxUnavailable: 1 });
    assert.deepEqual(resolveFenceposts({ maxSurge: 0, maxUnavailable: '10%' }, 3), { maxSurge: 0, maxUnavailable: 1 });
    assert.equal(maxUnavailable('RollingUpdate', { maxSurge: 1, maxUnavailable: 5 }, 3), 3, 'capped at the replicas');
    assert.equal(maxUnavailable('Recreate', undefined, 3), 0);
  });

  it('grows the new ReplicaSet up to replicas + maxSurge pods in all', () => {
    const params = { maxSurge: 1, maxUnavailable: 0 };
    assert.equal(newReplicaSetReplicas(4, params, rs('new', 0, 0), [rs('old', 4, 4), rs('new', 0, 0)]), 1);
    assert.equal(
      newReplicaSetReplicas(4, params, rs('new', 1, 0), [rs('old', 4, 4), rs('new', 1, 0)]),
      1,
      'at the surge limit',
    );
    assert.equal(newReplicaSetReplicas(4, params, rs('new', 1, 1), [rs('old', 3, 3), rs('new', 1, 1)]), 2);
    assert.equal(
      newReplicaSetReplicas(4, { maxSurge: 10 }, rs('new', 0, 0), [rs('old', 4, 4), rs('new', 0, 0)]),
      4,
      'never past replicas',
    );
  });

  it('shrinks old ReplicaSets, oldest first and unavailable pods first, keeping replicas - maxUnavailable available', () => {
    // 4 replicas, maxUnavailable 1: 3 must stay available; the new pod is not available yet.
    assert.deepEqual(oldReplicaSetScaleDowns(4, 1, rs('new', 1, 0), [rs('old', 4, 4)]), new Map([['old', 3]]));
    assert.deepEqual(oldReplicaSetScaleDowns(4, 1, rs('new', 2, 1), [rs('old', 3, 3)]), new Map([['old', 2]]));
    assert.deepEqual(oldReplicaSetScaleDowns(4, 0, rs('new', 1, 0), [rs('old', 4, 4)]), new Map(), 'nothing may go');
    // The unavailable pods of the oldest go first, then available ones within the budget.
    assert.deepEqual(
      oldReplicaSetScaleDowns(4, 1, rs('new', 2, 2), [rs('older', 2, 0), rs('old', 2, 2)]),
      new Map([
        ['older', 0],
        ['old', 1],
      ]),
    );
    assert.deepEqual(
      oldReplicaSetScaleDowns(4, 1, rs('new', 4, 4), [rs('old', 0, 0)]),
      new Map(),
      'nothing left to shrink',
    );
  });
});

describe('pod-template-hash', () => {
  const template = {
    metadata: { labels: { app: 'web' } },
    spec: { containers: [{ name: 'web', image: 'example/web:1.0' }] },
  };

  it('is at most 10 characters of the safe alphabet, the same for the same template in any key order', () => {
    const hash = podTemplateHash(template);
    assert.match(hash, /^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/);
    assert.equal(
      podTemplateHash({
        spec: { containers: [{ image: 'example/web:1.0', name: 'web' }] },
        metadata: { labels: { app: 'web' }, creationTimestamp: null },
      }),
      hash,
    );
    assert.notEqual(
      podTemplateHash({ ...template, spec: { containers: [{ name: 'web', image: 'example/web:2.0' }] } }),
      hash,
    );
    assert.notEqual(podTemplateHash(template, 1), hash, 'a collision count changes it');
    assert.notEqual(podTemplateHash(template, 1), podTemplateHash(template, 2));
  });

  it("compares a ReplicaSet's template with a Deployment's ignoring the hash label", () => {
    const labelled = { ...template, metadata: { labels: { app: 'web', 'pod-template-hash': 'x' } } };
    assert.ok(sameTemplateIgnoringHash(labelled, template));
    assert.ok(!sameTemplateIgnoringHash(labelled, { ...template, metadata: { labels: { app: 'other' } } }));
  });
});
