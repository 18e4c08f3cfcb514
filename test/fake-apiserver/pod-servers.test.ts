/**
 * test/support/cluster/pod-servers.ts with the fake's Deployment simulation: a server per Running pod and
 * container port (TCP and UDP) answering with the pod's image, following pods through a rollout, a
 * deletion and a relabel, and nothing left listening after stop().
 */
import assert from 'node:assert/strict';
import { createSocket } from 'node:dgram';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { type FakeApiServer, startFakeApiServer } from '../support/fake-apiserver/index.ts';
import { type PodServers, startPodServers } from '../support/cluster/pod-servers.ts';
import { refused, tcpAnswer } from '../support/cluster/api-fixtures.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const podNet = loopbackRange(import.meta.url);
const serviceNet = loopbackRange(import.meta.url, 1);

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const strategicPatch = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);

function udpAnswer(ip: string, port: number, datagram: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(`no answer from ${ip}:${port}/UDP`));
    }, 2000);
    socket.on('message', (message) => {
      clearTimeout(timer);
      socket.close();
      resolve(message.toString('utf8'));
    });
    socket.send(datagram, port, ip);
  });
}

describe('pod servers', () => {
  let api: FakeApiServer;
  let apps: AppsV1Api;
  let core: CoreV1Api;
  let servers: PodServers | undefined;
  const running = async (app: string) =>
    (await core.listNamespacedPod({ namespace: 'default', labelSelector: `app=${app}` })).items.filter(
      (pod) => pod.status?.phase === 'Running' && pod.status.podIP && !pod.metadata?.deletionTimestamp,
    );
  /** listening() for exactly these pods: TCP 8080 and UDP 8081 each. */
  const servedFor = (pods: V1Pod[]) =>
    pods.flatMap((pod) => [`${pod.status!.podIP}:8080/TCP`, `${pod.status!.podIP}:8081/UDP`]).sort();
  const deploy = (name: string, image: string, replicas: number, env: { name: string; value: string }[] = []) =>
    apps.createNamespacedDeployment({
      namespace: 'default',
      body: {
        metadata: { name },
        spec: {
          replicas,
          selector: { matchLabels: { app: name } },
          template: {
            metadata: { labels: { app: name } },
            spec: {
              containers: [
                { name: 'web', image, env, ports: [{ containerPort: 8080 }, { containerPort: 8081, protocol: 'UDP' }] },
              ],
            },
          },
        },
      },
    });

  before(async () => {
    api = await startFakeApiServer({
      serviceCidr: serviceNet.cidr,
      simulateDeployments: { podReadyDelayMs: 100, podCidr: podNet.cidr },
    });
    apps = api.kubeConfig.makeApiClient(AppsV1Api);
    core = api.kubeConfig.makeApiClient(CoreV1Api);
  });
  after(async () => {
    await servers?.stop();
    await api?.stop();
  });

  it('serves each matching Running pod on its container ports and follows the pods coming and going', async () => {
    servers = await startPodServers({ kubeConfig: api.kubeConfig, namespace: 'default', labelSelector: 'app=echo' });
    assert.deepEqual(servers.listening(), []);
    await deploy('echo', 'example/web:1.0', 2);
    await deploy('other', 'example/other:1.0', 1);
    const echo = (await waitFor(async () => {
      const pods = await running('echo');
      return pods.length === 2 &&
        (await running('other')).length === 1 &&
        servers!.listening().join() === servedFor(pods).join()
        ? pods
        : undefined;
    }, 'servers for both echo pods'))!;
    for (const pod of echo) {
      assert.equal(await tcpAnswer(pod.status!.podIP!, 8080), 'example/web:1.0');
      assert.equal(await udpAnswer(pod.status!.podIP!, 8081, 'ping'), 'example/web:1.0:ping');
    }
    const [other] = await running('other');
    assert.ok(await refused(other!.status!.podIP!, 8080), 'a pod the selector does not match is not served');

    // A rollout: the new pods answer with the new image, the old ones' servers are gone.
    await apps.patchNamespacedDeployment(
      {
        name: 'echo',
        namespace: 'default',
        body: { spec: { template: { spec: { containers: [{ name: 'web', image: 'example/web:2.0' }] } } } },
      },
      strategicPatch,
    );
    const rolled = (await waitFor(async () => {
      const pods = await running('echo');
      return pods.length === 2 &&
        pods.every((pod) => pod.spec?.containers[0]?.image === 'example/web:2.0') &&
        servers!.listening().join() === servedFor(pods).join()
        ? pods
        : undefined;
    }, 'servers for the new pods only'))!;
    for (const pod of rolled) assert.equal(await tcpAnswer(pod.status!.podIP!, 8080), 'example/web:2.0');
    for (const pod of echo) assert.ok(await refused(pod.status!.podIP!, 8080), `${pod.metadata?.name}'s server closed`);

    // A deleted pod's servers close; its replacement is served.
    const [gone, kept] = rolled;
    await core.deleteNamespacedPod({ name: gone!.metadata!.name!, namespace: 'default' });
    await waitFor(async () => {
      const pods = await running('echo');
      return (
        pods.length === 2 &&
        !pods.some((pod) => pod.metadata?.uid === gone!.metadata?.uid) &&
        servers!.listening().join() === servedFor(pods).join()
      );
    }, 'the replacement served, the deleted pod not');
    assert.ok(await refused(gone!.status!.podIP!, 8080));

    // A pod relabelled out of the selector is no longer served (its ReplicaSet still owns it).
    await core.patchNamespacedPod(
      { name: kept!.metadata!.name!, namespace: 'default', body: { metadata: { labels: { app: 'elsewhere' } } } },
      mergePatch,
    );
    await waitFor(
      () => !servers!.listening().some((key) => key.startsWith(`${kept!.status!.podIP}:`)),
      "the relabelled pod's servers closed",
    );
    assert.ok(await refused(kept!.status!.podIP!, 8080));

    // Nor is a pod that stopped running (its podIP stays on the object).
    const [failing] =
      (await waitFor(async () => {
        const pods = await running('echo');
        return pods.length === 2 && pods.every((pod) => servers!.listening().includes(`${pod.status!.podIP}:8080/TCP`))
          ? pods
          : undefined;
      }, 'two served echo pods again')) ?? [];
    await core.patchNamespacedPodStatus(
      { name: failing!.metadata!.name!, namespace: 'default', body: { status: { phase: 'Failed' } } },
      mergePatch,
    );
    await waitFor(
      () => !servers!.listening().some((key) => key.startsWith(`${failing!.status!.podIP}:`)),
      "the failed pod's servers closed",
    );
    assert.ok(await refused(failing!.status!.podIP!, 8080));

    const last = servers.listening();
    assert.ok(last.length > 0);
    await servers.stop();
    assert.deepEqual(servers.listening(), []);
    for (const key of last.filter((k) => k.endsWith('/TCP')))
      assert.ok(await refused(key.split(':')[0]!, 8080), `${key} closed by stop()`);
  });

  it('a pod told to misbehave (FAKE_POD_FAULT): 3 of every 10 TCP connections reset; UDP silent', async () => {
    await servers?.stop();
    servers = await startPodServers({
      kubeConfig: api.kubeConfig,
      namespace: 'default',
      labelSelector: 'app in (resets,silent)',
    });
    await deploy('resets', 'example/web:2.1', 1, [{ name: 'FAKE_POD_FAULT', value: 'reset=30' }]);
    await deploy('silent', 'example/dns:2.1', 1, [{ name: 'FAKE_POD_FAULT', value: 'udp-silent' }]);
    const [resets, silent] =
      (await waitFor(async () => {
        const pods = [...(await running('resets')), ...(await running('silent'))];
        return pods.length === 2 && servers!.listening().join() === servedFor(pods).join() ? pods : undefined;
      }, 'both pods served')) ?? [];
    const outcomes: string[] = [];
    for (let i = 0; i < 20; i++)
      outcomes.push(
        await tcpAnswer(resets!.status!.podIP!, 8080).catch((err: NodeJS.ErrnoException) => err.code ?? 'error'),
      );
    assert.deepEqual(outcomes.filter((outcome) => outcome === 'ECONNRESET').length, 6, outcomes.join());
    assert.ok(outcomes.every((outcome) => outcome === 'ECONNRESET' || outcome === 'example/web:2.1'));
    assert.equal(await udpAnswer(resets!.status!.podIP!, 8081, 'x'), 'example/web:2.1:x', 'only TCP resets');
    await assert.rejects(udpAnswer(silent!.status!.podIP!, 8081, 'x'), /no answer/);
    assert.equal(await tcpAnswer(silent!.status!.podIP!, 8080), 'example/dns:2.1', 'only UDP is silent');
  });

  it('answers what `answer` derives from the pod', async () => {
    await servers?.stop();
    servers = await startPodServers({
      kubeConfig: api.kubeConfig,
      namespace: 'default',
      labelSelector: 'app=other',
      answer: (pod) => pod.metadata!.name!,
    });
    const [pod] = await running('other');
    await waitFor(() => servers!.listening().includes(`${pod!.status!.podIP}:8080/TCP`), 'the other pod served');
    assert.equal(await tcpAnswer(pod!.status!.podIP!, 8080), pod!.metadata!.name);
    assert.equal(await udpAnswer(pod!.status!.podIP!, 8081, 'x'), `${pod!.metadata!.name}:x`);
  });
});
