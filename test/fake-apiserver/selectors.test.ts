import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  matchFields,
  matchLabels,
  parseFieldSelector,
  parseLabelSelector,
  SelectorError,
} from '../support/fake-apiserver/resources/selectors.ts';

const labels = { app: 'web', track: 'canary', tier: 'fe' };

describe('label selectors', () => {
  const cases: Array<[string, boolean]> = [
    ['', true],
    ['app=web', true],
    ['app==web', true],
    ['app=api', false],
    ['app!=api', true],
    ['app!=web', false],
    ['missing!=x', true],
    ['app in (web,api)', true],
    ['app in (api)', false],
    ['app notin (api, db)', true],
    ['app notin (web)', false],
    ['missing notin (x)', true],
    ['track', true],
    ['missing', false],
    ['!missing', true],
    ['!track', false],
    ['app=web,track=canary', true],
    ['app=web,track=stable', false],
    ['app in (web),!missing,tier', true],
    ['example.com/role=x', false],
  ];
  for (const [sel, want] of cases) {
    it(`${JSON.stringify(sel)} → ${want}`, () => assert.equal(matchLabels(parseLabelSelector(sel), labels), want));
  }
  for (const bad of ['app=web,', 'a b c', '=x', 'app in web', 'app=-bad-']) {
    it(`rejects ${JSON.stringify(bad)}`, () => assert.throws(() => parseLabelSelector(bad), SelectorError));
  }
  it('matches nothing-labelled objects only on negative terms', () => {
    assert.equal(matchLabels(parseLabelSelector('!a,b!=c'), undefined), true);
    assert.equal(matchLabels(parseLabelSelector('a'), undefined), false);
  });
});

describe('field selectors', () => {
  const obj = { metadata: { name: 'web', namespace: 'prod' }, status: { phase: 'Running' } };
  const supported = ['metadata.name', 'metadata.namespace', 'status.phase'];
  const cases: Array<[string, boolean]> = [
    ['', true],
    ['metadata.name=web', true],
    ['metadata.name==web', true],
    ['metadata.name=api', false],
    ['metadata.namespace!=prod', false],
    ['metadata.namespace!=dev', true],
    ['metadata.name=web,metadata.namespace=prod', true],
    ['status.phase=Running', true],
  ];
  for (const [sel, want] of cases) {
    it(`${JSON.stringify(sel)} → ${want}`, () =>
      assert.equal(matchFields(parseFieldSelector(sel, supported), obj), want));
  }
  it('rejects unsupported fields with the apiserver message', () => {
    assert.throws(() => parseFieldSelector('spec.foo=bar', supported), /field label not supported: spec.foo/);
  });
});
