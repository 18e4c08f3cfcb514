import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { findOverlap, livePods, selectorMatches, selectorsEqual } from '../../../src/control/service/selectors.ts';
import { applyOperations, formatSelector } from '../../../src/api/labels.ts';
import { pod } from '../reconcile/world.ts';

describe('selectors', () => {
  it('applies remove, then add, and applying it again to its own result changes nothing', () => {
    const original = { app: 'web', version: 'v1', tier: 'front' };
    const operations = { add: { version: 'v2', track: 'canary' }, remove: ['tier', 'track'] };
    const once = applyOperations(original, operations);
    assert.deepEqual(once, { app: 'web', version: 'v2', track: 'canary' });
    assert.deepEqual(applyOperations(once, operations), once, 'idempotent: f(f(x)) = f(x)');
    assert.deepEqual(original, { app: 'web', version: 'v1', tier: 'front' }, 'input untouched');
    assert.deepEqual(applyOperations(original, undefined), original);
  });

  it('compares selectors as maps', () => {
    assert.ok(selectorsEqual({ a: '1', b: '2' }, { b: '2', a: '1' }));
    assert.ok(!selectorsEqual({ a: '1' }, { a: '1', b: '2' }));
    assert.ok(!selectorsEqual({ a: '1' }, { a: '2' }));
    assert.ok(selectorsEqual(undefined, {}));
  });

  it('matches pods as a Service does: every key, and an empty selector matches nothing', () => {
    assert.ok(selectorMatches({ app: 'web' }, { app: 'web', version: 'v1' }));
    assert.ok(!selectorMatches({ app: 'web', version: 'v2' }, { app: 'web', version: 'v1' }));
    assert.ok(!selectorMatches({}, { app: 'web' }));
    assert.ok(!selectorMatches({ app: 'web' }, undefined));
  });

  it('finds selectors that would mix the versions, naming the pods', () => {
    const pods = [pod('v1', { app: 'web', version: 'v1' }), pod('v2', { app: 'web', version: 'v2' })];
    assert.equal(findOverlap({ app: 'web', version: 'v1' }, { app: 'web', version: 'v2' }, pods), undefined);
    assert.deepEqual(findOverlap({ app: 'web' }, { app: 'web', version: 'v2' }, pods)?.pods, ['v2']);
    const same = findOverlap({ app: 'web' }, { app: 'web' }, []);
    assert.equal(same?.identical, true);
    assert.deepEqual(same?.pods, []);
  });

  it('ignores finished and terminating pods', () => {
    const done = { ...pod('done', { app: 'web' }), status: { phase: 'Succeeded' } };
    const leaving = {
      ...pod('leaving', { app: 'web' }),
      metadata: { name: 'leaving', labels: { app: 'web' }, deletionTimestamp: new Date() },
    };
    assert.deepEqual(
      livePods([done, leaving, pod('up', { app: 'web' })]).map((item) => item.metadata?.name),
      ['up'],
    );
  });

  it('formats selectors with sorted keys', () => {
    assert.equal(formatSelector({ version: 'v2', app: 'web' }), 'app=web,version=v2');
    assert.equal(formatSelector({}), '<empty>');
  });
});
