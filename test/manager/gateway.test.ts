// `canary-l4 manager` and Gateways, against the fake apiserver with the Gateway API's own
// standard-channel CRDs (read from the Go module cache, never copied here): started before they are
// installed, it says once that Gateways are not watched, and picks them up once they are; a Gateway
// of canary-l4's class gets its six objects with a Service port per listener; a UDP listener added
// adds a port and rolls nothing; a Gateway of another class gets nothing; the class is Accepted;
// a hand-edited ClusterRoleBinding comes back; deleting the Gateway leaves nothing of its proxy (the
// fake's garbage collector takes what the Gateway owns, the manager the ClusterRoleBinding). The
// pods are not run (`canary-l4 gateway` is tested on its own): what is checked is the objects, and
// that what the manager asked of the API is deploy/'s RBAC.

import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  AppsV1Api,
  PolicyV1Api,
  RbacAuthorizationV1Api,
  type KubernetesObject,
  type V1Service,
} from '@kubernetes/client-node';
import { GATEWAY_CONTROLLER_NAME, GATEWAY_GROUP, GATEWAY_VERSION } from '../../src/api/gateway/names.ts';
import type { Gateway, GatewayClass, GatewayListener } from '../../src/api/gateway/types.ts';
import { LABEL_MANAGED_BY, MANAGED_BY } from '../../src/manager/names.ts';
import { kubectlFor, type Kubectl } from '../support/cluster/api-fixtures.ts';
import { onlyOnFake } from '../support/cluster/api-under-test.ts';
import {
  MANAGER_GATEWAY_ONLY_GRANTS,
  NAMESPACE,
  roleGrants,
  startCluster,
  type Cluster,
} from '../support/cluster/release-cluster.ts';

import { MAIN } from '../support/process/serve-child.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';
import { Http1KubeConfig } from '../../src/kube/client.ts';

const addresses = loopbackRange(import.meta.url);

const MANAGER_USER = 'system:serviceaccount:canary-l4-system:canary-l4-manager';
const IMAGE = 'canary-l4:gateway-test';
const PROXY = 'canary-l4-gateway-edge';
const BINDING = `canary-l4-gateway.${NAMESPACE}.edge`;
const gatewayApi = { group: GATEWAY_GROUP, version: GATEWAY_VERSION };

/** The standard channel's CRDs of the pinned Gateway API module (the safe-upgrades policy aside: the fake has no admission policies). */
function gatewayCrdFiles(): string[] {
  const dir = JSON.parse(
    execFileSync('go', ['mod', 'download', '-json', 'sigs.k8s.io/gateway-api@v1.6.3'], { encoding: 'utf8' }),
  ).Dir as string;
  const standard = join(dir, 'config', 'crd', 'standard');
  return readdirSync(standard)
    .filter((file) => file.endsWith('.yaml') && !file.includes('vap'))
    .map((file) => join(standard, file));
}

describe('canary-l4 manager: a proxy per Gateway of its class', {
  timeout: 120_000,
  ...onlyOnFake('reads the request log of the fake'),
}, () => {
  let cluster: Cluster;
  let kubectl: Kubectl;
  let apps: AppsV1Api;
  let rbac: RbacAuthorizationV1Api;
  let policy: PolicyV1Api;
  let dir: string;
  let manager: ChildProcess;
  let output = '';
  let kubeconfig: string;

  const gateway = (name: string, className: string, listeners: GatewayListener[]): Gateway => ({
    apiVersion: `${GATEWAY_GROUP}/${GATEWAY_VERSION}`,
    kind: 'Gateway',
    metadata: { name, namespace: NAMESPACE },
    spec: { gatewayClassName: className, listeners },
  });
  const gatewayClass = (name: string, controllerName: string): GatewayClass => ({
    apiVersion: `${GATEWAY_GROUP}/${GATEWAY_VERSION}`,
    kind: 'GatewayClass',
    metadata: { name },
    spec: { controllerName },
  });
  const readClass = async (name: string) =>
    (await cluster.custom.getClusterCustomObject({ ...gatewayApi, plural: 'gatewayclasses', name })) as GatewayClass;
  const service = async (name: string): Promise<V1Service | undefined> =>
    cluster.core
      .readNamespacedService({ name, namespace: NAMESPACE })
      .catch((err: { code?: number }) => (err.code === 404 ? undefined : Promise.reject(err)));
  const ports = async () =>
    ((await service(PROXY))?.spec?.ports ?? []).map(
      (port) => `${port.name} ${port.port}→${port.targetPort}/${port.protocol}`,
    );

  /** What the manager keeps, as `Kind/name`, the ClusterRoleBindings included. */
  async function managed(): Promise<string[]> {
    const labelSelector = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;
    const lists: [string, Promise<{ items: KubernetesObject[] }>][] = [
      ['Deployment', apps.listNamespacedDeployment({ namespace: NAMESPACE, labelSelector })],
      ['PodDisruptionBudget', policy.listNamespacedPodDisruptionBudget({ namespace: NAMESPACE, labelSelector })],
      ['Service', cluster.core.listNamespacedService({ namespace: NAMESPACE, labelSelector })],
      ['ServiceAccount', cluster.core.listNamespacedServiceAccount({ namespace: NAMESPACE, labelSelector })],
      ['RoleBinding', rbac.listNamespacedRoleBinding({ namespace: NAMESPACE, labelSelector })],
      ['ClusterRoleBinding', rbac.listClusterRoleBinding({ labelSelector })],
    ];
    const found = await Promise.all(
      lists.map(async ([kind, list]) => (await list).items.map((item) => `${kind}/${item.metadata?.name}`)),
    );
    return found.flat().sort();
  }

  before(async () => {
    cluster = await startCluster(addresses.cidr);
    apps = cluster.api.kubeConfig.makeApiClient(AppsV1Api);
    rbac = cluster.api.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    policy = cluster.api.kubeConfig.makeApiClient(PolicyV1Api);
    kubectl = await kubectlFor(cluster.api);
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-gateway-manager-'));
    kubeconfig = join(dir, 'kubeconfig');
    const config = new Http1KubeConfig();
    config.loadFromOptions({
      clusters: [{ name: 'fake', server: cluster.api.url, skipTLSVerify: true }],
      users: [{ name: MANAGER_USER, token: MANAGER_USER }],
      contexts: [{ name: 'fake', cluster: 'fake', user: MANAGER_USER }],
      currentContext: 'fake',
    });
    writeFileSync(kubeconfig, config.exportConfig());
    startManager();
  });

  function startManager(): void {
    manager = spawn(
      process.execPath,
      [
        ...[MAIN, 'manager', '--kubeconfig', kubeconfig, '--admin-port', '0', '--admin-host', '127.0.0.1'],
        ...['--proxy-image', IMAGE, '--no-leader-elect', '--resync', '1'],
        // Some namespaces, not all: the Gateways are watched per namespace, the classes and the
        // ClusterRoleBindings (cluster-scoped) cluster-wide.
        ...['--namespace', `${NAMESPACE},elsewhere`],
      ],
      { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH, HOME: dir } },
    );
    const child = manager;
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    process.once('exit', () => child.kill('SIGKILL'));
  }

  async function stopManager(): Promise<void> {
    const exited = new Promise((resolve) => manager.once('exit', resolve));
    manager.kill('SIGTERM');
    await exited;
  }

  after(async () => {
    manager?.kill('SIGKILL');
    await kubectl?.cleanup();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('without the Gateway API it manages releases and says once that Gateways are not watched; it picks them up once the CRDs are installed', async () => {
    await waitFor(() => /manager started/.test(output), 'the manager to start', 15_000);
    await waitFor(() => /Gateways are not watched/.test(output), 'the manager to say Gateways are not watched', 10_000);
    // Asked again every resync (1 s here), said once.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    assert.equal(output.match(/Gateways are not watched/g)?.length, 1, output.slice(-2000));
    for (const file of gatewayCrdFiles()) await kubectl('apply', '--server-side', '-f', file);
    await waitFor(() => /is served: watching Gateways/.test(output), 'the manager to watch Gateways', 10_000);
  });

  it("a Gateway of canary-l4's class gets its objects, owned by it, with a Service port per listener; the class is Accepted; another class's Gateway gets nothing", async () => {
    await cluster.custom.createClusterCustomObject({
      ...gatewayApi,
      plural: 'gatewayclasses',
      body: gatewayClass('canary-l4', GATEWAY_CONTROLLER_NAME),
    });
    await cluster.custom.createClusterCustomObject({
      ...gatewayApi,
      plural: 'gatewayclasses',
      body: gatewayClass('other', 'example.io/other-controller'),
    });
    const edge = (await cluster.custom.createNamespacedCustomObject({
      ...gatewayApi,
      namespace: NAMESPACE,
      plural: 'gateways',
      body: gateway('edge', 'canary-l4', [{ name: 'tcp', port: 9300, protocol: 'TCP' }]),
    })) as Gateway;
    await cluster.custom.createNamespacedCustomObject({
      ...gatewayApi,
      namespace: NAMESPACE,
      plural: 'gateways',
      body: gateway('elsewhere', 'other', [{ name: 'tcp', port: 9400, protocol: 'TCP' }]),
    });
    const expected = [
      `ClusterRoleBinding/${BINDING}`,
      `Deployment/${PROXY}`,
      `PodDisruptionBudget/${PROXY}`,
      `RoleBinding/${PROXY}`,
      `Service/${PROXY}`,
      `ServiceAccount/${PROXY}`,
    ];
    await waitFor(async () => (await managed()).length === expected.length, 'the Gateway proxy objects', 15_000);
    assert.deepEqual(await managed(), expected, 'nothing for the Gateway of the other class');
    assert.deepEqual(await ports(), ['tcp-9300 9300→9300/TCP']);
    const deployment = await apps.readNamespacedDeployment({ name: PROXY, namespace: NAMESPACE });
    assert.deepEqual(
      deployment.metadata?.ownerReferences?.map((ref) => [
        ref.kind,
        ref.name,
        ref.uid,
        ref.controller,
        ref.blockOwnerDeletion,
      ]),
      [['Gateway', 'edge', edge.metadata.uid, true, true]],
    );
    const container = deployment.spec?.template.spec?.containers[0];
    assert.equal(container?.image, IMAGE);
    assert.deepEqual(container?.args?.slice(0, 5), ['gateway', '-n', NAMESPACE, '--gateway', 'edge']);

    await waitFor(
      async () =>
        (await readClass('canary-l4')).status?.conditions?.some((c) => c.type === 'Accepted' && c.status === 'True') ===
        true,
      'the class Accepted',
      10_000,
    );
    const accepted = (await readClass('canary-l4')).status!.conditions!.find((c) => c.type === 'Accepted')!;
    assert.deepEqual([accepted.reason, accepted.observedGeneration], ['Accepted', 1]);
    const other = await readClass('other');
    assert.ok(
      !(other.status?.conditions ?? []).some((c) => c.reason === 'Accepted'),
      "another controller's class is left alone",
    );
  });

  /** A Gateway name too long to be a label value (and so to select its pods). */
  const TOO_LONG = `edge-${'x'.repeat(60)}`;

  it('the Gateway hears what was made for it; one whose name cannot label its objects gets nothing, and a Warning Event naming the field', async () => {
    const events = async (name: string) =>
      (
        await cluster.core.listNamespacedEvent({ namespace: NAMESPACE, fieldSelector: `involvedObject.name=${name}` })
      ).items.filter((event) => event.involvedObject.kind === 'Gateway');
    await waitFor(
      async () => (await events('edge')).some((e) => e.reason === 'ProxyCreated'),
      'ProxyCreated on edge',
      10_000,
    );
    await cluster.custom.createNamespacedCustomObject({
      ...gatewayApi,
      namespace: NAMESPACE,
      plural: 'gateways',
      body: gateway(TOO_LONG, 'canary-l4', [{ name: 'tcp', port: 9500, protocol: 'TCP' }]),
    });
    await waitFor(async () => (await events(TOO_LONG)).length > 0, `an Event on ${TOO_LONG}`, 10_000);
    const [event] = await events(TOO_LONG);
    assert.deepEqual([event?.type, event?.reason], ['Warning', 'ProxyNotMade']);
    assert.match(
      event?.message ?? '',
      new RegExp(`^no proxy is made for this Gateway: metadata\\.name: .* got "${TOO_LONG}"$`),
    );
    assert.equal((await managed()).length, 6, 'nothing made for it');
    await cluster.custom.deleteNamespacedCustomObject({
      ...gatewayApi,
      namespace: NAMESPACE,
      plural: 'gateways',
      name: TOO_LONG,
    });
  });

  it('a UDP listener added adds a Service port, keeping its cluster IP; the Deployment is not rewritten', async () => {
    const before = await apps.readNamespacedDeployment({ name: PROXY, namespace: NAMESPACE });
    const clusterIP = (await service(PROXY))?.spec?.clusterIP;
    await kubectl(
      'patch',
      'gateways.gateway.networking.k8s.io',
      'edge',
      '--type=json',
      '-p',
      JSON.stringify([{ op: 'add', path: '/spec/listeners/-', value: { name: 'udp', port: 9300, protocol: 'UDP' } }]),
    );
    await waitFor(async () => (await ports()).length === 2, 'the UDP port', 10_000);
    assert.deepEqual(await ports(), ['tcp-9300 9300→9300/TCP', 'udp-9300 9300→9300/UDP']);
    assert.equal((await service(PROXY))?.spec?.clusterIP, clusterIP);
    const after = await apps.readNamespacedDeployment({ name: PROXY, namespace: NAMESPACE });
    assert.equal(after.metadata?.resourceVersion, before.metadata?.resourceVersion);
  });

  it('a hand-edited ClusterRoleBinding is put back; the class written once (its own write is no news)', async () => {
    await rbac.replaceClusterRoleBinding({
      name: BINDING,
      body: {
        ...(await rbac.readClusterRoleBinding({ name: BINDING })),
        subjects: [{ kind: 'ServiceAccount', name: 'someone-else', namespace: NAMESPACE }],
      },
    });
    await waitFor(
      async () => (await rbac.readClusterRoleBinding({ name: BINDING })).subjects?.[0]?.name === PROXY,
      'the binding back',
      10_000,
    );
    const classWrites = cluster.fake.requests.filter(
      (request) => request.user === MANAGER_USER && request.resource === 'gatewayclasses' && request.verb === 'patch',
    );
    assert.equal(classWrites.length, 1, 'one status write over many resyncs');
  });

  it("deleting the Gateway: the garbage collector takes what it owns, even with no manager running; the proxy's identity (owned by no one, so no pod outlives it) waits for the manager, which removes it once no pod is left", async () => {
    await stopManager();
    await cluster.custom.deleteNamespacedCustomObject({
      ...gatewayApi,
      namespace: NAMESPACE,
      plural: 'gateways',
      name: 'edge',
    });
    await waitFor(async () => (await managed()).length === 3, 'the owned objects collected', 15_000);
    assert.deepEqual(await managed(), [
      `ClusterRoleBinding/${BINDING}`,
      `RoleBinding/${PROXY}`,
      `ServiceAccount/${PROXY}`,
    ]);
    startManager();
    await waitFor(async () => (await managed()).length === 0, 'nothing left of the proxy', 15_000);
  });

  it("what the manager asked of the API is deploy/'s: every Gateway-only grant used, nothing beyond its ClusterRole and Role", async () => {
    await stopManager();
    const used = [
      ...new Set(
        cluster.fake.requests
          .filter((request) => request.user === MANAGER_USER && request.resource !== '')
          .map(
            (request) =>
              `${request.verb} ${request.group || 'core'}/${request.resource}${request.subresource ? `/${request.subresource}` : ''}`,
          ),
      ),
    ].sort();
    const granted = [
      ...roleGrants('manager-rbac.yaml', 'ClusterRole', 'canary-l4-manager'),
      ...roleGrants('manager-rbac.yaml', 'Role', 'canary-l4-manager'),
    ];
    assert.deepEqual(
      used.filter((grant) => !granted.includes(grant)),
      [],
      'nothing beyond deploy/',
    );
    assert.deepEqual(
      MANAGER_GATEWAY_ONLY_GRANTS.filter((grant) => !used.includes(grant)),
      [],
      'every grant only Gateways need, used',
    );
  });
});
