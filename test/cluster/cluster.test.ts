// `npm run cluster` as a newcomer starts it (npm run test:cluster; skipped by npm test): one line
// once ready, a real kube-apiserver answering kubectl with its version and the API groups a release
// uses, RBAC refusing a bare ServiceAccount, a node whose pods run; SIGTERM stops everything and
// leaves no process, port or route behind.

import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { REAL_API } from '../support/cluster/api-under-test.ts';

import { kubectlFor, type Kubectl } from '../support/cluster/api-fixtures.ts';
import { pinnedVersions } from './build.ts';
import { POD_NETWORK } from './pod-network.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const MAIN = new URL('./main.ts', import.meta.url).pathname;

/** Whether anything still listens on 127.0.0.1:port. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

/** The pids of `pid`'s live descendants. */
async function descendants(pid: number): Promise<number[]> {
  const { stdout } = await promisify(execFile)('ps', ['-e', '-o', 'pid=,ppid=']);
  const children = new Map<number, number[]>();
  for (const line of stdout.trim().split('\n')) {
    const [child, parent] = line.trim().split(/\s+/).map(Number);
    children.set(parent!, [...(children.get(parent!) ?? []), child!]);
  }
  const found: number[] = [];
  const walk = (of: number) => {
    for (const child of children.get(of) ?? []) {
      found.push(child);
      walk(child);
    }
  };
  walk(pid);
  return found;
}

describe('npm run cluster', {
  skip: REAL_API ? false : 'needs a real control plane: npm run test:cluster',
  timeout: 300_000,
}, () => {
  let dir: string;
  let child: ChildProcess;
  let stdout = '';
  let stderr = '';
  let kubectl: Kubectl;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-npm-run-cluster-'));
    child = spawn(
      process.execPath,
      [MAIN, '--dir', dir, '--service-cidr', addresses.cidr, '--pod-subnet', String(addresses.octet)],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    await waitFor(() => stdout.includes('\n') || child.exitCode !== null, 'the ready line', 180_000);
    kubectl = await kubectlFor({ kubeconfigPath: join(dir, 'kubeconfig') });
  });

  after(async () => {
    child.kill('SIGKILL');
    await kubectl?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints one line once ready, naming the version, the node, the Service CIDR and the kubeconfig', () => {
    assert.deepEqual(stdout.trim().split('\n').length, 1, stdout);
    assert.match(
      stdout,
      new RegExp(
        `^canary-l4 cluster ready: Kubernetes ${pinnedVersions().kubernetes.replaceAll('.', '\\.')} at https://127\\.0\\.0\\.1:\\d+, node canary-l4-node \\(pods 198\\.18\\.160\\.0/24\\), Service CIDR 127\\.0\\.160\\.0/24; export KUBECONFIG=${dir}/kubeconfig\\n$`,
      ),
    );
  });

  it("kubectl version reads the real kube-apiserver's version; it serves the API groups a release uses", async () => {
    assert.match(
      await kubectl('version'),
      new RegExp(`Server Version: ${pinnedVersions().kubernetes.replaceAll('.', '\\.')}`),
    );
    const resources = await kubectl('api-resources', '-o', 'name');
    for (const name of [
      'deployments.apps',
      'endpointslices.discovery.k8s.io',
      'leases.coordination.k8s.io',
      'customresourcedefinitions.apiextensions.k8s.io',
      'events.events.k8s.io',
      'serviceaccounts',
    ]) {
      assert.ok(resources.split('\n').includes(name), `${name} is served`);
    }
  });

  it('RBAC refuses a bare ServiceAccount what no role grants it, with the token the API issued it', async () => {
    await kubectl('create', 'serviceaccount', 'bare');
    const token = (await kubectl('create', 'token', 'bare')).trim();
    const refused = await kubectl.run('--token', token, 'get', 'pods').then(
      () => '',
      (err: { stderr: string }) => err.stderr,
    );
    assert.match(
      refused,
      /Error from server \(Forbidden\): pods is forbidden: User "system:serviceaccount:default:bare" cannot list resource "pods" in API group "" in the namespace "default"/,
    );
  });

  it("a Deployment's pods are scheduled to the node and run there, Ready, on addresses of the pod network", async () => {
    await kubectl('create', 'deployment', 'hello', '--image=app.canary-l4.test/hello:1', '--replicas=2', '--port=8080');
    await kubectl('rollout', 'status', 'deployment/hello', '--timeout=60s');
    const ips = (await kubectl('get', 'pods', '-l', 'app=hello', '-o', 'jsonpath={.items[*].status.podIP}')).split(' ');
    assert.equal(ips.length, 2);
    for (const ip of ips) assert.match(ip, /^198\.18\.160\.\d+$/);
    const pod = await kubectl('get', 'pods', '-l', 'app=hello', '-o', 'jsonpath={.items[0].metadata.name}');
    const log = join(dir, 'logs', 'pods', `default_${pod}_hello.log`);
    await waitFor(
      () => existsSync(log) && /"msg":"serving"/.test(readFileSync(log, 'utf8')),
      'its output where kubectl logs would read it',
      10_000,
    );
  });

  it('a pod with a loopback address gets no endpoint: the EndpointSlice controller cannot publish it (why pods live in 198.18.0.0/16; the fake has no such controller)', async () => {
    // On a node of its own, which no kubelet runs: the test writes the pod's status.
    const objects = [
      { apiVersion: 'v1', kind: 'Node', metadata: { name: 'loop-node' } },
      {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'loop', labels: { app: 'loop' } },
        spec: { nodeName: 'loop-node', containers: [{ name: 'c', image: 'nowhere/loop:1' }] },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'loop' },
        spec: { selector: { app: 'loop' }, ports: [{ port: 80 }] },
      },
    ];
    await kubectl('apply', '-f', await kubectl.manifest('loop.yaml', ...objects));
    await kubectl(
      'patch',
      'pod',
      'loop',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({
        status: {
          phase: 'Running',
          podIP: '127.0.0.9',
          podIPs: [{ ip: '127.0.0.9' }],
          conditions: [{ type: 'Ready', status: 'True' }],
        },
      }),
    );
    let said = '';
    await waitFor(
      async () =>
        /may not be in the loopback range/.test(
          (said = await kubectl(
            'get',
            'events',
            '--field-selector',
            'involvedObject.name=loop,involvedObject.kind=Service',
            '-o',
            'jsonpath={.items[*].message}',
          )),
        ),
      'the EndpointSlice controller to say why',
      30_000,
    );
    assert.match(
      said,
      /EndpointSlice\.discovery\.k8s\.io "loop-\w+" is invalid: endpoints\[0\]\.addresses\[0\]: Invalid value: "127\.0\.0\.9": may not be in the loopback range/,
    );
  });

  it("SIGTERM stops every process it started, frees the API's port and removes the pod network's route", async () => {
    const port = Number(/https:\/\/127\.0\.0\.1:(\d+)/.exec(stdout)?.[1]);
    const started = await descendants(child.pid!);
    assert.ok(started.length >= 6, `etcd, the three components and two pods run: ${started.length} processes`);
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    assert.equal(code, 0, stderr.slice(-2000));
    const alive = started.filter((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    });
    assert.deepEqual(alive, [], 'no process left');
    assert.equal(await listening(port), false, "the API's port is free");
    const { stdout: routes } = await promisify(execFile)('ip', ['-4', 'route', 'show', 'table', 'local', POD_NETWORK]);
    assert.equal(routes.trim(), '', 'the route is gone (no other cluster holds it)');
  });
});
