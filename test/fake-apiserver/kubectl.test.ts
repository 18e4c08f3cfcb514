/** kubectl against the fake: apply a CRD and objects, get, patch --type=merge, delete. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type FakeApiServer, startFakeApiServer } from '../support/fake-apiserver/index.ts';
import { canaryCrd, clients, CR, type Kubectl, kubectlFor } from '../support/cluster/api-fixtures.ts';
import { requireTool } from '../support/process/required-tool.ts';

describe('kubectl', await requireTool('kubectl'), () => {
  let api: FakeApiServer;
  let k: Kubectl;
  let crd: string, cr: string, service: string;

  before(async () => {
    api = await startFakeApiServer();
    k = await kubectlFor(api);
    crd = await k.manifest('crd.yaml', canaryCrd);
    cr = await k.manifest('cr.yaml', {
      apiVersion: 'canary-l4.io/v1alpha1',
      kind: 'CanaryRelease',
      metadata: { name: 'c1' },
      spec: { service: 'web', weight: 10 },
    });
    service = await k.manifest('svc.yaml', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web' },
      spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
    });
  });
  after(async () => {
    await api.stop();
    await k.cleanup();
  });

  it('apply a CRD makes its kind served (short names too)', async () => {
    assert.match(
      await k('apply', '-f', crd),
      /customresourcedefinition.apiextensions.k8s.io\/canaryreleases.canary-l4.io created/,
    );
    assert.match(await k('apply', '-f', cr), /canaryrelease.canary-l4.io\/c1 created/);
    assert.match(await k('get', 'canaryreleases'), /^NAME\s+AGE\nc1\s/m);
    assert.equal(await k('get', 'cr', 'c1', '-o', 'jsonpath={.spec.weight}'), '10');
  });

  it('apply again (client-side apply → merge patch) and patch --type=merge', async () => {
    await k.manifest('cr.yaml', {
      apiVersion: 'canary-l4.io/v1alpha1',
      kind: 'CanaryRelease',
      metadata: { name: 'c1' },
      spec: { service: 'web', weight: 20 },
    });
    assert.match(await k('apply', '-f', cr), /configured/);
    assert.match(await k('patch', 'canaryrelease', 'c1', '--type=merge', '-p', '{"spec":{"weight":30}}'), /patched/);
    const got = await clients(api.kubeConfig).custom.getNamespacedCustomObject({
      ...CR,
      namespace: 'default',
      name: 'c1',
    });
    assert.equal(got.spec.weight, 30);
    assert.equal(got.metadata.generation, 3);
  });

  it('apply a Service, then change its port (strategic merge with $setElementOrder)', async () => {
    assert.match(await k('apply', '-f', service), /service\/web created/);
    await k.manifest('svc.yaml', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web' },
      spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 8080 }] },
    });
    assert.match(await k('apply', '-f', service), /service\/web configured/);
    assert.equal(await k('get', 'svc', 'web', '-o', 'jsonpath={.spec.ports[*].port}'), '8080');
    assert.ok(api.requests.some((r) => r.verb === 'patch' && r.resource === 'services'));
  });

  it('get -o json lists with the right kind; delete removes', async () => {
    const list = JSON.parse(await k('get', 'services', '-o', 'json'));
    assert.ok(list.items.some((i: any) => i.metadata.name === 'web'));
    assert.match(await k('delete', 'cr', 'c1'), /deleted/);
    assert.match(await k('delete', '-f', service), /deleted/);
    assert.match(await k('get', 'canaryreleases'), /^$/);
  });
});
