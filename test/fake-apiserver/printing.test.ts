/**
 * kubectl against the fake as against a cluster: the kinds of an operator's install (RBAC,
 * PodDisruptionBudget, ServiceAccount…) apply with default client validation and re-apply through
 * /openapi/v2; `kubectl get` prints the server-side Table columns of built-in kinds and a CRD's
 * printer columns, in lists, `-o wide` and `-w`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { before, describe, it } from 'node:test';
import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { FakeApiServer } from '../support/fake-apiserver/index.ts';
import { humanDuration, jsonPath } from '../support/fake-apiserver/resources/table.ts';
import { canaryCrd, fakeWithKubectl, type Kubectl } from '../support/cluster/api-fixtures.ts';
import { requireTool } from '../support/process/required-tool.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** kubectl's columns, split on runs of two or more spaces. */
function table(text: string): string[][] {
  return text
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s{2,}/));
}

/** The CanaryRelease CRD of the fake's tests, with printer columns. */
const crd = structuredClone(canaryCrd) as typeof canaryCrd & { spec: { versions: Record<string, unknown>[] } };
crd.spec.versions[0]!.additionalPrinterColumns = [
  { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
  { name: 'Size', type: 'integer', jsonPath: '.spec.size' },
  { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
];

describe("kubectl against the fake: an install's kinds and server-side printing", await requireTool('kubectl'), () => {
  const fake = fakeWithKubectl({ serviceCidr: addresses.cidr });
  let api: FakeApiServer;
  let k: Kubectl;
  before(() => {
    ({ api, kubectl: k } = fake);
  });

  it('applies ServiceAccount, RBAC, PodDisruptionBudget, Secret and Namespace with default validation, and re-applies a change', async () => {
    const objects = (minAvailable: number) => [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'ops' } },
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'op', namespace: 'ops' } },
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'op', namespace: 'ops' }, stringData: { token: 'x' } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'op' },
        rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['list'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'op' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'op' },
        subjects: [{ kind: 'ServiceAccount', name: 'op', namespace: 'ops' }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'op', namespace: 'ops' },
        rules: [{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get'] }],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'op', namespace: 'ops' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'op' },
        subjects: [{ kind: 'ServiceAccount', name: 'op', namespace: 'ops' }],
      },
      {
        apiVersion: 'policy/v1',
        kind: 'PodDisruptionBudget',
        metadata: { name: 'op', namespace: 'ops' },
        spec: { minAvailable, selector: { matchLabels: { app: 'op' } } },
      },
    ];
    const file = await k.manifest('install.yaml', ...objects(1));
    const created = await k('apply', '-f', file);
    for (const kind of [
      'namespace/ops',
      'serviceaccount/op',
      'secret/op',
      'clusterrole.rbac.authorization.k8s.io/op',
      'clusterrolebinding.rbac.authorization.k8s.io/op',
      'role.rbac.authorization.k8s.io/op',
      'rolebinding.rbac.authorization.k8s.io/op',
      'poddisruptionbudget.policy/op',
    ]) {
      assert.match(created, new RegExp(`^${kind.replace(/\./g, '\\.')} created$`, 'm'));
    }
    await k.manifest('install.yaml', ...objects(2));
    const reapplied = await k('apply', '-f', file);
    assert.match(reapplied, /^poddisruptionbudget\.policy\/op configured$/m);
    assert.match(reapplied, /^clusterrole\.rbac\.authorization\.k8s\.io\/op unchanged$/m);
    assert.equal(await k('get', 'pdb', 'op', '-n', 'ops', '-o', 'jsonpath={.spec.minAvailable}'), '2');
    assert.ok(
      api.requests.some((request) => request.nonResourceURL === '/openapi/v2' && request.code === 200),
      're-apply read /openapi/v2',
    );
    assert.deepEqual(
      table(await k('get', 'clusterrolebinding', 'op')).map((row) => row.slice(0, 2)),
      [
        ['NAME', 'ROLE'],
        ['op', 'ClusterRole/op'],
      ],
    );
  });

  it('get svc,deploy,pods prints the usual columns', async () => {
    const core = api.kubeConfig.makeApiClient(CoreV1Api);
    const apps = api.kubeConfig.makeApiClient(AppsV1Api);
    await core.createNamespacedService({
      namespace: 'default',
      body: {
        metadata: { name: 'web' },
        spec: {
          type: 'NodePort',
          selector: { app: 'web' },
          ports: [
            { port: 80, nodePort: 30080 },
            { port: 53, protocol: 'UDP' },
          ],
        },
      },
    });
    const labels = { app: 'web' };
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'web', image: 'web:1' }] } },
        },
      },
    });
    await apps.patchNamespacedDeploymentStatus(
      {
        name: 'web',
        namespace: 'default',
        body: { status: { replicas: 2, readyReplicas: 1, updatedReplicas: 2, availableReplicas: 1 } },
      },
      mergePatch,
    );
    await core.createNamespacedPod({
      namespace: 'default',
      body: {
        metadata: { name: 'web-1', labels },
        spec: { nodeName: 'node-a', containers: [{ name: 'web', image: 'web:1' }] },
      },
    });
    await core.patchNamespacedPodStatus(
      {
        name: 'web-1',
        namespace: 'default',
        body: {
          status: {
            phase: 'Running',
            podIP: '10.1.0.7',
            containerStatuses: [
              {
                name: 'web',
                image: 'web:1',
                imageID: '',
                ready: false,
                restartCount: 3,
                state: { waiting: { reason: 'CrashLoopBackOff' } },
              },
            ],
          },
        },
      },
      mergePatch,
    );

    const printed = (await k('get', 'svc,deploy,pods')).split('\n\n').map(table);
    const clusterIp = (await core.readNamespacedService({ name: 'web', namespace: 'default' })).spec?.clusterIP;
    assert.deepEqual(printed[0]?.[0], ['NAME', 'TYPE', 'CLUSTER-IP', 'EXTERNAL-IP', 'PORT(S)', 'AGE']);
    assert.deepEqual(printed[0]?.[1]?.slice(0, 5), [
      'service/web',
      'NodePort',
      clusterIp,
      '<none>',
      `80:30080/TCP,53:${(await core.readNamespacedService({ name: 'web', namespace: 'default' })).spec?.ports?.[1]?.nodePort}/UDP`,
    ]);
    assert.deepEqual(printed[1]?.[0], ['NAME', 'READY', 'UP-TO-DATE', 'AVAILABLE', 'AGE']);
    assert.deepEqual(printed[1]?.[1]?.slice(0, 4), ['deployment.apps/web', '1/2', '2', '1']);
    assert.deepEqual(printed[2]?.[0], ['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
    assert.deepEqual(printed[2]?.[1]?.slice(0, 4), ['pod/web-1', '0/1', 'CrashLoopBackOff', '3']);
    const wide = table(await k('get', 'pods', '-o', 'wide'));
    assert.deepEqual([wide[0]?.[5], wide[0]?.[6], wide[1]?.[5], wide[1]?.[6]], ['IP', 'NODE', '10.1.0.7', 'node-a']);
  });

  it("get prints a CRD's printer columns, in lists, for one object, and as it watches", async () => {
    await k('apply', '-f', await k.manifest('crd.yaml', crd));
    await k(
      'apply',
      '-f',
      await k.manifest('release.yaml', {
        apiVersion: 'canary-l4.io/v1alpha1',
        kind: 'CanaryRelease',
        metadata: { name: 'w1' },
        spec: { size: 3 },
      }),
    );
    const printed = await k('get', 'canaryreleases');
    assert.deepEqual(table(printed)[0], ['NAME', 'PHASE', 'SIZE', 'READY', 'AGE']);
    // No phase or Ready condition yet: empty cells; the date column is printed as an age.
    assert.match(printed.split('\n')[1] ?? '', /^w1\s+3\s+\d+s$/);

    const watcher = spawn(
      'kubectl',
      ['--kubeconfig', api.kubeconfigPath, '--cache-dir', `${k.home}/cache`, 'get', 'cr', '-w'],
      { env: { ...process.env, HOME: k.home }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let seen = '';
    watcher.stdout.setEncoding('utf8').on('data', (chunk: string) => (seen += chunk));
    try {
      await waitFor(
        () => /^w1\s/m.test(seen),
        () => `w1 in kubectl get -w's output:\n${seen}`,
        10_000,
      );
      await k(
        'patch',
        'canaryrelease',
        'w1',
        '--subresource=status',
        '--type=merge',
        '-p',
        '{"status":{"phase":"Ready","conditions":[{"type":"Ready","status":"True"}]}}',
      );
      await waitFor(
        () => /^w1\s+Ready\s+3\s+True\s/m.test(seen),
        () => `w1 Ready in kubectl get -w's output:\n${seen}`,
        10_000,
      );
      assert.equal(seen.match(/^NAME\s/gm)?.length, 1, 'the header once');
    } finally {
      watcher.kill();
    }
    assert.deepEqual(table(await k('get', 'canaryrelease', 'w1'))[1]?.slice(0, 4), ['w1', 'Ready', '3', 'True']);
  });

  it('client-node keeps getting the objects themselves', async () => {
    const list = await api.kubeConfig.makeApiClient(CoreV1Api).listNamespacedPod({ namespace: 'default' });
    assert.equal(list.items[0]?.metadata?.name, 'web-1');
  });
});

describe('Table helpers', () => {
  const durations: [number, string][] = [
    [0, '0s'],
    [119_000, '119s'],
    [125_000, '2m5s'],
    [600_000, '10m'],
    [3 * 3600_000 + 5 * 60_000, '3h5m'],
    [30 * 3600_000, '30h'],
    [50 * 3600_000, '2d2h'],
    [400 * 86400_000, '400d'],
  ];
  for (const [ms, text] of durations)
    it(`${ms} ms is ${text}, as kubectl says ages`, () => assert.equal(humanDuration(ms), text));

  const object = {
    status: {
      conditions: [
        { type: 'A', status: 'False' },
        { type: 'Ready', status: 'True' },
      ],
      ports: [{ port: 80 }, { port: 53 }],
    },
  };
  const paths: [string, unknown][] = [
    ['.status.conditions[?(@.type=="Ready")].status', 'True'],
    ['.status.ports[1].port', 53],
    ['.status.ports[*].port', 80],
    ['.status.missing', undefined],
    ['.status.conditions[?(@.type=="B")].status', undefined],
  ];
  for (const [path, value] of paths)
    it(`JSONPath ${path} finds ${JSON.stringify(value)}`, () => assert.equal(jsonPath(object, path), value));
});
