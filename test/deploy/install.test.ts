// The install of docs/operations.md, as a user types it, against the fake apiserver with kubectl's default client
// validation: `kubectl apply -k deploy/` (again: unchanged), a CanaryRelease, `kubectl get crel`;
// and the standalone per-release proxy.
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { fakeWithKubectl } from '../support/cluster/api-fixtures.ts';
import { allObjects, deployDir } from './manifests.ts';
import { requireTool } from '../support/process/required-tool.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';

const addresses = loopbackRange(import.meta.url);

const path = (file: string) => fileURLToPath(new URL(file, deployDir));

describe('installing deploy/ with kubectl', { ...(await requireTool('kubectl')), timeout: 60_000 }, () => {
  const fake = fakeWithKubectl({ serviceCidr: addresses.cidr });
  const kubectl = (...args: string[]) => fake.kubectl(...args);

  it('kubectl apply -k deploy/ creates the CRD and the manager, validated; applied again, nothing changes', async () => {
    const created = await kubectl('apply', '-k', path('.'));
    const installed = allObjects().filter((object) => object.kind !== 'CanaryRelease');
    assert.equal(
      created
        .trim()
        .split('\n')
        .filter((line) => line.endsWith(' created')).length,
      installed.length,
      created,
    );
    assert.ok(
      fake.api.requests.some((request) => request.nonResourceURL?.startsWith('/openapi/v3') && request.code === 200),
      'kubectl validated against /openapi/v3',
    );
    const before = fake.api.resourceVersion();
    const again = await kubectl('apply', '-k', path('.'));
    // kubectl always sends a PodDisruptionBudget's selector (patchStrategy "replace"), as against
    // any cluster; the server changes nothing.
    assert.deepEqual(
      again
        .trim()
        .split('\n')
        .filter((line) => !line.endsWith(' unchanged')),
      ['poddisruptionbudget.policy/canary-l4-manager configured'],
      again,
    );
    assert.equal(fake.api.resourceVersion(), before, 'no object changed');
    const system = await kubectl('get', 'deploy,pdb,svc,sa', '-n', 'canary-l4-system', '-o', 'name');
    for (const name of [
      'deployment.apps/canary-l4-manager',
      'poddisruptionbudget.policy/canary-l4-manager',
      'service/canary-l4-manager-metrics',
      'serviceaccount/canary-l4-manager',
    ]) {
      assert.match(system, new RegExp(`^${name.replace(/\./g, '\\.')}$`, 'm'));
    }
  });

  it('then a CanaryRelease, listed with its columns by kubectl get crel', async () => {
    assert.match(
      await kubectl('apply', '-f', path('canaryrelease-example.yaml')),
      /^canaryrelease\.canary-l4\.io\/web-v2 created$/m,
    );
    const [header, row] = (await kubectl('get', 'crel')).trim().split('\n');
    assert.deepEqual(header?.split(/\s+/), ['NAME', 'PHASE', 'WEIGHTS', 'STEP', 'PROXY', 'READY', 'AGE']);
    assert.match(row ?? '', /^web-v2\s+\d+s$/, 'nothing to show before the manager and the proxy have written status');
  });

  it('the standalone proxy of one release: the CRD and the proxy ClusterRole, then deploy/standalone', async () => {
    await kubectl('apply', '-f', path('crd.yaml'), '-f', path('proxy-rbac.yaml'));
    const applied = await kubectl('apply', '-k', path('standalone/'));
    for (const name of [
      'serviceaccount/canary-l4',
      'rolebinding.rbac.authorization.k8s.io/canary-l4',
      'deployment.apps/canary-l4-web-v2',
      'poddisruptionbudget.policy/canary-l4-web-v2',
      'service/canary-l4-web-v2-metrics',
    ]) {
      assert.match(applied, new RegExp(`^${name.replace(/\./g, '\\.')} created$`, 'm'));
    }
  });
});
