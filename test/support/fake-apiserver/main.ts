/**
 * `npm run fake-apiserver -- --port 6443 [--service-cidr CIDR] [--kubeconfig-out FILE] [--env-out FILE]
 * [--simulate-deployments [--pod-ready-delay-ms 1000] [--pod-cidr CIDR] [--pod-termination-ms 1000]
 * [--simulate-network [--namespace default]]]`
 * Serves the fake kube-apiserver until Ctrl-C and writes (and prints the path of) a kubeconfig.
 * Without --service-cidr it claims a loopback block of its own (loopback-block.ts) and prints it.
 */
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { startKubeProxy } from '../cluster/kube-proxy.ts';
import { startPodServers } from '../cluster/pod-servers.ts';
import { claimLoopbackBlock } from './loopback-block.ts';
import {
  DEFAULT_POD_CIDR,
  DEFAULT_POD_READY_DELAY_MS,
  DEFAULT_POD_TERMINATION_MS,
  startFakeApiServer,
} from './index.ts';

const usage = `usage: fake-apiserver [--port 6443] [--service-cidr CIDR] [--kubeconfig-out FILE] [--env-out FILE] [--no-gc]
                      [--simulate-deployments [--pod-ready-delay-ms ${DEFAULT_POD_READY_DELAY_MS}] [--pod-cidr ${DEFAULT_POD_CIDR}]
                                              [--pod-termination-ms ${DEFAULT_POD_TERMINATION_MS}]
                                              [--simulate-network [--namespace default]]]
  --port                  TCP port on 127.0.0.1 (default 6443; 0 = ephemeral)
  --service-cidr          Service cluster-IP range (default: 127.N.10.0/24 of a loopback block 127.N.0.0/16 no
                          other fake-apiserver of this host holds, printed at start; its pods then 127.N.200.0/24)
  --kubeconfig-out        where to write the kubeconfig (default: a temp file, removed on exit)
  --env-out               where to write FAKE_SERVICE_CIDR, FAKE_POD_CIDR and FAKE_ADDRESS (an address of the
                          block no Service or pod takes, for your proxies' --listen-address) as shell lines
  --no-gc                 do not simulate the garbage collector / namespace controller
  --simulate-deployments  simulate the Deployment/ReplicaSet controllers and the kubelet: ReplicaSets,
                          Pods (Running, then Ready), rollouts and statuses for every Deployment
  --pod-ready-delay-ms    with --simulate-deployments: from Running to Ready (default ${DEFAULT_POD_READY_DELAY_MS})
  --pod-cidr              with --simulate-deployments: pod IP range (default: the block's, or ${DEFAULT_POD_CIDR} with --service-cidr)
  --pod-termination-ms    with --simulate-deployments: a deleted pod terminates (not Ready, still served)
                          for its grace period or this long, whichever is shorter (default ${DEFAULT_POD_TERMINATION_MS})
  --simulate-network      with --simulate-deployments: in --namespace, serve every Service's cluster IP as
                          kube-proxy would (to its Ready pods), and answer on every pod's container ports
                          with the pod's image (TCP: the text; UDP: <image>:<datagram>), so curl shows
                          which version answered; a container env FAKE_POD_FAULT=reset=30 resets 30 % of
                          its TCP connections, FAKE_POD_FAULT=udp-silent never replies to UDP (a bad release)
  --namespace             with --simulate-network (default default)`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '6443' },
      'service-cidr': { type: 'string' },
      'kubeconfig-out': { type: 'string' },
      'env-out': { type: 'string' },
      'no-gc': { type: 'boolean', default: false },
      'simulate-deployments': { type: 'boolean', default: false },
      'pod-ready-delay-ms': { type: 'string' },
      'pod-cidr': { type: 'string' },
      'pod-termination-ms': { type: 'string' },
      'simulate-network': { type: 'boolean', default: false },
      namespace: { type: 'string', default: 'default' },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(usage);
    return;
  }
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid --port: ${values.port}`);
  const out = values['kubeconfig-out'];
  const simulate = values['simulate-deployments'];
  if (
    !simulate &&
    (values['pod-ready-delay-ms'] !== undefined ||
      values['pod-cidr'] !== undefined ||
      values['pod-termination-ms'] !== undefined ||
      values['simulate-network'])
  )
    throw new Error(
      '--pod-ready-delay-ms, --pod-cidr, --pod-termination-ms and --simulate-network need --simulate-deployments',
    );
  const podReadyDelayMs = milliseconds(values, 'pod-ready-delay-ms');
  const podTerminationMs = milliseconds(values, 'pod-termination-ms');
  // Another user's fake on this host must not serve the same cluster IPs, nor its pods the same addresses.
  const block = values['service-cidr'] === undefined ? claimLoopbackBlock() : undefined;
  const serviceCidr = values['service-cidr'] ?? block!.serviceCidr;
  const podCidr = values['pod-cidr'] ?? block?.podCidr ?? DEFAULT_POD_CIDR;
  const api = await startFakeApiServer({
    port,
    serviceCidr,
    gc: !values['no-gc'],
    kubeconfigPath: out ? resolve(out) : undefined,
    simulateDeployments: simulate ? { podReadyDelayMs, podCidr, podTerminationMs } : undefined,
  });
  console.log(`fake-apiserver listening on ${api.url}`);
  if (block !== undefined)
    console.log(
      `loopback block ${block.block}, this fake's alone: Services ${serviceCidr}, pods ${podCidr}; ${block.hostAddress} for your proxies (--listen-address)`,
    );
  const envOut = values['env-out'];
  if (envOut !== undefined)
    writeFileSync(
      resolve(envOut),
      `FAKE_SERVICE_CIDR=${serviceCidr}\nFAKE_POD_CIDR=${podCidr}\nFAKE_ADDRESS=${block?.hostAddress ?? '127.0.0.1'}\n`,
    );
  console.log(`fault injection: curl -XPOST ${api.url}/_fake/faults/latency -d '{"ms":200}'  (all of it: README.md)`);
  console.log(`kubeconfig: ${api.kubeconfigPath}`);
  if (simulate) {
    console.log(
      `simulating Deployments: pods in ${podCidr}, Ready ${podReadyDelayMs ?? DEFAULT_POD_READY_DELAY_MS} ms after they run, ` +
        `terminating for up to ${podTerminationMs ?? DEFAULT_POD_TERMINATION_MS} ms when deleted`,
    );
  }
  const network = values['simulate-network'] ? await simulateNetwork(api.kubeConfig, values.namespace) : undefined;
  console.log(`try: kubectl --kubeconfig ${api.kubeconfigPath} get namespaces`);
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    void (network?.stop() ?? Promise.resolve()).then(() => api.stop()).then(() => process.exit(0));
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

/** A flag of whole milliseconds (≥ 0), or undefined when absent. */
function milliseconds(values: Record<string, unknown>, flag: string): number | undefined {
  const text = values[flag];
  if (text === undefined) return undefined;
  const ms = Number(text);
  if (!Number.isInteger(ms) || ms < 0) throw new Error(`invalid --${flag}: ${String(text)}`);
  return ms;
}

main().catch((e: unknown) => {
  console.error(`fake-apiserver: ${(e as Error).message}`);
  console.error(usage);
  process.exit(2);
});

/** kube-proxy for the namespace's Services, and servers on its pods' ports answering with their image. */
async function simulateNetwork(kubeConfig: KubeConfig, namespace: string): Promise<{ stop(): Promise<void> }> {
  const kubeProxy = await startKubeProxy({ kubeConfig, namespace });
  const servers = await startPodServers({ kubeConfig, namespace });
  console.log(
    `simulating the network of namespace ${namespace}: Service cluster IPs route to Ready pods; pods answer with their image`,
  );
  return { stop: async () => void (await Promise.all([kubeProxy.stop(), servers.stop()])) };
}
