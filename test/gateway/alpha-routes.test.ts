// A cluster whose Gateway API predates v1.6 serves TCPRoute and UDPRoute at v1alpha2 only (the
// experimental channel's one version then): canary-l4 gateway reads and writes them there, says so,
// and splits as it does at v1. The CRDs are v1.6.3's experimental ones with v1 not served, the shape
// of such a cluster; against the fake API server.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { parse } from 'yaml';
import type { L4Route } from '../../src/api/gateway/types.ts';
import { type Kubectl, kubectlFor } from '../support/cluster/api-fixtures.ts';
import { type FakeApiServer, startFakeApiServer } from '../support/fake-apiserver/index.ts';
import { gatewayApiCrdFiles } from '../support/gateway-api/crds.ts';
import { countBy, exchange, runConcurrently, startNamedBackend, type TcpBackend } from '../support/net/backends.ts';
import { freePortBlock } from '../support/net/free-ports.ts';
import { type ServeChild, startGateway } from '../support/process/serve-child.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

interface CrdVersion {
  name: string;
  served: boolean;
  storage: boolean;
}

describe('TCPRoutes served at v1alpha2 only (Gateway API before v1.6)', { timeout: 60_000 }, () => {
  let api: FakeApiServer;
  let kubectl: Kubectl;
  let gateway: ServeChild;
  const backends: TcpBackend[] = [];
  let port: number;

  before(async () => {
    api = await startFakeApiServer({ serviceCidr: addresses.cidr });
    kubectl = await kubectlFor(api);
    const standard = await gatewayApiCrdFiles('standard');
    for (const file of standard.filter((f) => /_(gatewayclasses|gateways|referencegrants)\.yaml$/.test(f)))
      await kubectl('apply', '--server-side', '-f', file);
    for (const file of (await gatewayApiCrdFiles('experimental')).filter((f) => /_(tcp|udp)routes\.yaml$/.test(f))) {
      const crd = parse(await readFile(file, 'utf8')) as { spec: { versions: CrdVersion[] } };
      for (const version of crd.spec.versions) {
        version.served = version.name === 'v1alpha2';
        version.storage = version.name === 'v1alpha2';
      }
      await kubectl('apply', '--server-side', '-f', await kubectl.manifest(file.split('/').pop()!, crd));
    }
    for (const name of ['old', 'new']) {
      await kubectl(
        'apply',
        '-f',
        await kubectl.manifest(`${name}.yaml`, {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name, namespace: 'default' },
          spec: { selector: { app: name }, ports: [{ protocol: 'TCP', port: 3000 }] },
        }),
      );
      const ip = (await kubectl('get', 'service', name, '-o', 'jsonpath={.spec.clusterIP}')).trim();
      backends.push(await startNamedBackend(name, ip, 3000));
    }
    port = await freePortBlock(1);
    await kubectl(
      'apply',
      '-f',
      await kubectl.manifest(
        'gateway.yaml',
        {
          apiVersion: 'gateway.networking.k8s.io/v1',
          kind: 'GatewayClass',
          metadata: { name: 'canary-l4' },
          spec: { controllerName: 'canary-l4.io/gateway-controller' },
        },
        {
          apiVersion: 'gateway.networking.k8s.io/v1',
          kind: 'Gateway',
          metadata: { name: 'l4', namespace: 'default' },
          spec: { gatewayClassName: 'canary-l4', listeners: [{ name: 'tcp', protocol: 'TCP', port }] },
        },
        {
          apiVersion: 'gateway.networking.k8s.io/v1alpha2',
          kind: 'TCPRoute',
          metadata: { name: 'r', namespace: 'default' },
          spec: {
            parentRefs: [{ name: 'l4' }],
            rules: [
              {
                backendRefs: [
                  { name: 'old', port: 3000, weight: 3 },
                  { name: 'new', port: 3000, weight: 1 },
                ],
              },
            ],
          },
        },
      ),
    );
    gateway = await startGateway('default', 'l4', api.kubeconfigPath);
  });

  after(async () => {
    await gateway?.stop();
    await Promise.all(backends.map((b) => b.close()));
    await kubectl?.cleanup();
    await api?.stop();
  });

  it('splits by the v1alpha2 route, writes its status there, and says why it reads v1alpha2', async () => {
    const answers = await runConcurrently(40, 1, async () => (await exchange(port, '')).data.toString());
    assert.deepEqual(countBy(answers), { old: 30, new: 10 });
    const custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    const read = async () =>
      (await custom.getNamespacedCustomObject({
        group: 'gateway.networking.k8s.io',
        version: 'v1alpha2',
        namespace: 'default',
        plural: 'tcproutes',
        name: 'r',
      })) as L4Route;
    await waitFor(async () => ((await read()).status?.parents ?? []).length === 1, 'the route status', 10_000);
    assert.deepEqual(
      (await read()).status?.parents?.[0]?.conditions.map((c) => `${c.type}=${c.status}`),
      ['Accepted=True', 'ResolvedRefs=True'],
    );
    assert.match(
      gateway.stdout(),
      /TCPRoutes are served at v1alpha2 only \(Gateway API before v1.6\): reading them there/,
    );
    assert.ok(api.requests.some((r) => r.verb === 'patch' && r.resource === 'tcproutes' && r.subresource === 'status'));
  });
});
