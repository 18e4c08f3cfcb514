/**
 * `npm run cluster -- --dir DIR [--service-cidr 127.96.0.0/16] [--pod-subnet 1]`: a real control
 * plane with one simulated node and a kube-proxy simulation on this host, until SIGTERM or SIGINT.
 * Builds the binaries first if the cache has none (10-20 minutes, once). Prints one line once
 * everything is ready; DIR/kubeconfig is cluster-admin; the components' logs are in DIR/logs/.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startRealCluster } from './cluster.ts';

const USAGE = 'usage: npm run cluster -- --dir DIR [--service-cidr 127.96.0.0/16] [--pod-subnet 1]';

function fail(message: string): never {
  console.error(`canary-l4 cluster: ${message}\n${USAGE}`);
  process.exit(2);
}

let values: { dir?: string; 'service-cidr'?: string; 'pod-subnet'?: string; help?: boolean };
try {
  ({ values } = parseArgs({
    options: {
      dir: { type: 'string' },
      'service-cidr': { type: 'string' },
      'pod-subnet': { type: 'string' },
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
const cluster = await startRealCluster({ dir, serviceCidr, podSubnet, kubeProxy: true, log }).catch((err: Error) => {
  console.error(`canary-l4 cluster: could not start: ${err.message}`);
  process.exit(1);
});
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
console.log(
  `canary-l4 cluster ready: Kubernetes ${cluster.plane.kubernetesVersion} at ${cluster.plane.url}, node ${cluster.kubelet.nodeName} (pods ${cluster.podNet}.0/24), ` +
    `Service CIDR ${serviceCidr}; export KUBECONFIG=${dir}/kubeconfig`,
);
