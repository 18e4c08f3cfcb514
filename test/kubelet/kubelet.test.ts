// The kubelet simulation (test/support/cluster/kubelet.ts) does what the manager's tests rely on: pods for
// labelled Deployments, real processes with the pod's args and env, readiness from the probe, a
// rollout on a template change, restarts, an image it cannot pull, and nothing left when the
// Deployment goes.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, CoreV1Api, type V1Deployment, type V1Pod } from '@kubernetes/client-node';

import { startFakeApiServer, type FakeApiServer } from '../support/fake-apiserver/index.ts';
import { startKubelet, type Kubelet } from '../support/cluster/kubelet.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);

/** A tiny "image": an admin server whose /readyz answers, printing what it was started with. */
const PROGRAM = `
import http from 'node:http';
const server = http.createServer((request, response) => { response.statusCode = request.url === '/ready' ? 200 : 404; response.end(); });
server.listen(Number(process.env.ADMIN_PORT), '127.0.0.1', () => console.log(JSON.stringify({
  adminPort: server.address().port, args: process.argv.slice(2),
  env: { POD: process.env.POD, NS: process.env.NS, IP: process.env.IP, STATE: process.env.STATE, KUBECONFIG: process.env.KUBECONFIG, EXTRA: process.env.EXTRA },
})));
if (process.env.EXIT_AFTER_MS) setTimeout(() => process.exit(3), Number(process.env.EXIT_AFTER_MS));
if (process.env.DRAIN_MS) process.on('SIGTERM', () => setTimeout(() => process.exit(0), Number(process.env.DRAIN_MS)));
`;

describe('the kubelet simulation', { timeout: 60_000 }, () => {
  let api: FakeApiServer;
  let kubelet: Kubelet;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  let dir: string;

  const pods = async (): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: 'default' })).items.filter(
      (pod) => pod.metadata?.deletionTimestamp == null,
    );
  const ready = (pod: V1Pod) =>
    pod.status?.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True') ?? false;
  const printed = (pod: string) =>
    JSON.parse(
      kubelet
        .output(pod)
        .split('\n')
        .find((line) => line.startsWith('{')) ?? '{}',
    ) as { args?: string[]; env?: Record<string, string> };

  function deployment(
    name: string,
    image: string,
    env: Record<string, string>,
    labels: Record<string, string> = { run: 'yes' },
  ): V1Deployment {
    return {
      metadata: { name, labels },
      spec: {
        replicas: 2,
        selector: { matchLabels: { app: name } },
        template: {
          metadata: { labels: { app: name } },
          spec: {
            serviceAccountName: 'runner',
            containers: [
              {
                name: 'main',
                image,
                args: ['serve', '--fast'],
                env: [
                  { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
                  { name: 'NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
                  { name: 'IP', valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } },
                  { name: 'STATE', value: '/var/state/data' },
                  { name: 'ADMIN_PORT', value: '9000' },
                  ...Object.entries(env).map(([key, value]) => ({ name: key, value })),
                ],
                ports: [{ name: 'admin', containerPort: 9000 }],
                readinessProbe: { httpGet: { path: '/ready', port: 'admin' } },
                volumeMounts: [{ name: 'state', mountPath: '/var/state' }],
              },
            ],
            volumes: [{ name: 'state', emptyDir: {} }],
          },
        },
      },
    };
  }

  before(async () => {
    api = await startFakeApiServer({ serviceCidr: serviceNet.cidr });
    apps = api.kubeConfig.makeApiClient(AppsV1Api);
    core = api.kubeConfig.makeApiClient(CoreV1Api);
    dir = mkdtempSync(join(tmpdir(), 'kubelet-test-'));
    writeFileSync(join(dir, 'program.mjs'), PROGRAM);
    kubelet = await startKubelet({
      kubeConfig: api.kubeConfig,
      apiUrl: api.url,
      labelSelector: 'run=yes',
      podNet: podNet.prefix,
      images: { 'tiny:1': [process.execPath, join(dir, 'program.mjs')] },
      adminPort: { env: 'ADMIN_PORT', fromLog: /"adminPort":(\d+)/ },
      env: { EXTRA: 'from-the-test' },
    });
  });
  after(async () => {
    await kubelet.stop();
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('runs the pods of a labelled Deployment as processes with their args and env, Ready once the probe answers', async () => {
    await apps.createNamespacedDeployment({ namespace: 'default', body: deployment('tiny', 'tiny:1', {}) });
    await waitFor(async () => (await pods()).filter(ready).length === 2, 'two Ready pods', 10_000);
    const running = await pods();
    assert.deepEqual(kubelet.running(), running.map((pod) => pod.metadata!.name!).sort());
    for (const pod of running) {
      assert.equal(pod.metadata?.labels?.app, 'tiny');
      assert.match(pod.metadata?.labels?.['pod-template-hash'] ?? '', /^[bcdfghjklmnpqrstvwxz2456789]{1,10}$/);
      assert.match(pod.status?.podIP ?? '', podNet.addressPattern);
      assert.equal(pod.status?.phase, 'Running');
      const { args, env } = printed(pod.metadata!.name!);
      assert.deepEqual(args, ['serve', '--fast']);
      assert.deepEqual(
        [env?.POD, env?.NS, env?.IP, env?.EXTRA],
        [pod.metadata?.name, 'default', pod.status?.podIP, 'from-the-test'],
      );
      assert.ok(
        env?.STATE?.endsWith('/data') && statSync(env.STATE.slice(0, -'/data'.length)).isDirectory(),
        'the emptyDir is a directory of its own',
      );
      assert.match(readFileSync(env!.KUBECONFIG!, 'utf8'), /"token":"system:serviceaccount:default:runner"/);
    }
    const status = (await apps.readNamespacedDeployment({ name: 'tiny', namespace: 'default' })).status;
    assert.deepEqual([status?.replicas, status?.readyReplicas, status?.updatedReplicas], [2, 2, 2]);
  });

  it('rolls to a new template: the new pods first, the old ones once they are Ready', async () => {
    const before = (await pods()).map((pod) => pod.metadata!.name!);
    await apps.replaceNamespacedDeployment({
      name: 'tiny',
      namespace: 'default',
      body: {
        ...deployment('tiny', 'tiny:1', { VERSION: '2' }),
        metadata: {
          name: 'tiny',
          labels: { run: 'yes' },
          resourceVersion: (await apps.readNamespacedDeployment({ name: 'tiny', namespace: 'default' })).metadata
            ?.resourceVersion,
        },
      },
    });
    await waitFor(
      async () => {
        const now = await pods();
        return now.length === 2 && now.every((pod) => ready(pod) && !before.includes(pod.metadata!.name!));
      },
      'two new Ready pods and no old one',
      10_000,
    );
    await waitFor(() => kubelet.running().every((name) => !before.includes(name)), 'the old processes to end');
  });

  it('restarts a container that exits, and says CrashLoopBackOff meanwhile', async () => {
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: {
        ...deployment('crashy', 'tiny:1', { EXIT_AFTER_MS: '300' }),
        spec: { ...deployment('crashy', 'tiny:1', { EXIT_AFTER_MS: '300' }).spec!, replicas: 1 },
      },
    });
    await waitFor(
      async () =>
        (await pods()).some(
          (pod) =>
            pod.metadata?.name?.startsWith('crashy-') && (pod.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1,
        ),
      'a restart',
      10_000,
    );
    await apps.deleteNamespacedDeployment({ name: 'crashy', namespace: 'default' });
  });

  it('an image it does not know is ImagePullBackOff, never Ready', async () => {
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: {
        ...deployment('missing', 'nowhere:1', {}),
        spec: { ...deployment('missing', 'nowhere:1', {}).spec!, replicas: 1 },
      },
    });
    await waitFor(
      async () =>
        (await pods()).some(
          (pod) =>
            pod.metadata?.name?.startsWith('missing-') &&
            pod.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ImagePullBackOff',
        ),
      'ImagePullBackOff',
      10_000,
    );
    assert.ok(!(await pods()).some((pod) => pod.metadata?.name?.startsWith('missing-') && ready(pod)));
    await apps.deleteNamespacedDeployment({ name: 'missing', namespace: 'default' });
  });

  it("lists a deleted pod's process as running until it has exited (a proxy drains after SIGTERM)", async () => {
    const single = deployment('drainy', 'tiny:1', { DRAIN_MS: '1500' });
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: { ...single, spec: { ...single.spec!, replicas: 1 } },
    });
    await waitFor(
      async () => (await pods()).some((pod) => pod.metadata?.name?.startsWith('drainy-') && ready(pod)),
      'a Ready pod',
      10_000,
    );
    const [name] = kubelet.running().filter((pod) => pod.startsWith('drainy-'));
    await core.deleteNamespacedPod({ name: name!, namespace: 'default' });
    await waitFor(
      async () => !(await pods()).some((pod) => pod.metadata?.name === name),
      'the pod gone from the API',
      5_000,
    );
    assert.ok(kubelet.running().includes(name!), 'still running: its process drains');
    await waitFor(() => !kubelet.running().includes(name!), 'its process to exit', 5_000);
    await apps.deleteNamespacedDeployment({ name: 'drainy', namespace: 'default' });
  });

  it('leaves Deployments without the label alone, and ends every process of a deleted Deployment', async () => {
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: deployment('other', 'tiny:1', {}, { run: 'no' }),
    });
    await apps.deleteNamespacedDeployment({ name: 'tiny', namespace: 'default' });
    await waitFor(
      async () => (await pods()).length === 0 && kubelet.running().length === 0,
      'no pod and no process left',
      10_000,
    );
  });
});
