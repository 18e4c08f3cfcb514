/**
 * The real kube-proxy of a real node (built with the control plane), in the node's network
 * namespace: nftables mode, or iptables mode where this host has no `nft` (said in the log), with
 * the cluster CIDR, so it routes every Service's cluster IPs and NodePorts by the real
 * EndpointSlices and masquerades what comes from off the cluster, with conntrack as a cluster has it.
 * It leaves the host's own conntrack table size alone (`conntrack.maxPerCore: 0`: nf_conntrack_max is
 * host-wide); what it writes is inside the namespace, and goes with it.
 *
 * Its access to the API is cluster-admin's (as the kubelet simulation's): the point is its routing,
 * not the node-proxier role.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { Binaries } from '../build.ts';
import type { NodePlan } from '../network/plan.ts';
import { Processes } from '../processes.ts';

const READY_TIMEOUT_MS = 60_000;
const HEALTHZ_PORT = 10256;

export type ProxyMode = 'nftables' | 'iptables';

export interface NodeKubeProxyOptions {
  readonly binaries: Binaries;
  /** The cluster's DIR: its config in DIR/kube-proxy-<node>.yaml, its log in DIR/logs/kube-proxy-<node>.log. */
  readonly dir: string;
  readonly node: NodePlan;
  /** A kubeconfig whose server the node's namespace reaches. */
  readonly kubeconfigPath: string;
  readonly clusterCidr: string;
  readonly log?: (line: string) => void;
}

export interface NodeKubeProxy {
  readonly mode: ProxyMode;
  stop(): Promise<void>;
}

async function onPath(command: string): Promise<boolean> {
  return promisify(execFile)('sh', ['-c', `command -v ${command}`]).then(
    () => true,
    () => false,
  );
}

/** nftables where `nft` is installed, else iptables; neither is an error naming the package. */
export async function proxyMode(): Promise<ProxyMode> {
  if (await onPath('nft')) return 'nftables';
  if (await onPath('iptables')) return 'iptables';
  throw new Error(
    "a real node's kube-proxy needs nft (nftables mode) or iptables: apt-get install nftables (or iptables)",
  );
}

export async function startNodeKubeProxy(options: NodeKubeProxyOptions): Promise<NodeKubeProxy> {
  const { node } = options;
  const mode = await proxyMode();
  const name = `kube-proxy-${node.name}`;
  const config = join(options.dir, `${name}.yaml`);
  writeFileSync(
    config,
    JSON.stringify({
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      clientConnection: { kubeconfig: options.kubeconfigPath },
      hostnameOverride: node.name,
      mode,
      clusterCIDR: options.clusterCidr,
      healthzBindAddress: `${node.address}:${HEALTHZ_PORT}`,
      metricsBindAddress: '127.0.0.1:10249',
      conntrack: { maxPerCore: 0 },
      oomScoreAdj: 0,
    }),
  );
  if (mode === 'iptables') options.log?.(`${name}: no nft on this host, so kube-proxy runs in iptables mode`);
  const processes = new Processes(options.binaries, options.dir);
  processes.start('kube-proxy', ['--config', config, '--v=2'], { name, netns: node.netns });
  // Healthy once it has written its first full set of rules.
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const exited = processes.exited(name);
    if (exited !== undefined) {
      await processes.stopAll();
      throw new Error(`${name} exited (${exited}) while starting:\n${processes.tail(name, 3000)}`);
    }
    const healthy = await fetch(`http://${node.address}:${HEALTHZ_PORT}/healthz`, {
      signal: AbortSignal.timeout(2000),
    }).then(
      (response) => response.ok,
      () => false,
    );
    if (healthy) break;
    if (Date.now() > deadline) {
      await processes.stopAll();
      throw new Error(`${name} was not healthy within ${READY_TIMEOUT_MS / 1000} s:\n${processes.tail(name, 3000)}`);
    }
    await sleep(300);
  }
  options.log?.(`${name}: ${mode} mode, healthy`);
  return { mode, stop: () => processes.stopAll() };
}
