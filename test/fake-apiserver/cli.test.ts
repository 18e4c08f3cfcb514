/** `npm run fake-apiserver` entry point: flags, kubeconfig output, the Deployment simulation's flags, serving until SIGTERM. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { AppsV1Api, CoreV1Api } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { tcpAnswer } from '../support/cluster/api-fixtures.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';
import { Http1KubeConfig } from '../../src/kube/client.ts';

const servedNet = loopbackRange(import.meta.url);
const simulatedPodNet = loopbackRange(import.meta.url, 1);
const simulatedServiceNet = loopbackRange(import.meta.url, 2);
const networkServiceNet = loopbackRange(import.meta.url, 3);
const networkPodNet = loopbackRange(import.meta.url, 4);
const terminationNet = loopbackRange(import.meta.url, 5);

const main = fileURLToPath(new URL('../support/fake-apiserver/main.ts', import.meta.url));

/** `npm run fake-apiserver -- <args>` until it has printed `ready`; its output, server URL and a client-node config for it. */
async function serve(args: string[], ready: string) {
  const child = spawn(process.execPath, [main, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.setEncoding('utf8');
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (d: string) => {
      text += d;
      if (text.includes(ready)) resolve();
    });
    child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
  });
  const stop = async () => {
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    return code as number | null;
  };
  const file = parse(await readFile(/kubeconfig: (\S+)/.exec(text)![1]!, 'utf8'));
  const server: string = file.clusters[0].cluster.server;
  // client-node needs skipTLSVerify for plain http; kubectl (the file's user) does not.
  const kubeConfig = new Http1KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u', token: file.users[0].user.token }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u', namespace: file.contexts[0].context.namespace }],
    currentContext: 'x',
  });
  return { text, server, kubeConfig, stop };
}

it('serves with --port 0 --service-cidr --kubeconfig-out and stops on SIGTERM', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'fake-cli-'));
  const out = join(dir, 'kubeconfig');
  const { text, server, kubeConfig, stop } = await serve(
    ['--port', '0', '--service-cidr', servedNet.cidr, '--kubeconfig-out', out],
    'kubeconfig:',
  );
  try {
    assert.match(text, /listening on http:\/\/127\.0\.0\.1:\d+/);
    assert.ok(text.includes(`kubeconfig: ${out}`));
    assert.ok(text.includes(server));
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const s = await core.createNamespacedService({
      namespace: 'default',
      body: { metadata: { name: 'cli' }, spec: { ports: [{ port: 80 }] } },
    });
    assert.ok(s.spec!.clusterIP!.startsWith(`${servedNet.prefix}.`), s.spec!.clusterIP);
    // Faults reach it over HTTP, from another process.
    assert.match(text, /fault injection: curl -XPOST http:\/\/127\.0\.0\.1:\d+\/_fake\/faults\/latency/);
    const armed = await fetch(`${server}/_fake/faults/fail-next`, {
      method: 'POST',
      body: JSON.stringify({ verb: 'create', resource: 'services', code: 503 }),
    });
    assert.equal(armed.status, 200);
    await assert.rejects(
      core.createNamespacedService({
        namespace: 'default',
        body: { metadata: { name: 'cli2' }, spec: { ports: [{ port: 80 }] } },
      }),
      (e: any) => e.code === 503,
    );
  } finally {
    const code = await stop();
    await rm(dir, { recursive: true, force: true });
    assert.equal(code, 0);
  }
});

it("--simulate-deployments runs a Deployment's pods, with --pod-cidr addresses Ready after --pod-ready-delay-ms", async () => {
  const { text, kubeConfig, stop } = await serve(
    [
      '--port',
      '0',
      '--service-cidr',
      simulatedServiceNet.cidr,
      '--simulate-deployments',
      '--pod-ready-delay-ms',
      '50',
      '--pod-cidr',
      simulatedPodNet.cidr,
    ],
    'simulating Deployments',
  );
  try {
    assert.ok(
      text.includes(`simulating Deployments: pods in ${simulatedPodNet.cidr}, Ready 50 ms after they run`),
      text,
    );
    const labels = { app: 'cli' };
    await kubeConfig.makeApiClient(AppsV1Api).createNamespacedDeployment({
      namespace: 'default',
      body: {
        metadata: { name: 'cli' },
        spec: {
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'cli:1' }] } },
        },
      },
    });
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const pod = await waitFor(
      async () =>
        (await core.listNamespacedPod({ namespace: 'default' })).items.find((p) =>
          p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        ),
      'a Ready pod',
    );
    assert.match(pod?.status?.podIP ?? '', simulatedPodNet.addressPattern);
  } finally {
    assert.equal(await stop(), 0);
  }
});

it('--pod-termination-ms bounds how long a deleted pod terminates', async () => {
  const { text, kubeConfig, stop } = await serve(
    [
      '--port',
      '0',
      '--service-cidr',
      `${terminationNet.prefix}.0/25`,
      '--simulate-deployments',
      '--pod-ready-delay-ms',
      '50',
      '--pod-cidr',
      `${terminationNet.prefix}.128/25`,
      '--pod-termination-ms',
      '200',
    ],
    'simulating Deployments',
  );
  try {
    assert.match(text, /terminating for up to 200 ms when deleted/);
    const labels = { app: 'cli' };
    await kubeConfig.makeApiClient(AppsV1Api).createNamespacedDeployment({
      namespace: 'default',
      body: {
        metadata: { name: 'cli' },
        spec: {
          selector: { matchLabels: labels },
          template: { metadata: { labels }, spec: { containers: [{ name: 'c', image: 'cli:1' }] } },
        },
      },
    });
    const core = kubeConfig.makeApiClient(CoreV1Api);
    const pod = await waitFor(
      async () =>
        (await core.listNamespacedPod({ namespace: 'default' })).items.find((p) =>
          p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        ),
      'a Ready pod',
    );
    const name = pod!.metadata!.name!;
    const since = performance.now();
    const deleted = await core.deleteNamespacedPod({ name, namespace: 'default' });
    assert.equal(deleted.metadata?.deletionGracePeriodSeconds, 30);
    await waitFor(
      async () =>
        !(await core.listNamespacedPod({ namespace: 'default' })).items.some((p) => p.metadata?.name === name),
      'the pod gone',
    );
    const gone = performance.now() - since;
    // The default (1000 ms) would keep it well past this.
    assert.ok(gone >= 150 && gone < 700, `gone ${Math.round(gone)} ms after the DELETE`);
  } finally {
    assert.equal(await stop(), 0);
  }
});

it('rejects a bad flag with a usage message', async () => {
  const child = spawn(process.execPath, [main, '--bogus'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const [code] = await once(child, 'exit');
  assert.equal(code, 2);
  assert.match(err, /usage: fake-apiserver/);
});

it('refuses --pod-cidr or --pod-termination-ms without --simulate-deployments, a bad --pod-ready-delay-ms or --pod-termination-ms and a bad --pod-cidr', async () => {
  for (const [args, message] of [
    [['--pod-cidr', simulatedPodNet.cidr], /need --simulate-deployments/],
    [['--pod-termination-ms', '100'], /need --simulate-deployments/],
    [['--simulate-deployments', '--pod-ready-delay-ms', 'soon'], /invalid --pod-ready-delay-ms: soon/],
    [['--simulate-deployments', '--pod-termination-ms', '1.5'], /invalid --pod-termination-ms: 1.5/],
    [['--simulate-deployments', '--pod-cidr', simulatedPodNet.ip(0)], /invalid pod CIDR/],
  ] as const) {
    // Bounded: a fake that wrongly starts serving is killed (and the exit code is then not 2).
    const child = spawn(process.execPath, [main, '--port', '0', ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 10_000,
      killSignal: 'SIGKILL',
    });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const [code] = await once(child, 'exit');
    assert.equal(code, 2);
    assert.match(err, message);
  }
});

it("--simulate-network: a Service's cluster IP reaches its Ready pods, which answer with their image", async () => {
  const { text, kubeConfig, stop } = await serve(
    [
      '--port',
      '0',
      '--service-cidr',
      networkServiceNet.cidr,
      '--simulate-deployments',
      '--pod-ready-delay-ms',
      '50',
      '--pod-cidr',
      networkPodNet.cidr,
      '--simulate-network',
    ],
    'simulating the network',
  );
  try {
    assert.match(text, /simulating the network of namespace default/);
    const labels = { app: 'net' };
    await kubeConfig.makeApiClient(AppsV1Api).createNamespacedDeployment({
      namespace: 'default',
      body: {
        metadata: { name: 'net' },
        spec: {
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: { containers: [{ name: 'c', image: 'example/net:1', ports: [{ containerPort: 8000 }] }] },
          },
        },
      },
    });
    const service = await kubeConfig.makeApiClient(CoreV1Api).createNamespacedService({
      namespace: 'default',
      body: { metadata: { name: 'net' }, spec: { selector: labels, ports: [{ port: 9000, targetPort: 8000 }] } },
    });
    const answer = await waitFor(
      async () => (await tcpAnswer(service.spec!.clusterIP!, 9000).catch(() => '')) || undefined,
      'an answer through the Service',
      10_000,
    );
    assert.equal(answer, 'example/net:1');
  } finally {
    assert.equal(await stop(), 0);
  }
});

it('without --service-cidr, two fakes on one host each take a loopback block of their own, say it, and free it on exit', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'fake-cli-'));
  const env = (name: string) => join(dir, `${name}.env`);
  const first = await serve(['--port', '0', '--env-out', env('first'), '--simulate-deployments'], 'kubeconfig:');
  let second: Awaited<ReturnType<typeof serve>> | undefined;
  try {
    second = await serve(['--port', '0', '--env-out', env('second'), '--simulate-deployments'], 'kubeconfig:');
    const claimed = [first, second].map(({ text }) => {
      const match =
        /^loopback block 127\.(\d+)\.0\.0\/16, this fake's alone: Services 127\.\1\.10\.0\/24, pods 127\.\1\.200\.0\/24; 127\.\1\.0\.1 for your proxies/m.exec(
          text,
        );
      assert.ok(match, text);
      return match[1];
    });
    assert.notEqual(claimed[0], claimed[1], 'two fakes, two blocks');
    assert.equal(
      await readFile(env('second'), 'utf8'),
      `FAKE_SERVICE_CIDR=127.${claimed[1]}.10.0/24\nFAKE_POD_CIDR=127.${claimed[1]}.200.0/24\nFAKE_ADDRESS=127.${claimed[1]}.0.1\n`,
    );
    const service = await second.kubeConfig.makeApiClient(CoreV1Api).createNamespacedService({
      namespace: 'default',
      body: { metadata: { name: 'mine' }, spec: { ports: [{ port: 80 }] } },
    });
    assert.match(service.spec?.clusterIP ?? '', new RegExp(`^127\\.${claimed[1]}\\.10\\.\\d+$`));
    assert.equal(await second.stop(), 0);
    // Its block is free again: the next fake takes it.
    second = await serve(['--port', '0', '--env-out', env('third')], 'kubeconfig:');
    assert.match(second.text, new RegExp(`^loopback block 127\\.${claimed[1]}\\.0\\.0/16`, 'm'));
  } finally {
    assert.equal(await first.stop(), 0);
    if (second !== undefined) await second.stop();
    await rm(dir, { recursive: true, force: true });
  }
});
