/**
 * A whole real cluster on this host: the control plane (control-plane.ts), the pod network
 * (pod-network.ts), one node whose kubelet simulation runs the pods bound to it (node/kubelet.ts,
 * with node/images.ts), and, if asked, a kube-proxy simulation that routes every namespace's cluster
 * IPs by the real EndpointSlices. With `realNode`, two real nodes instead (real-nodes.ts): network
 * namespaces on a network of their own (network/), pods in namespaces of their own, the real
 * kube-proxy on each. Identities are real: `serviceAccountKubeConfig` asks the
 * TokenRequest API for a ServiceAccount's token, so RBAC judges what a client may do.
 */
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { startKubeProxy, type KubeProxy } from '../support/cluster/kube-proxy.ts';
import { kubeconfigYaml, startControlPlane, type ControlPlane } from './control-plane.ts';
import { REAL_SERVICE_CIDR } from './network/plan.ts';
import { createRealNetwork } from './network/real-network.ts';
import { images } from './node/images.ts';
import { startNodeKubelet, type NodeKubelet } from './node/kubelet.ts';
import { holdPodNetwork, POD_NETWORK_PREFIX } from './pod-network.ts';
import { killLeftoversOf } from './processes.ts';
import { startRealNodes, type RealNode, type RealNodes } from './real-nodes.ts';
import { Http1KubeConfig } from '../../src/kube/client.ts';

export const NODE_NAME = 'canary-l4-node';

export interface RealClusterOptions {
  readonly dir: string;
  /** Loopback, a range's `cidr` from test/support/net/loopback-ranges.ts. */
  readonly serviceCidr: string;
  /** The third octet of the node's pod network: pods at `198.18.<n>.2` onwards. */
  readonly podSubnet: number;
  /** Route every namespace's cluster IPs here (the tests that route one namespace start their own). */
  readonly kubeProxy?: boolean;
  /** Two real nodes (network namespaces, the real kube-proxy) instead of the simulated one: `serviceCidr`, `podSubnet` and `kubeProxy` are then unused. */
  readonly realNode?: boolean;
  /** Delete `dir` on stop. */
  readonly removeDir?: boolean;
  readonly log?: (line: string) => void;
}

export interface RealCluster {
  readonly plane: ControlPlane;
  /** Cluster-admin. */
  readonly kubeConfig: KubeConfig;
  readonly kubelet: NodeKubelet;
  readonly kubeProxy: KubeProxy | undefined;
  /** The real nodes, with `realNode`. */
  readonly nodes: readonly RealNode[] | undefined;
  /** `198.18.<n>`: the node's pod network (the node is `.1`). */
  readonly podNet: string;
  /** A kubeconfig whose user is the ServiceAccount, with a token the API issued (one hour). */
  serviceAccountKubeConfig(namespace: string, name: string): Promise<KubeConfig>;
  stop(): Promise<void>;
}

export function kubeConfigFromYaml(yaml: string): KubeConfig {
  const kubeConfig = new Http1KubeConfig();
  kubeConfig.loadFromString(yaml);
  return kubeConfig;
}

export async function startRealCluster(options: RealClusterOptions): Promise<RealCluster> {
  mkdirSync(options.dir, { recursive: true });
  // A real-node cluster restarted after a crash in the same DIR: its old etcd would hold the data dir.
  if (options.realNode === true) await killLeftoversOf(options.dir);
  const realNetwork = options.realNode === true ? await createRealNetwork(options.dir) : undefined;
  const podNetwork = realNetwork === undefined ? await holdPodNetwork() : undefined;
  const releaseNetwork = async () => {
    await podNetwork?.release();
    await realNetwork?.remove();
  };
  let plane: ControlPlane | undefined;
  let kubelet: NodeKubelet | undefined;
  let realNodes: RealNodes | undefined;
  try {
    const log = options.log === undefined ? {} : { log: options.log };
    plane = await startControlPlane({
      dir: options.dir,
      ...log,
      ...(realNetwork === undefined
        ? { serviceCidr: options.serviceCidr }
        : {
            serviceCidr: REAL_SERVICE_CIDR,
            bindAddress: realNetwork.plan.hostAddress,
            clusterCidr: realNetwork.plan.clusterCidr,
          }),
    });
    const admin = kubeConfigFromYaml(kubeconfigYaml(plane.url, plane.caPem, 'canary-l4-admin', plane.adminToken));
    const logDir = join(options.dir, 'logs', 'pods');
    const podNet = `${POD_NETWORK_PREFIX}.${options.podSubnet}`;
    if (realNetwork === undefined) {
      kubelet = await startNodeKubelet({
        kubeConfig: admin,
        server: { url: plane.url, caPem: plane.caPem },
        nodeName: NODE_NAME,
        podNet,
        images,
        logDir,
      });
    } else {
      realNodes = await startRealNodes({
        dir: options.dir,
        network: realNetwork,
        plane,
        kubeConfig: admin,
        images,
        logDir,
        ...log,
      });
      kubelet = realNodes.kubelet;
    }
    const kubeProxy =
      options.kubeProxy === true && realNetwork === undefined
        ? await startKubeProxy({ kubeConfig: admin, endpoints: 'endpointslices' })
        : undefined;
    const core = admin.makeApiClient(CoreV1Api);
    const started = { plane, kubelet };
    return {
      plane,
      kubeConfig: admin,
      kubelet,
      kubeProxy,
      nodes: realNodes?.nodes,
      podNet,
      async serviceAccountKubeConfig(namespace, name) {
        const request = await core.createNamespacedServiceAccountToken({
          name,
          namespace,
          body: { spec: { audiences: [], expirationSeconds: 3600 } },
        });
        return kubeConfigFromYaml(
          kubeconfigYaml(
            started.plane.url,
            started.plane.caPem,
            `system:serviceaccount:${namespace}:${name}`,
            request.status?.token ?? '',
            namespace,
          ),
        );
      },
      async stop() {
        await kubeProxy?.stop();
        await (realNodes ?? started.kubelet).stop();
        await started.plane.stop();
        await releaseNetwork();
        if (options.removeDir === true) rmSync(options.dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await (realNodes ?? kubelet)?.stop();
    await plane?.stop();
    await releaseNetwork();
    throw err;
  }
}
