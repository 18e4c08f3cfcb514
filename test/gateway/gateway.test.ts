// canary-l4 gateway as a platform team runs it: Gateway API's CRDs applied with kubectl, a GatewayClass
// of canary-l4's controller, a Gateway with a TCP and a UDP listener, an 80/20 TCPRoute and UDPRoute,
// and `canary-l4 gateway` serving it from this host. Traffic goes through it to backends on the
// Services' cluster IPs (the test plays kube-proxy). On the fake and, with CANARY_TEST_API=real, on
// a real control plane (test/support/cluster/api-under-test.ts).
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CustomObjectsApi } from '@kubernetes/client-node';
import type { Gateway, L4Route } from '../../src/api/gateway/types.ts';
import { type ApiUnderTest, startApiUnderTest, suiteTimeout } from '../support/cluster/api-under-test.ts';
import { type Kubectl, kubectlFor } from '../support/cluster/api-fixtures.ts';
import { roleGrants } from '../support/cluster/release-cluster.ts';
import { installGatewayApi } from '../support/gateway-api/crds.ts';
import { freePortBlock } from '../support/net/free-ports.ts';
import {
  countBy,
  exchange,
  runConcurrently,
  startNamedBackend,
  startUdpEcho,
  type TcpBackend,
  type UdpBackend,
  udpAsk,
} from '../support/net/backends.ts';
import { type ServeChild, startGateway } from '../support/process/serve-child.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';
import { Http1KubeConfig } from '../../src/kube/client.ts';

const addresses = loopbackRange(import.meta.url);

const SERVICE_CIDR = addresses.cidr;
const NS = 'default';
const GATEWAY_API = { group: 'gateway.networking.k8s.io', version: 'v1' } as const;
const BACKEND_PORT = 3000;

/** The gateway's identity: on the real API its ServiceAccount, bound to deploy/gateway-rbac.yaml's ClusterRoles as the manager binds it. */
const GATEWAY_USER = 'canary-l4-gateway-l4';

async function gatewayKubeconfig(api: ApiUnderTest, kubectl: Kubectl): Promise<string> {
  const path = join(kubectl.home, 'gateway-kubeconfig');
  if (api.real === undefined) {
    const kubeConfig = new Http1KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'fake', server: api.url, skipTLSVerify: true }],
      users: [{ name: GATEWAY_USER, token: GATEWAY_USER }],
      contexts: [{ name: 'fake', cluster: 'fake', user: GATEWAY_USER, namespace: NS }],
      currentContext: 'fake',
    });
    writeFileSync(path, kubeConfig.exportConfig());
    return path;
  }
  await kubectl('apply', '-f', fileURLToPath(new URL('../../deploy/gateway-rbac.yaml', import.meta.url)));
  await kubectl('create', 'serviceaccount', GATEWAY_USER, '-n', NS);
  await kubectl(
    'create',
    'clusterrolebinding',
    GATEWAY_USER,
    '--clusterrole=canary-l4-gateway',
    `--serviceaccount=${NS}:${GATEWAY_USER}`,
  );
  await kubectl(
    'create',
    'rolebinding',
    GATEWAY_USER,
    '-n',
    NS,
    '--clusterrole=canary-l4-gateway-leases',
    `--serviceaccount=${NS}:${GATEWAY_USER}`,
  );
  writeFileSync(path, (await api.real.serviceAccountKubeConfig(NS, GATEWAY_USER)).exportConfig());
  return path;
}

/** The gateway's requests as RBAC rules, `verb group/resource[/subresource]`, and those refused. */
function gatewayRequests(api: ApiUnderTest): { used: string[]; forbidden: string[] } {
  const user = api.real === undefined ? GATEWAY_USER : `system:serviceaccount:${NS}:${GATEWAY_USER}`;
  const mine = api.requests().filter((r) => r.user === user && r.resource !== '');
  const rule = (r: (typeof mine)[number]) =>
    `${r.verb} ${r.group || 'core'}/${r.resource}${r.subresource ? `/${r.subresource}` : ''}`;
  return { used: [...new Set(mine.map(rule))].sort(), forbidden: mine.filter((r) => r.code === 403).map(rule) };
}

describe('canary-l4 gateway: a TCP and a UDP listener, split 80/20 by a TCPRoute and a UDPRoute', {
  timeout: suiteTimeout(120_000),
}, () => {
  let api: ApiUnderTest;
  let kubectl: Kubectl;
  let custom: CustomObjectsApi;
  let gateway: ServeChild;
  let tcpPort: number;
  let udpPort: number;
  const tcpBackends: TcpBackend[] = [];
  const udpBackends: UdpBackend[] = [];
  const ips = new Map<string, string>();

  const getGateway = async () =>
    (await custom.getNamespacedCustomObject({
      ...GATEWAY_API,
      namespace: NS,
      plural: 'gateways',
      name: 'l4',
    })) as Gateway;
  const getRoute = async (plural: 'tcproutes' | 'udproutes', name: string) =>
    (await custom.getNamespacedCustomObject({ ...GATEWAY_API, namespace: NS, plural, name })) as L4Route;
  const routeCondition = async (plural: 'tcproutes' | 'udproutes', name: string, type: string) => {
    const route = await getRoute(plural, name);
    const condition = route.status?.parents?.[0]?.conditions.find((c) => c.type === type);
    return condition === undefined ? undefined : `${condition.status} ${condition.reason}`;
  };
  /** What a TCP client gets from the Gateway: the backend's name, or how the connection ended without one. */
  const tcpAnswer = async () => {
    const { data, error } = await exchange(tcpPort, '', { timeoutMs: 5000 });
    return data.length > 0 ? data.toString() : `refused (${error?.code ?? 'closed'})`;
  };
  const tcpAnswers = (count: number) => runConcurrently(count, 1, () => tcpAnswer());
  /**
   * Each flow from a source port of its own, never used before in this file: a port the kernel
   * handed out again would be an earlier flow, which keeps the backend it had.
   */
  const udpAnswers = async (count: number) => {
    const base = await freePortBlock(count, { udp: true, tcp: false, host: '127.0.0.1' });
    return runConcurrently(count, 10, async (i) => {
      const socket = dgram.createSocket('udp4');
      socket.bind({ address: '127.0.0.1', port: base + i });
      await once(socket, 'listening');
      try {
        const [reply] = await udpAsk(udpPort, `flow-${i}`, { socket, timeoutMs: 700 });
        return reply?.split(':')[0] ?? 'no reply';
      } finally {
        socket.close();
      }
    });
  };

  before(async () => {
    api = await startApiUnderTest(SERVICE_CIDR, { bookmarkIntervalMs: 1000 });
    kubectl = await kubectlFor(api);
    custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
    await installGatewayApi(api.kubeconfigPath);
    for (const name of ['v1', 'v2']) {
      const service = {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name, namespace: NS },
        spec: {
          selector: { app: name },
          ports: [
            { name: 'tcp', protocol: 'TCP', port: BACKEND_PORT },
            { name: 'udp', protocol: 'UDP', port: BACKEND_PORT },
          ],
        },
      };
      await kubectl('apply', '-f', await kubectl.manifest(`${name}.yaml`, service));
      const ip = (await kubectl('get', 'service', name, '-n', NS, '-o', 'jsonpath={.spec.clusterIP}')).trim();
      ips.set(name, ip);
      tcpBackends.push(await startNamedBackend(name, ip, BACKEND_PORT));
      udpBackends.push(await startUdpEcho(name, ip, 1, BACKEND_PORT));
    }
    tcpPort = await freePortBlock(2, { udp: true });
    udpPort = tcpPort + 1;
    const objects = [
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'GatewayClass',
        metadata: { name: 'canary-l4' },
        spec: { controllerName: 'canary-l4.io/gateway-controller' },
      },
      {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'Gateway',
        metadata: { name: 'l4', namespace: NS },
        spec: {
          gatewayClassName: 'canary-l4',
          listeners: [
            { name: 'tcp', protocol: 'TCP', port: tcpPort },
            { name: 'udp', protocol: 'UDP', port: udpPort },
          ],
        },
      },
      ...(['TCPRoute', 'UDPRoute'] as const).map((kind) => ({
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind,
        metadata: { name: kind === 'TCPRoute' ? 'tcp' : 'udp', namespace: NS },
        spec: {
          parentRefs: [{ name: 'l4', sectionName: kind === 'TCPRoute' ? 'tcp' : 'udp' }],
          rules: [
            {
              backendRefs: [
                { name: 'v1', port: BACKEND_PORT, weight: 80 },
                { name: 'v2', port: BACKEND_PORT, weight: 20 },
              ],
            },
          ],
        },
      })),
    ];
    await kubectl('apply', '-f', await kubectl.manifest('gateway.yaml', ...objects));
    gateway = await startGateway(NS, 'l4', await gatewayKubeconfig(api, kubectl));
  });

  after(async () => {
    await gateway?.stop();
    await Promise.all([...tcpBackends, ...udpBackends].map((b) => b.close()));
    await kubectl?.cleanup();
    await api?.stop();
  });

  it('writes every status: the GatewayClass Accepted, the Gateway Accepted and Programmed at its address, each listener with its route, each route Accepted and ResolvedRefs', async () => {
    await waitFor(
      async () =>
        (await getGateway()).status?.conditions?.some((c) => c.type === 'Programmed' && c.status === 'True') === true,
      'the Gateway to be Programmed',
      10_000,
    );
    const gw = await getGateway();
    assert.deepEqual(gw.status?.addresses, [{ type: 'IPAddress', value: '127.0.0.1' }]);
    assert.deepEqual(
      gw.status?.conditions?.map((c) => [c.type, c.status, c.reason, c.observedGeneration]),
      [
        ['Accepted', 'True', 'Accepted', gw.metadata.generation],
        ['Programmed', 'True', 'Programmed', gw.metadata.generation],
      ],
    );
    assert.deepEqual(
      gw.status?.listeners?.map((l) => [
        l.name,
        l.attachedRoutes,
        l.supportedKinds.map((k) => k.kind),
        l.conditions.map((c) => `${c.type}=${c.status}`),
      ]),
      [
        ['tcp', 1, ['TCPRoute'], ['Accepted=True', 'Conflicted=False', 'ResolvedRefs=True', 'Programmed=True']],
        ['udp', 1, ['UDPRoute'], ['Accepted=True', 'Conflicted=False', 'ResolvedRefs=True', 'Programmed=True']],
      ],
    );
    for (const [plural, name] of [
      ['tcproutes', 'tcp'],
      ['udproutes', 'udp'],
    ] as const) {
      const route = await getRoute(plural, name);
      const [parent] = route.status?.parents ?? [];
      assert.equal(parent?.controllerName, 'canary-l4.io/gateway-controller');
      assert.deepEqual(
        parent?.conditions.map((c) => [c.type, c.status, c.reason, c.observedGeneration]),
        [
          ['Accepted', 'True', 'Accepted', route.metadata.generation],
          ['ResolvedRefs', 'True', 'ResolvedRefs', route.metadata.generation],
        ],
      );
    }
    const gatewayClass = (await custom.getClusterCustomObject({
      ...GATEWAY_API,
      plural: 'gatewayclasses',
      name: 'canary-l4',
    })) as Gateway;
    assert.deepEqual(
      gatewayClass.status?.conditions?.map((c) => `${c.type}=${c.status} ${c.reason}`),
      ['Accepted=True Accepted'],
    );
  });

  it('100 connections and 100 flows split exactly 80/20', async () => {
    assert.deepEqual(countBy(await tcpAnswers(100)), { v1: 80, v2: 20 });
    assert.deepEqual(countBy(await udpAnswers(100)), { v1: 80, v2: 20 });
  });

  it('writes no status while nothing changes', async () => {
    const writes = () => api.requests().filter((r) => r.subresource === 'status' && r.verb === 'patch').length;
    const before = writes();
    await new Promise((resolve) => setTimeout(resolve, 2500));
    assert.equal(writes(), before, 'a pass that finds the statuses as they should be writes nothing');
  });

  it('a weight change (kubectl patch, as a release tool steps a TCPRoute) reaches new connections within a second', async (t) => {
    await kubectl(
      'patch',
      'tcproute',
      'tcp',
      '-n',
      NS,
      '--type=json',
      '-p',
      JSON.stringify([
        { op: 'replace', path: '/spec/rules/0/backendRefs/0/weight', value: 0 },
        { op: 'replace', path: '/spec/rules/0/backendRefs/1/weight', value: 100 },
      ]),
    );
    // From the write (kubectl's own start-up is not the gateway's): at 80/20, smooth weighted round robin
    // never gives v2 two connections in a row, so two in a row is the new weights.
    const started = Date.now();
    let previous = '';
    await waitFor(
      async () => {
        const answer = await tcpAnswer();
        const shifted = previous === 'v2' && answer === 'v2';
        previous = answer;
        return shifted;
      },
      'new connections to take the new weights',
      5000,
    );
    const elapsedMs = Date.now() - started;
    t.diagnostic(`the patch written to new connections on the new weights: ${elapsedMs} ms`);
    assert.ok(elapsedMs < 1000, `the new weights took ${elapsedMs} ms to reach new connections`);
    assert.deepEqual(countBy(await tcpAnswers(20)), { v2: 20 });
  });

  it('a missing backend: ResolvedRefs=False BackendNotFound, and its share is refused, not given to the others', async () => {
    for (const plural of ['tcproutes', 'udproutes'] as const) {
      await kubectl(
        'patch',
        plural,
        plural === 'tcproutes' ? 'tcp' : 'udp',
        '-n',
        NS,
        '--type=merge',
        '-p',
        JSON.stringify({
          spec: {
            rules: [
              {
                backendRefs: [
                  { name: 'v1', port: BACKEND_PORT, weight: 80 },
                  { name: 'missing', port: BACKEND_PORT, weight: 20 },
                ],
              },
            ],
          },
        }),
      );
    }
    for (const plural of ['tcproutes', 'udproutes'] as const)
      await waitFor(
        async () =>
          (await routeCondition(plural, plural === 'tcproutes' ? 'tcp' : 'udp', 'ResolvedRefs')) ===
          'False BackendNotFound',
        `${plural} ResolvedRefs=False`,
        10_000,
      );
    const route = await getRoute('tcproutes', 'tcp');
    assert.match(
      route.status?.parents?.[0]?.conditions.find((c) => c.type === 'ResolvedRefs')?.message ?? '',
      /Service default\/missing does not exist; its share of the traffic is refused/,
    );
    const tcp = countBy(await tcpAnswers(100));
    assert.equal(tcp.v1, 80, JSON.stringify(tcp));
    assert.equal(100 - tcp.v1, 20, `20 connections refused: ${JSON.stringify(tcp)}`);
    assert.ok(!('v2' in tcp));
    assert.deepEqual(countBy(await udpAnswers(100)), { v1: 80, 'no reply': 20 });
  });

  it('deleting the Gateway stops its listeners and nothing else: the Services, routes and class stay, and the routes lose its entries', async () => {
    await kubectl('delete', 'gateway', 'l4', '-n', NS);
    await waitFor(
      () =>
        new Promise<boolean>((resolve) => {
          const socket = net.connect({ host: '127.0.0.1', port: tcpPort });
          socket.once('connect', () => {
            socket.destroy();
            resolve(false);
          });
          socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
        }),
      'the TCP listener to close',
      10_000,
    );
    assert.deepEqual(countBy(await udpAnswers(5)), { 'no reply': 5 });
    assert.equal(
      (await gateway.get('/readyz')).status,
      200,
      'the gateway process stays up, for the Gateway to come back',
    );
    assert.equal(
      (await kubectl('get', 'services', 'v1', 'v2', '-n', NS, '-o', 'name')).trim(),
      'service/v1\nservice/v2',
    );
    assert.equal((await kubectl('get', 'tcproutes,udproutes', '-n', NS, '-o', 'name')).trim().split('\n').length, 2);
    await waitFor(
      async () => ((await getRoute('tcproutes', 'tcp')).status?.parents ?? []).length === 0,
      'the route to lose the deleted Gateway’s entry',
      10_000,
    );
  });

  it('asked the API for exactly what deploy/gateway-rbac.yaml grants, and was refused nothing', () => {
    const { used, forbidden } = gatewayRequests(api);
    assert.deepEqual(forbidden, []);
    const granted = [
      ...roleGrants('gateway-rbac.yaml', 'ClusterRole', 'canary-l4-gateway'),
      ...roleGrants('gateway-rbac.yaml', 'ClusterRole', 'canary-l4-gateway-leases'),
    ];
    assert.deepEqual(
      used.filter((rule) => !granted.includes(rule)),
      [],
      'asked beyond its ClusterRoles',
    );
    // The class's Accepted is the manager's to write when one runs; here none does, so the gateway wrote it.
    assert.deepEqual(
      granted.filter((rule) => !used.includes(rule)),
      [],
      'granted, never used: least privilege',
    );
  });
});
