// `npm run cluster -- --real-node` as a newcomer starts it (npm run test:cluster; skipped by npm test):
// two Ready Nodes with podCIDRs from the real controller-manager, each a network namespace; pods in
// namespaces of their own, addressed from their node's podCIDR, two of them on one port; the real
// kube-proxy's rules in each node's namespace, routing a Service's cluster IP from either node; a
// start after a crash (SIGKILL) clears what the crashed one left; SIGTERM leaves no namespace, link,
// route or process behind.

import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { REAL_API } from '../support/cluster/api-under-test.ts';
import { kubectlFor, type Kubectl } from '../support/cluster/api-fixtures.ts';
import { waitFor } from '../support/wait.ts';
import { startTrafficIn } from '../support/net/netns-traffic.ts';
import { clusterPrefix } from './network/plan.ts';
import { processAlive } from './processes.ts';

const MAIN = new URL('./main.ts', import.meta.url).pathname;
const run = promisify(execFile);

interface Started {
  readonly child: ChildProcess;
  readonly stdout: () => string;
  readonly stderr: () => string;
}

async function startCluster(dir: string): Promise<Started> {
  const child = spawn(process.execPath, [MAIN, '--dir', dir, '--real-node'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  await waitFor(() => stdout.includes('\n') || child.exitCode !== null, 'the ready line', 240_000);
  assert.match(stdout, /^canary-l4 cluster ready: /, stderr.slice(-3000));
  return { child, stdout: () => stdout, stderr: () => stderr };
}

/** What of the cluster's network is on the host: its namespaces, its host link, routes through that link. */
async function leftovers(prefix: string): Promise<string[]> {
  const namespaces = (await run('ip', ['netns', 'list'])).stdout
    .split('\n')
    .filter((line) => line.startsWith(`${prefix}-`));
  const links = (await run('ip', ['-o', 'link', 'show'])).stdout.split('\n').filter((line) => line.includes(prefix));
  const routes = (await run('ip', ['route', 'show'])).stdout.split('\n').filter((line) => line.includes(prefix));
  return [...namespaces, ...links, ...routes];
}

/** The pids of the processes in a network namespace. */
async function pidsIn(netns: string): Promise<number[]> {
  return (await run('ip', ['netns', 'pids', netns])).stdout.split('\n').filter(Boolean).map(Number);
}

function nodeEnv(dir: string): Record<string, string> {
  return Object.fromEntries(
    readFileSync(join(dir, 'env'), 'utf8')
      .trim()
      .split('\n')
      .map((line) => line.split('=', 2) as [string, string]),
  );
}

describe('npm run cluster -- --real-node', {
  skip: REAL_API ? false : 'needs a real control plane: npm run test:cluster',
  timeout: 600_000,
}, () => {
  let dir: string;
  let prefix: string;
  let cluster: Started;
  let kubectl: Kubectl;
  let env: Record<string, string>;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-real-node-'));
    prefix = clusterPrefix(dir);
    cluster = await startCluster(dir);
    kubectl = await kubectlFor({ kubeconfigPath: join(dir, 'kubeconfig') });
    env = nodeEnv(dir);
  });

  after(async () => {
    cluster?.child.kill('SIGTERM');
    if (cluster !== undefined && cluster.child.exitCode === null && cluster.child.signalCode === null)
      await new Promise((resolve) => cluster.child.once('exit', resolve));
    await kubectl?.cleanup();
    rmSync(dir, { recursive: true, force: true });
  });

  it('prints one line once ready, naming both nodes with their podCIDRs and namespaces; DIR/env names the namespaces', () => {
    assert.equal(cluster.stdout().trim().split('\n').length, 1, cluster.stdout());
    assert.match(
      cluster.stdout(),
      /nodes canary-l4-node-1 \(pods 198\.19\.\d+\.0\/24, netns cl4\w+-node1, kube-proxy nftables\), canary-l4-node-2 \(pods 198\.19\.\d+\.0\/24, netns cl4\w+-node2, kube-proxy nftables\), Service CIDR 198\.19\.240\.0\/20/,
    );
    assert.deepEqual(env, {
      KUBECONFIG: `${dir}/kubeconfig`,
      CLUSTER_NODE_NETNS_1: `${prefix}-node1`,
      CLUSTER_NODE_NETNS_2: `${prefix}-node2`,
    });
  });

  it('kubectl get nodes lists two Ready nodes, each with a podCIDR the controller-manager allocated', async () => {
    const nodes = JSON.parse(await kubectl('get', 'nodes', '-o', 'json')).items as any[];
    assert.deepEqual(
      nodes.map((node) => node.metadata.name),
      ['canary-l4-node-1', 'canary-l4-node-2'],
    );
    for (const node of nodes) {
      assert.match(node.spec.podCIDR, /^198\.19\.\d+\.0\/24$/);
      assert.equal(node.status.conditions.find((c: any) => c.type === 'Ready').status, 'True');
    }
    assert.notEqual(nodes[0].spec.podCIDR, nodes[1].spec.podCIDR);
  });

  it("a Deployment's pods get addresses of their node's podCIDR, two on one node on the same port, and its Service answers on its cluster IP from either node", async () => {
    await kubectl('create', 'deployment', 'hello', '--image=app.canary-l4.test/hello:1', '--replicas=4', '--port=8000');
    await kubectl('expose', 'deployment', 'hello', '--port=80', '--target-port=8000');
    await kubectl('rollout', 'status', 'deployment/hello', '--timeout=90s');
    const pods = JSON.parse(await kubectl('get', 'pods', '-l', 'app=hello', '-o', 'json')).items as any[];
    const nodes = JSON.parse(await kubectl('get', 'nodes', '-o', 'json')).items as any[];
    const cidrOf = new Map(nodes.map((node) => [node.metadata.name, node.spec.podCIDR.replace(/\.0\/24$/, '.')]));
    for (const pod of pods)
      assert.ok(
        pod.status.podIP.startsWith(cidrOf.get(pod.spec.nodeName)),
        `${pod.status.podIP} on ${pod.spec.nodeName}`,
      );
    const perNode = Map.groupBy(pods, (pod) => pod.spec.nodeName as string);
    assert.ok(
      [...perNode.values()].some((onNode) => onNode.length >= 2),
      'four pods on two nodes: two share a node and both listen on 8000',
    );
    const clusterIp = (await kubectl('get', 'service', 'hello', '-o', 'jsonpath={.spec.clusterIP}')).trim();
    assert.match(clusterIp, /^198\.19\.2(4\d|5[0-5])\.\d+$/, 'in the Service CIDR 198.19.240.0/20');
    for (const netns of [env.CLUSTER_NODE_NETNS_1!, env.CLUSTER_NODE_NETNS_2!]) {
      // kube-proxy refuses connections to a Service without endpoints until its next sync writes them (a second).
      const traffic = await startTrafficIn(netns, clusterIp, 80, 'TCP', { pauseMs: 20, maxMs: 30_000 });
      const answer = 'app.canary-l4.test/hello:1';
      await waitFor(() => (traffic.counts()[answer] ?? 0) >= 40, `40 answers from ${netns}`, 30_000);
      await traffic.stop();
      const first = traffic.attempts.find((attempt) => attempt.answer !== undefined)!;
      assert.deepEqual(traffic.failures(first.at), [], `from ${netns}, once answered`);
      assert.deepEqual(Object.keys(traffic.counts(first.at)), [answer]);
    }
  });

  it("kube-proxy's rules are in each node's namespace (nft list ruleset), naming the Service's cluster IP", async () => {
    const clusterIp = (await kubectl('get', 'service', 'hello', '-o', 'jsonpath={.spec.clusterIP}')).trim();
    for (const netns of [env.CLUSTER_NODE_NETNS_1!, env.CLUSTER_NODE_NETNS_2!]) {
      const { stdout } = await run('ip', ['netns', 'exec', netns, 'nft', 'list', 'ruleset']);
      assert.match(stdout, /table ip kube-proxy/);
      assert.ok(stdout.includes(clusterIp), `${netns}: ${clusterIp} in kube-proxy's rules`);
    }
    const { stdout: hostTables } = await run('nft', ['list', 'tables']);
    assert.doesNotMatch(hostTables, /kube-proxy/, "the host's own ruleset has no kube-proxy table");
  });

  it("a UDP flow from one source port stays on its endpoint (conntrack) while new flows spread; when the Service's selector moves off that endpoint, as a takeover does, the flow's next datagrams go to the new pods, none lost", async (t) => {
    const answerOf = (name: string) => `app.canary-l4.test/${name}`;
    for (const name of ['dns-a', 'dns-b']) {
      const deployment = JSON.parse(
        await kubectl(
          'create',
          'deployment',
          name,
          // No tag: a UDP answer is `<image>:<datagram>`, read up to its first colon.
          `--image=${answerOf(name)}`,
          '--port=5353',
          '--dry-run=client',
          '-o',
          'json',
        ),
      );
      deployment.spec.template.spec.containers[0].ports[0].protocol = 'UDP';
      deployment.spec.template.metadata.labels.role = 'dns';
      await kubectl('apply', '-f', await kubectl.manifest(`${name}.yaml`, deployment));
    }
    const service = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'dns' },
      spec: { selector: { role: 'dns' }, ports: [{ port: 53, targetPort: 5353, protocol: 'UDP' }] },
    };
    await kubectl('apply', '-f', await kubectl.manifest('dns.yaml', service));
    await kubectl('rollout', 'status', 'deployment/dns-a', '--timeout=60s');
    await kubectl('rollout', 'status', 'deployment/dns-b', '--timeout=60s');
    const clusterIp = (await kubectl('get', 'service', 'dns', '-o', 'jsonpath={.spec.clusterIP}')).trim();
    const udp = { pauseMs: 50, maxMs: 60_000, udpTimeoutMs: 1000 };
    // Until kube-proxy's rules have both endpoints: new flows (a fresh socket each) reach both pods.
    const fresh = await startTrafficIn(env.CLUSTER_NODE_NETNS_2!, clusterIp, 53, 'UDP', udp);
    await waitFor(
      () => (fresh.counts()[answerOf('dns-a')] ?? 0) >= 5 && (fresh.counts()[answerOf('dns-b')] ?? 0) >= 5,
      'new flows answered by both pods',
      30_000,
    );
    await fresh.stop();
    const flow = await startTrafficIn(env.CLUSTER_NODE_NETNS_2!, clusterIp, 53, 'UDP', {
      ...udp,
      udpSourcePort: 40053,
    });
    await waitFor(() => flow.attempts.length >= 30, '30 datagrams of one flow', 20_000);
    const [sticky, ...others] = Object.keys(flow.counts());
    assert.deepEqual(others, [], `one flow, one endpoint: ${JSON.stringify(flow.counts())}`);
    const other = sticky === answerOf('dns-a') ? 'dns-b' : 'dns-a';
    const moved = flow.now();
    const before = flow.counts();
    await kubectl(
      'patch',
      'service',
      'dns',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { selector: { app: other } } }),
    );
    await waitFor(() => (flow.counts(moved)[answerOf(other)] ?? 0) >= 20, `the flow answered by ${other}`, 20_000);
    await flow.stop();
    t.diagnostic(
      `new flows: ${JSON.stringify(fresh.counts())}; one flow (source port 40053): before the selector moved ` +
        `${JSON.stringify(before)}, since ${JSON.stringify(flow.counts(moved))}`,
    );
    assert.deepEqual(flow.failures(), [], 'no datagram of the flow went unanswered');
    // Once the new pod answered, the old one never did again: kube-proxy cleared the flow's entry.
    const firstNew = flow.attempts.findIndex((attempt) => attempt.answer === answerOf(other));
    assert.deepEqual(
      flow.attempts.slice(firstNew).filter((attempt) => attempt.answer !== answerOf(other)),
      [],
    );
  });

  it('a start after a SIGKILL removes what the killed one left, and SIGTERM then leaves nothing', async () => {
    const pods = await pidsIn(env.CLUSTER_NODE_NETNS_1!);
    cluster.child.kill('SIGKILL');
    await new Promise((resolve) => cluster.child.once('exit', resolve));
    assert.notDeepEqual(await leftovers(prefix), [], 'a SIGKILL leaves the namespaces');
    cluster = await startCluster(dir);
    assert.deepEqual(
      pods.filter((pid) => processAlive(pid)),
      [],
      "the killed cluster's kube-proxy and pods were ended",
    );
    const running = await pidsIn(`${prefix}-node1`);
    assert.ok(running.length >= 1, 'the new kube-proxy runs on node 1');
    cluster.child.kill('SIGTERM');
    const code = await new Promise<number | null>((resolve) => cluster.child.once('exit', resolve));
    assert.equal(code, 0, cluster.stderr().slice(-2000));
    assert.deepEqual(await leftovers(prefix), [], 'no namespace, link or route left');
    assert.deepEqual(
      running.filter((pid) => processAlive(pid)),
      [],
      'no process left',
    );
  });
});
