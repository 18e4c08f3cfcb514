/** kubectl against the fake: apply a CRD and objects, get, patch --type=merge, delete. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { type FakeApiServer, startFakeApiServer } from '../support/fake-apiserver/index.ts';
import { canaryCrd, clients, CR } from './helpers.ts';

const run = promisify(execFile);

async function findKubectl(): Promise<string | undefined> {
  try {
    await run('kubectl', ['version', '--client'], { timeout: 15_000 });
    return 'kubectl';
  } catch {
    return undefined;
  }
}

const kubectl = await findKubectl();

describe('kubectl', { skip: kubectl ? false : 'kubectl is not on PATH' }, () => {
  let api: FakeApiServer;
  let home: string;
  const k = async (...args: string[]) => {
    const { stdout } = await run('kubectl', ['--kubeconfig', api.kubeconfigPath, '--cache-dir', join(home, 'cache'), ...args], {
      env: { ...process.env, HOME: home, KUBECONFIG: api.kubeconfigPath },
      timeout: 30_000,
    });
    return stdout;
  };

  before(async () => {
    api = await startFakeApiServer();
    home = await mkdtemp(join(tmpdir(), 'kubectl-home-'));
    await writeFile(join(home, 'crd.yaml'), stringify(canaryCrd));
    await writeFile(join(home, 'cr.yaml'), stringify({ apiVersion: 'canary-l4.io/v1alpha1', kind: 'CanaryRelease', metadata: { name: 'c1' }, spec: { service: 'web', weight: 10 } }));
    await writeFile(join(home, 'svc.yaml'), stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] } }));
  });
  after(async () => {
    await api.stop();
    await rm(home, { recursive: true, force: true });
  });

  it('apply a CRD makes its kind served (short names too)', async () => {
    assert.match(await k('apply', '-f', join(home, 'crd.yaml')), /customresourcedefinition.apiextensions.k8s.io\/canaryreleases.canary-l4.io created/);
    assert.match(await k('apply', '-f', join(home, 'cr.yaml')), /canaryrelease.canary-l4.io\/c1 created/);
    assert.match(await k('get', 'canaryreleases'), /^NAME\s+AGE\nc1\s/m);
    assert.equal(await k('get', 'cr', 'c1', '-o', 'jsonpath={.spec.weight}'), '10');
  });

  it('apply again (client-side apply → merge patch) and patch --type=merge', async () => {
    await writeFile(join(home, 'cr.yaml'), stringify({ apiVersion: 'canary-l4.io/v1alpha1', kind: 'CanaryRelease', metadata: { name: 'c1' }, spec: { service: 'web', weight: 20 } }));
    assert.match(await k('apply', '-f', join(home, 'cr.yaml')), /configured/);
    assert.match(await k('patch', 'canaryrelease', 'c1', '--type=merge', '-p', '{"spec":{"weight":30}}'), /patched/);
    const cr = await clients(api.kubeConfig).custom.getNamespacedCustomObject({ ...CR, namespace: 'default', name: 'c1' });
    assert.equal(cr.spec.weight, 30);
    assert.equal(cr.metadata.generation, 3);
  });

  it('apply a Service, then change its port (strategic merge with $setElementOrder)', async () => {
    assert.match(await k('apply', '-f', join(home, 'svc.yaml')), /service\/web created/);
    await writeFile(join(home, 'svc.yaml'), stringify({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'web' }, spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 8080 }] } }));
    assert.match(await k('apply', '-f', join(home, 'svc.yaml')), /service\/web configured/);
    assert.equal(await k('get', 'svc', 'web', '-o', 'jsonpath={.spec.ports[*].port}'), '8080');
    assert.ok(api.requests.some((r) => r.verb === 'patch' && r.resource === 'services'));
  });

  it('get -o json lists with the right kind; delete removes', async () => {
    const list = JSON.parse(await k('get', 'services', '-o', 'json'));
    assert.ok(list.items.some((i: any) => i.metadata.name === 'web'));
    assert.match(await k('delete', 'cr', 'c1'), /deleted/);
    assert.match(await k('delete', '-f', join(home, 'svc.yaml')), /deleted/);
    assert.match(await k('get', 'canaryreleases'), /^$/);
  });
});
