/**
 * `npm run cluster -- --dir DIR [--service-cidr 127.96.0.0/16] [--pod-subnet 1]`: a real control
 * plane with one simulated node and a kube-proxy simulation on this host, until SIGTERM or SIGINT.
 * `--real-node` instead: two real nodes (network namespaces, pods in namespaces of their own, the
 * real kube-proxy), whose namespaces DIR/env names (CLUSTER_NODE_NETNS_1, _2); stopping removes
 * them, and a start after a crash removes what the crashed one left.
 * Builds the binaries first if the cache has none (10-20 minutes, once). Prints one line once
 * everything is ready; DIR/kubeconfig is cluster-admin; the components' logs are in DIR/logs/.
 */
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startRealCluster, type RealCluster } from './cluster.ts';
import { REAL_SERVICE_CIDR } from './network/plan.ts';

const USAGE =
  'usage: npm run cluster -- --dir DIR [--service-cidr 127.96.0.0/16] [--pod-subnet 1]\n' +
  '       npm run cluster -- --dir DIR --real-node';

function fail(message: string): never {
  console.error(`canary-l4 cluster: ${message}\n${USAGE}`);
  process.exit(2);
}

let values: { dir?: string; 'service-cidr'?: string; 'pod-subnet'?: string; 'real-node'?: boolean; help?: boolean };
try {
  ({ values } = parseArgs({
    options: {
      dir: { type: 'string' },
      'service-cidr': { type: 'string' },
      'pod-subnet': { type: 'string' },
      'real-node': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  }));
} catch (err) {
  fail((err as Error).message);
}
if (values.help === true) {
  console.log(USAGE);
  process.exit(0);
}
if (values.dir === undefined || values.dir === '')
  fail('--dir is required: where the cluster keeps its data, credentials, logs and kubeconfig');
const realNode = values['real-node'] === true;
for (const flag of ['service-cidr', 'pod-subnet'] as const)
  if (realNode && values[flag] !== undefined)
    fail(`--${flag}: not with --real-node, whose nodes' podCIDRs and Service CIDR (${REAL_SERVICE_CIDR}) are its own`);
const serviceCidr = values['service-cidr'] ?? '127.96.0.0/16';
if (!/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}\/(1[2-9]|2[0-8])$/.test(serviceCidr))
  fail(
    `--service-cidr: must be a loopback IPv4 CIDR of /12 to /28 (the kube-proxy simulation listens on its cluster IPs), got ${serviceCidr}`,
  );
const podSubnet = Number(values['pod-subnet'] ?? '1');
if (!Number.isInteger(podSubnet) || podSubnet < 0 || podSubnet > 255)
  fail(`--pod-subnet: must be an integer 0-255 (pods at 198.18.<n>.2 onwards), got ${values['pod-subnet']}`);

const dir = resolve(values.dir);
const log = (line: string) => console.error(`canary-l4 cluster: ${line}`);
const cluster = await startRealCluster({ dir, serviceCidr, podSubnet, kubeProxy: true, realNode, log }).catch(
  (err: Error) => {
    console.error(`canary-l4 cluster: could not start: ${err.message}`);
    process.exit(1);
  },
);
let stopping = false;
const stop = (signal: string) => {
  if (stopping) return;
  stopping = true;
  log(`${signal}: stopping`);
  void cluster.stop().then(
    () => process.exit(0),
    (err: Error) => {
      console.error(`canary-l4 cluster: stopping failed: ${err.message}`);
      process.exit(1);
    },
  );
};
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));
if (cluster.nodes !== undefined) {
  // Shell syntax: `set -a; . DIR/env` gives a shell the nodes' namespaces and the kubeconfig.
  const env = [
    `KUBECONFIG=${dir}/kubeconfig`,
    ...cluster.nodes.map((node, i) => `CLUSTER_NODE_NETNS_${i + 1}=${node.netns}`),
  ];
  writeFileSync(join(dir, 'env'), `${env.join('\n')}\n`);
}
console.log(`canary-l4 cluster ready: ${readyLine(cluster)}; export KUBECONFIG=${dir}/kubeconfig`);

function readyLine(ready: RealCluster): string {
  const api = `Kubernetes ${ready.plane.kubernetesVersion} at ${ready.plane.url}`;
  if (ready.nodes === undefined)
    return `${api}, node ${ready.kubelet.nodeName} (pods ${ready.podNet}.0/24), Service CIDR ${serviceCidr}`;
  const nodes = ready.nodes.map(
    (node) => `${node.name} (pods ${node.podCidr}, netns ${node.netns}, kube-proxy ${node.kubeProxyMode})`,
  );
  return `${api}, nodes ${nodes.join(', ')}, Service CIDR ${REAL_SERVICE_CIDR}, node namespaces in ${dir}/env`;
}
