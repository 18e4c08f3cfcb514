/**
 * `npm run fake-apiserver -- --port 6443 [--service-cidr 127.0.10.0/24] [--kubeconfig-out FILE]
 * [--simulate-deployments [--pod-ready-delay-ms 1000] [--pod-cidr 127.0.200.0/24] [--pod-termination-ms 1000]]`
 * Serves the fake kube-apiserver until Ctrl-C and writes (and prints the path of) a kubeconfig.
 */
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_POD_CIDR, DEFAULT_POD_READY_DELAY_MS, DEFAULT_POD_TERMINATION_MS, startFakeApiServer } from './index.ts';

const usage = `usage: fake-apiserver [--port 6443] [--service-cidr 127.0.10.0/24] [--kubeconfig-out FILE] [--no-gc]
                      [--simulate-deployments [--pod-ready-delay-ms ${DEFAULT_POD_READY_DELAY_MS}] [--pod-cidr ${DEFAULT_POD_CIDR}]
                                              [--pod-termination-ms ${DEFAULT_POD_TERMINATION_MS}]]
  --port                  TCP port on 127.0.0.1 (default 6443; 0 = ephemeral)
  --service-cidr          Service cluster-IP range (default 127.0.10.0/24)
  --kubeconfig-out        where to write the kubeconfig (default: a temp file, removed on exit)
  --no-gc                 do not simulate the garbage collector / namespace controller
  --simulate-deployments  simulate the Deployment/ReplicaSet controllers and the kubelet: ReplicaSets,
                          Pods (Running, then Ready), rollouts and statuses for every Deployment
  --pod-ready-delay-ms    with --simulate-deployments: from Running to Ready (default ${DEFAULT_POD_READY_DELAY_MS})
  --pod-cidr              with --simulate-deployments: pod IP range (default ${DEFAULT_POD_CIDR})
  --pod-termination-ms    with --simulate-deployments: a deleted pod terminates (not Ready, still served)
                          for its grace period or this long, whichever is shorter (default ${DEFAULT_POD_TERMINATION_MS})`;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string', default: '6443' },
      'service-cidr': { type: 'string', default: '127.0.10.0/24' },
      'kubeconfig-out': { type: 'string' },
      'no-gc': { type: 'boolean', default: false },
      'simulate-deployments': { type: 'boolean', default: false },
      'pod-ready-delay-ms': { type: 'string' },
      'pod-cidr': { type: 'string' },
      'pod-termination-ms': { type: 'string' },
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
  if (!simulate && (values['pod-ready-delay-ms'] !== undefined || values['pod-cidr'] !== undefined || values['pod-termination-ms'] !== undefined))
    throw new Error('--pod-ready-delay-ms, --pod-cidr and --pod-termination-ms need --simulate-deployments');
  const podReadyDelayMs = milliseconds(values, 'pod-ready-delay-ms');
  const podTerminationMs = milliseconds(values, 'pod-termination-ms');
  const api = await startFakeApiServer({
    port,
    serviceCidr: values['service-cidr'],
    gc: !values['no-gc'],
    kubeconfigPath: out ? resolve(out) : undefined,
    simulateDeployments: simulate ? { podReadyDelayMs, podCidr: values['pod-cidr'], podTerminationMs } : undefined,
  });
  console.log(`fake-apiserver listening on ${api.url}`);
  console.log(`fault injection: curl -XPOST ${api.url}/_fake/faults/latency -d '{"ms":200}'  (all of it: README.md)`);
  console.log(`kubeconfig: ${api.kubeconfigPath}`);
  if (simulate) {
    console.log(`simulating Deployments: pods in ${values['pod-cidr'] ?? DEFAULT_POD_CIDR}, Ready ${podReadyDelayMs ?? DEFAULT_POD_READY_DELAY_MS} ms after they run, `
      + `terminating for up to ${podTerminationMs ?? DEFAULT_POD_TERMINATION_MS} ms when deleted`);
  }
  console.log(`try: kubectl --kubeconfig ${api.kubeconfigPath} get namespaces`);
  let stopping = false;
  const shutdown = (): void => {
    if (stopping) return;
    stopping = true;
    void api.stop().then(() => process.exit(0));
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
