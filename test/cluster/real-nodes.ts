/**
 * The two real nodes of a `--real-node` cluster on its network (network/real-network.ts): each a
 * Node whose podCIDR the real controller-manager allocates, a kubelet simulation whose pods get
 * network namespaces of their own on the node's bridge, and the real kube-proxy in the node's
 * namespace (node/kube-proxy.ts). `kubelet` answers for both kubelets (a pod is on one of them).
 */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureBinaries } from './build.ts';
import type { ControlPlane } from './control-plane.ts';
import { podNetOf } from './network/plan.ts';
import type { RealNetwork } from './network/real-network.ts';
import { startNodeKubelet, type Image, type NodeKubelet } from './node/kubelet.ts';
import { startNodeKubeProxy, type NodeKubeProxy, type ProxyMode } from './node/kube-proxy.ts';

const POD_CIDR_TIMEOUT_MS = 60_000;

export interface RealNode {
  readonly name: string;
  /** Its network namespace: `ip netns exec <netns> …` runs a process on the node. */
  readonly netns: string;
  readonly address: string;
  readonly podCidr: string;
  readonly kubeProxyMode: ProxyMode;
}

export interface RealNodes {
  readonly nodes: readonly RealNode[];
  /** Both kubelets as one. */
  readonly kubelet: NodeKubelet;
  stop(): Promise<void>;
}

export interface RealNodesOptions {
  readonly dir: string;
  readonly network: RealNetwork;
  readonly plane: ControlPlane;
  /** Cluster-admin. */
  readonly kubeConfig: KubeConfig;
  readonly images: (image: string) => Image | undefined;
  readonly logDir: string;
  readonly log?: (line: string) => void;
}

/** The podCIDR the controller-manager's node IPAM gives the Node. */
async function allocatedPodCidr(core: CoreV1Api, name: string): Promise<string> {
  const deadline = Date.now() + POD_CIDR_TIMEOUT_MS;
  for (;;) {
    const podCidr = (await core.readNode({ name })).spec?.podCIDR;
    if (podCidr !== undefined && podCidr !== '') return podCidr;
    if (Date.now() > deadline)
      throw new Error(
        `node ${name} got no podCIDR within ${POD_CIDR_TIMEOUT_MS / 1000} s (kube-controller-manager's log)`,
      );
    await sleep(200);
  }
}

export async function startRealNodes(options: RealNodesOptions): Promise<RealNodes> {
  const core = options.kubeConfig.makeApiClient(CoreV1Api);
  const binaries = await ensureBinaries(options.log);
  const kubelets: NodeKubelet[] = [];
  const proxies: NodeKubeProxy[] = [];
  const nodes: RealNode[] = [];
  const stop = async () => {
    for (const proxy of proxies) await proxy.stop();
    for (const kubelet of kubelets) await kubelet.stop();
  };
  try {
    for (const plan of options.network.plan.nodes) {
      let podCidr = '';
      kubelets.push(
        await startNodeKubelet({
          kubeConfig: options.kubeConfig,
          server: { url: options.plane.url, caPem: options.plane.caPem },
          nodeName: plan.name,
          podNet: '',
          netns: {
            nodeIP: plan.address,
            podNet: async () => {
              podCidr = await allocatedPodCidr(core, plan.name);
              await options.network.routePodCidr(plan, podCidr);
              return podNetOf(podCidr);
            },
            openPod: (ip) => options.network.openPod(plan, podCidr, ip),
          },
          images: options.images,
          logDir: options.logDir,
        }),
      );
      const proxy = await startNodeKubeProxy({
        binaries,
        dir: options.dir,
        node: plan,
        kubeconfigPath: options.plane.kubeconfigPath,
        clusterCidr: options.network.plan.clusterCidr,
        ...(options.log === undefined ? {} : { log: options.log }),
      });
      proxies.push(proxy);
      nodes.push({ name: plan.name, netns: plan.netns, address: plan.address, podCidr, kubeProxyMode: proxy.mode });
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { nodes, kubelet: bothKubelets(kubelets), stop };
}

function bothKubelets(kubelets: readonly NodeKubelet[]): NodeKubelet {
  const holding = (namespace: string, pod: string) =>
    kubelets.find((kubelet) => kubelet.running().includes(`${namespace}/${pod}`));
  return {
    nodeName: kubelets.map((kubelet) => kubelet.nodeName).join(','),
    running: () => kubelets.flatMap((kubelet) => kubelet.running()).sort(),
    output: (namespace, pod) => kubelets.map((kubelet) => kubelet.output(namespace, pod)).join(''),
    crash(namespace, pod) {
      const kubelet = holding(namespace, pod);
      if (kubelet === undefined) throw new Error(`no pod ${namespace}/${pod} runs on ${this.nodeName}`);
      kubelet.crash(namespace, pod);
    },
    async stop() {
      for (const kubelet of kubelets) await kubelet.stop();
    },
  };
}
