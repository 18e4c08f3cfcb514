import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { labelProblems } from '../../../src/api/labels.ts';
import {
  isTakeoverSelector,
  ownerSelectorBehind,
  proxyPodsReady,
  takeoverSelector,
  takeoverValue,
} from '../../../src/control/service/takeover-selector.ts';
import { pod } from '../reconcile/world.ts';

describe('the takeover selector', () => {
  it("keeps the owner's keys, each with a value only the release's proxy pods carry", () => {
    assert.deepEqual(takeoverSelector({ version: 'v1', app: 'web' }, 'web-v2'), {
      app: 'canary-l4.web-v2',
      version: 'canary-l4.web-v2',
    });
    assert.equal(isTakeoverSelector({ app: 'canary-l4.web-v2', version: 'canary-l4.web-v2' }, 'web-v2'), true);
    assert.equal(
      isTakeoverSelector({ app: 'canary-l4.web-v2', version: 'v1' }, 'web-v2'),
      false,
      'a key the owner set back',
    );
    assert.equal(isTakeoverSelector({ app: 'canary-l4.web-v3' }, 'web-v2'), false, "another release's");
    assert.equal(isTakeoverSelector({}, 'web-v2'), false, 'an empty selector selects nothing');
  });

  it('a release name too long for a label value: cut, ending in a hash of the whole, valid and distinct', () => {
    const long = `${'a'.repeat(60)}.b-`.concat('c'.repeat(40));
    const other = `${'a'.repeat(60)}.b-`.concat('d'.repeat(40));
    for (const name of [long, other, 'x'.repeat(53), 'x'.repeat(54), `${'y'.repeat(51)}-z`]) {
      assert.deepEqual(labelProblems({ app: takeoverValue(name) }), [], name);
      assert.ok(takeoverValue(name).length <= 63);
    }
    assert.equal(takeoverValue('x'.repeat(53)), `canary-l4.${'x'.repeat(53)}`, '63 characters fit whole');
    assert.notEqual(takeoverValue(long), takeoverValue(other));
    assert.equal(takeoverValue(long), takeoverValue(long), 'the same on every replica');
  });

  it("the owner's selector behind a live one: their values, the saved one where the takeover value is left, keys they dropped dropped", () => {
    const saved = { app: 'web', version: 'v1' };
    const value = takeoverValue('rel');
    assert.deepEqual(ownerSelectorBehind({ app: 'web', version: 'v3' }, saved, 'rel'), { app: 'web', version: 'v3' });
    assert.deepEqual(ownerSelectorBehind({ app: value, version: 'v3' }, saved, 'rel'), { app: 'web', version: 'v3' });
    assert.deepEqual(ownerSelectorBehind({ app: 'web', tier: 'front' }, saved, 'rel'), { app: 'web', tier: 'front' });
    assert.deepEqual(
      ownerSelectorBehind({ app: value, tier: value }, saved, 'rel'),
      { app: 'web' },
      'a key never saved has no owner value',
    );
  });

  it('a proxy pod can serve the takeover once one carrying its labels is Ready and none lacks them', () => {
    const proxy = { 'canary-l4.io/release': 'rel' };
    const selector = { app: takeoverValue('rel') };
    assert.deepEqual(proxyPodsReady(selector, proxy, [pod('p1', { ...proxy, ...selector })]), { ready: true });
    assert.deepEqual(proxyPodsReady(selector, proxy, [pod('p1', { ...proxy, ...selector }, false)]), {
      ready: false,
      why: 'no proxy pod carrying its labels is Ready yet',
    });
    assert.deepEqual(proxyPodsReady(selector, proxy, [pod('p1', { ...proxy, ...selector }), pod('old', proxy)]), {
      ready: false,
      why: 'proxy pods old do not carry its labels yet',
    });
    assert.deepEqual(
      proxyPodsReady(selector, proxy, [pod('app', selector)]),
      { ready: false, why: 'no proxy pod carrying its labels is Ready yet' },
      "only the proxy's own pods count",
    );
    const named = [{ name: 'http', containerPort: 8081, protocol: 'TCP' as const }];
    const declaring = {
      ...pod('p1', { ...proxy, ...selector }),
      spec: { containers: [{ name: 'proxy', ports: [{ name: 'http', containerPort: 8081 }] }] },
    };
    assert.deepEqual(proxyPodsReady(selector, proxy, [pod('p1', { ...proxy, ...selector })], named), {
      ready: false,
      why: 'proxy pods p1 do not carry its labels and named ports yet',
    });
    assert.deepEqual(proxyPodsReady(selector, proxy, [declaring], named), { ready: true });
  });
});
