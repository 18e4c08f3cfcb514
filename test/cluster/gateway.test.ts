// The manager and a Gateway on a real control plane (npm run test:cluster; skipped by npm test):
// the Gateway API's standard CRDs (v1.6.3, from the Go module cache), then `kubectl apply
// --server-side -k deploy/`, whose manager pods run as the ServiceAccount deploy/ makes, bound by
// exactly deploy/'s RBAC. A Gateway of canary-l4's class gets its objects (their pods crash-loop
// until the gateway command exists: the objects are what is checked), its class is Accepted, and
// deleting it leaves nothing: the real garbage collector takes what the Gateway owns, the manager
// the proxy's identity (its ServiceAccount and bindings, owned by no one so that no pod outlives it). kube-apiserver's audit log shows the manager was refused
// nothing, and used every grant only Gateways need.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CustomObjectsApi, RbacAuthorizationV1Api, AppsV1Api, type V1Deployment } from '@kubernetes/client-node';
import { GATEWAY_CONTROLLER_NAME, GATEWAY_GROUP, GATEWAY_VERSION } from '../../src/api/gateway/names.ts';
import type { GatewayClass } from '../../src/api/gateway/types.ts';
import { REAL_API, REAL_NODE } from '../support/cluster/api-under-test.ts';
import { kubectlFor, type Kubectl } from '../support/cluster/api-fixtures.ts';
import { MANAGER_GATEWAY_ONLY_GRANTS } from '../support/cluster/release-cluster.ts';

import { startRealCluster, type RealCluster } from './cluster.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const NS = 'edge';
const MANAGER = 'system:serviceaccount:canary-l4-system:canary-l4-manager';
const PROXY = 'canary-l4-gateway-public';
const BINDING = `canary-l4-gateway.${NS}.public`;
const gatewayApi = { group: GATEWAY_GROUP, version: GATEWAY_VERSION };

function gatewayCrdFiles(): string[] {
  const dir = JSON.parse(
    execFileSync('go', ['mod', 'download', '-json', 'sigs.k8s.io/gateway-api@v1.6.3'], { encoding: 'utf8' }),
  ).Dir as string;
  const standard = join(dir, 'config', 'crd', 'standard');
  return readdirSync(standard)
    .filter((file) => file.endsWith('.yaml') && !file.includes('vap'))
    .map((file) => join(standard, file));
}

describe('the manager and a Gateway on a real control plane, installed with kubectl apply -k deploy/', {
  skip: REAL_API ? false : 'needs a real control plane: npm run test:cluster',
  timeout: 400_000,
}, () => {
  let cluster: RealCluster;
  let dir: string;
  let kubectl: Kubectl;
  let custom: CustomObjectsApi;
  let rbac: RbacAuthorizationV1Api;
  let apps: AppsV1Api;

  const exists = (read: Promise<unknown>) =>
    read.then(
      () => true,
      (err: { code?: number }) => (err.code === 404 ? false : Promise.reject(err)),
    );

  /** What the manager keeps in the namespace but its Deployment (the namespace has a `default` ServiceAccount too). */
  const managed = async () =>
    (
      await kubectl(
        'get',
        'service,pdb,serviceaccount,rolebinding',
        '-n',
        NS,
        '-l',
        'app.kubernetes.io/managed-by=canary-l4-manager',
        '-o',
        'name',
      )
    )
      .split('\n')
      .filter(Boolean);

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-gateway-'));
    cluster = await startRealCluster({
      dir,
      serviceCidr: addresses.cidr,
      podSubnet: addresses.octet,
      realNode: REAL_NODE,
    });
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    rbac = cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    kubectl = await kubectlFor(cluster.plane);
  });

  after(async () => {
    await kubectl?.cleanup();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('the Gateway API CRDs, then deploy/: the manager runs', async () => {
    for (const file of gatewayCrdFiles()) await kubectl('apply', '--server-side', '-f', file);
    await kubectl('apply', '--server-side', '-k', join(import.meta.dirname, '../../deploy'));
    await kubectl('rollout', 'status', '-n', 'canary-l4-system', 'deployment/canary-l4-manager', '--timeout=120s');
  });

  it("a Gateway of canary-l4's class gets its objects, owned by it; the class is Accepted", async () => {
    await kubectl('create', 'namespace', NS);
    const manifest = await kubectl.manifest(
      'gateway.yaml',
      {
        apiVersion: `${GATEWAY_GROUP}/${GATEWAY_VERSION}`,
        kind: 'GatewayClass',
        metadata: { name: 'canary-l4' },
        spec: { controllerName: GATEWAY_CONTROLLER_NAME },
      },
      {
        apiVersion: `${GATEWAY_GROUP}/${GATEWAY_VERSION}`,
        kind: 'Gateway',
        metadata: { name: 'public', namespace: NS },
        spec: {
          gatewayClassName: 'canary-l4',
          listeners: [
            { name: 'tcp', port: 9300, protocol: 'TCP' },
            { name: 'udp', port: 9300, protocol: 'UDP' },
          ],
        },
      },
    );
    await kubectl('apply', '-f', manifest);
    let deployment: V1Deployment | undefined;
    await waitFor(
      async () =>
        (deployment = await apps.readNamespacedDeployment({ name: PROXY, namespace: NS }).catch(() => undefined)) !==
          undefined &&
        (await exists(
          cluster.kubeConfig.makeApiClient(RbacAuthorizationV1Api).readClusterRoleBinding({ name: BINDING }),
        )) &&
        (await managed()).length === 4,
      'the Gateway proxy objects',
      90_000,
    );
    assert.deepEqual(
      deployment?.metadata?.ownerReferences?.map((ref) => [ref.kind, ref.name, ref.controller, ref.blockOwnerDeletion]),
      [['Gateway', 'public', true, true]],
    );
    const ports = JSON.parse(await kubectl('get', 'service', PROXY, '-n', NS, '-o', 'jsonpath={.spec.ports}')) as {
      name: string;
    }[];
    assert.deepEqual(
      ports.map((port) => port.name),
      ['tcp-9300', 'udp-9300'],
    );
    await waitFor(
      async () =>
        (
          (await custom.getClusterCustomObject({
            ...gatewayApi,
            plural: 'gatewayclasses',
            name: 'canary-l4',
          })) as GatewayClass
        ).status?.conditions?.some(
          (c) => c.type === 'Accepted' && c.status === 'True' && c.observedGeneration === 1,
        ) === true,
      'the class Accepted',
      30_000,
    );
  });

  it("deleting the Gateway leaves nothing: the garbage collector takes what it owns, the manager the proxy's identity", async () => {
    await kubectl('delete', 'gateways.gateway.networking.k8s.io', 'public', '-n', NS);
    await waitFor(
      async () =>
        !(await exists(rbac.readClusterRoleBinding({ name: BINDING }))) &&
        (
          await kubectl(
            'get',
            'deployment,service,pdb,serviceaccount,rolebinding',
            '-n',
            NS,
            '-l',
            'app.kubernetes.io/managed-by=canary-l4-manager',
            '-o',
            'name',
          )
        ).trim() === '',
      'nothing left of the proxy',
      60_000,
    );
  });

  it("kube-apiserver's audit log: the manager was refused nothing and used every grant only Gateways need", () => {
    const events = cluster.plane.auditEvents().filter((event) => event.user.username === MANAGER);
    const forbidden = events
      .filter((event) => event.responseStatus?.code === 403)
      .map((event) => `${event.verb} ${event.requestURI}`);
    assert.deepEqual(forbidden, []);
    const used = new Set(
      events
        .filter((event) => event.objectRef?.resource !== undefined)
        .map(
          (event) =>
            `${event.verb} ${event.objectRef?.apiGroup || 'core'}/${event.objectRef?.resource}${event.objectRef?.subresource ? `/${event.objectRef.subresource}` : ''}`,
        ),
    );
    // update is the ClusterRoleBinding's repair, which this scenario does not call for.
    assert.deepEqual(
      MANAGER_GATEWAY_ONLY_GRANTS.filter((grant) => !used.has(grant) && !grant.startsWith('update ')),
      [],
    );
  });
});
