// The conformance suite and the CRDs the tests install are one Gateway API release: the version
// test/conformance/go/go.mod pins is the one test/support/gateway-api/crds.ts reads the CRDs of.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { GATEWAY_API_VERSION } from '../support/gateway-api/crds.ts';

test('go.mod pins the conformance suite and its module at the version whose CRDs the tests install', () => {
  const goMod = readFileSync(new URL('./go/go.mod', import.meta.url), 'utf8');
  for (const module of ['sigs.k8s.io/gateway-api', 'sigs.k8s.io/gateway-api/conformance']) {
    const pinned = new RegExp(`^\\s*${module.replaceAll('.', '\\.')} (\\S+)`, 'm').exec(goMod)?.[1];
    assert.equal(pinned, GATEWAY_API_VERSION, `${module} in test/conformance/go/go.mod`);
  }
});
