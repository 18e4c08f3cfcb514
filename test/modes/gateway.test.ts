// `canary-l4 gateway` as a user runs it: one-line errors for bad flags; against the fake API server,
// a Gateway of another controller's class served not at all (and said once), a listener whose port
// another process holds reported PortUnavailable while the others serve, and a SIGTERM that exits 0.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { CustomObjectsApi } from '@kubernetes/client-node';
import type { Gateway } from '../../src/api/gateway/types.ts';
import { type Kubectl, kubectlFor } from '../support/cluster/api-fixtures.ts';
import { type FakeApiServer, startFakeApiServer } from '../support/fake-apiserver/index.ts';

import { freePortBlock } from '../support/net/free-ports.ts';
import { runCli, type ServeChild, spawnWithAdmin, startGateway } from '../support/process/serve-child.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const bareServiceNet = loopbackRange(import.meta.url);
const serviceNet = loopbackRange(import.meta.url, 1);

const GATEWAY_API = { group: 'gateway.networking.k8s.io', version: 'v1' } as const;

describe('canary-l4 gateway', { timeout: 90_000 }, () => {
  for (const [args, message] of [
    [['gateway', '--gateway', 'l4'], 'canary-l4: --namespace: required'],
    [['gateway', '-n', 'infra'], 'canary-l4: --gateway: required'],
    [
      ['gateway', '-n', 'infra', '--gateway', 'l4', '--service', 'front', '--address', '10.0.0.1'],
      'canary-l4: --address: comes from --service when that is set: pass one or the other',
    ],
  ] as const) {
    it(`refuses ${args.slice(1).join(' ')} in one line, exit 2`, async () => {
      const result = await runCli(args);
      assert.equal(result.exit.code, 2);
      assert.equal(result.stderr.split('\n')[0], message);
    });
  }

  it('without Gateway API’s CRDs: says to install them, naming the release to install, and waits', async () => {
    const bare = await startFakeApiServer({ serviceCidr: bareServiceNet.cidr });
    const child = spawnWithAdmin([
      'gateway',
      '-n',
      'default',
      '--gateway',
      'l4',
      '--kubeconfig',
      bare.kubeconfigPath,
      '--admin-port',
      '0',
      '--admin-address',
      '127.0.0.1',
    ]);
    try {
      await waitFor(() => child.stdout().includes('are not served'), 'the missing CRDs said', 10_000);
      assert.match(
        child.stdout(),
        /TCPRoutes are not served: install Gateway API's CRDs \(v1.6 or later: kubectl apply --server-side -f https:\/\/github.com\/kubernetes-sigs\/gateway-api\/releases\/download\/v1.6.3\/standard-install.yaml\)/,
      );
      assert.equal(child.hasExited, false, 'it waits for them');
    } finally {
      await child.stop();
      await bare.stop();
    }
  });

  describe('against the fake apiserver', () => {
    let api: FakeApiServer;
    let kubectl: Kubectl;
    let custom: CustomObjectsApi;
    let gateway: ServeChild;
    let base: number;
    let squatter: net.Server;

    const gatewayObject = async (name: string) =>
      (await custom.getNamespacedCustomObject({
        ...GATEWAY_API,
        namespace: 'default',
        plural: 'gateways',
        name,
      })) as Gateway;
    const start = (name: string) => startGateway('default', name, api.kubeconfigPath);

    before(async () => {
      api = await startFakeApiServer({ serviceCidr: serviceNet.cidr });
      kubectl = await kubectlFor(api);
      custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
      const dir = (
        JSON.parse(
          execFileSync('go', ['mod', 'download', '-json', 'sigs.k8s.io/gateway-api@v1.6.3'], { encoding: 'utf8' }),
        ) as { Dir: string }
      ).Dir;
      for (const plural of ['gatewayclasses', 'gateways', 'tcproutes', 'udproutes', 'referencegrants'])
        await kubectl(
          'apply',
          '--server-side',
          '-f',
          `${dir}/config/crd/standard/gateway.networking.k8s.io_${plural}.yaml`,
        );
      base = await freePortBlock(3);
      squatter = net.createServer().listen({ host: '127.0.0.1', port: base + 1 });
      await once(squatter, 'listening');
      const gateway = (name: string, className: string) => ({
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        metadata: { name, namespace: 'default' },
        spec: {
          gatewayClassName: className,
          listeners: [
            { name: 'free', protocol: 'TCP', port: base },
            { name: 'taken', protocol: 'TCP', port: base + 1 },
          ],
        },
      });
      await kubectl(
        'apply',
        '-f',
        await kubectl.manifest(
          'objects.yaml',
          {
            apiVersion: 'gateway.networking.k8s.io/v1',
            kind: 'GatewayClass',
            metadata: { name: 'ours' },
            spec: { controllerName: 'canary-l4.io/gateway-controller' },
          },
          {
            apiVersion: 'gateway.networking.k8s.io/v1',
            kind: 'GatewayClass',
            metadata: { name: 'theirs' },
            spec: { controllerName: 'example.com/gateway' },
          },
          gateway('mine', 'ours'),
          gateway('other', 'theirs'),
          {
            apiVersion: 'gateway.networking.k8s.io/v1',
            kind: 'TCPRoute',
            metadata: { name: 'r', namespace: 'default' },
            spec: {
              parentRefs: [{ name: 'mine' }, { name: 'other' }],
              rules: [{ backendRefs: [{ name: 'nowhere', port: 1 }] }],
            },
          },
        ),
      );
    });

    after(async () => {
      await gateway?.stop();
      squatter?.close();
      await kubectl?.cleanup();
      await api?.stop();
    });

    it('a listener whose port another process holds: PortUnavailable, naming the error; the other listener serves', async () => {
      gateway = await start('mine');
      await waitFor(
        async () => (await gatewayObject('mine')).status?.listeners?.length === 2,
        'the listener statuses',
        10_000,
      );
      const [free, taken] = (await gatewayObject('mine')).status?.listeners ?? [];
      assert.deepEqual(
        free?.conditions.map((c) => `${c.type}=${c.status}`),
        ['Accepted=True', 'Conflicted=False', 'ResolvedRefs=True', 'Programmed=True'],
      );
      const accepted = taken?.conditions.find((c) => c.type === 'Accepted');
      assert.equal(`${accepted?.status} ${accepted?.reason}`, 'False PortUnavailable');
      assert.match(accepted?.message ?? '', /port cannot be bound here: .*EADDRINUSE/);
      // Its one backend is a Service that does not exist: the gateway takes the connection and resets it
      // (its share refused); a port nothing listens on is refused by the kernel instead.
      const ended = await new Promise<string | undefined>((resolve) => {
        const socket = net.connect({ host: '127.0.0.1', port: base });
        socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code));
        socket.once('close', () => resolve(undefined));
      });
      assert.equal(ended, 'ECONNRESET', 'the free listener is served');
    });

    it('exits 0 on SIGTERM, within its drain', async () => {
      const started = Date.now();
      gateway.child.kill('SIGTERM');
      assert.deepEqual(await gateway.exited, { code: 0, signal: null });
      assert.ok(Date.now() - started < 10_000);
    });

    it('a Gateway of another controller’s class: nothing served, no status written, and it says why', async () => {
      gateway = await start('other');
      await waitFor(() => gateway.stdout().includes('serving nothing'), 'the reason in the log', 10_000);
      assert.match(
        gateway.stdout(),
        /Gateway default\/other is of GatewayClass theirs, whose controller is example.com\/gateway, not canary-l4.io\/gateway-controller/,
      );
      assert.equal((await gatewayObject('other')).status?.listeners, undefined);
      const statusWrites = api.requests.filter((r) => r.subresource === 'status' && r.name === 'other');
      assert.deepEqual(statusWrites, []);
      const route = (await custom.getNamespacedCustomObject({
        ...GATEWAY_API,
        namespace: 'default',
        plural: 'tcproutes',
        name: 'r',
      })) as { status?: { parents?: { parentRef: { name: string } }[] } };
      assert.deepEqual(
        route.status?.parents?.map((p) => p.parentRef.name),
        ['mine'],
        'the entry of the Gateway served before is kept',
      );
    });
  });
});
