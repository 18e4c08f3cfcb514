/**
 * A Node as a kubelet keeps it: registered Ready with room for every pod a test makes, its Lease in
 * kube-node-lease renewed every 10 s, so the node lifecycle controller never finds it gone (a node
 * whose Lease lapses turns NotReady after its grace period, its pods unready, then evicted).
 */
import {
  CoordinationV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  V1MicroTime,
  type KubeConfig,
} from '@kubernetes/client-node';

const strategicMerge = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
const LEASE_SECONDS = 40;
const LEASE_RENEW_MS = 10_000;

export interface RegisteredNode {
  readonly name: string;
  /** Stops renewing the Lease (the Node object stays, as a stopped kubelet's does). */
  stop(): void;
}

export async function registerNode(kubeConfig: KubeConfig, name: string, address: string): Promise<RegisteredNode> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const leases = kubeConfig.makeApiClient(CoordinationV1Api);
  const capacity = { cpu: '64', memory: '256Gi', pods: '250', 'ephemeral-storage': '100Gi' };
  await core
    .createNode({
      body: {
        metadata: {
          name,
          labels: { 'kubernetes.io/hostname': name, 'kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64' },
        },
      },
    })
    .catch((err: { code?: number }) => (err.code === 409 ? undefined : Promise.reject(err)));
  const now = new Date();
  await core.patchNodeStatus(
    {
      name,
      body: {
        status: {
          capacity,
          allocatable: capacity,
          addresses: [
            { type: 'InternalIP', address },
            { type: 'Hostname', address: name },
          ],
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: 'KubeletReady',
              message: 'the canary-l4 kubelet simulation is posting ready status',
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            },
            ...['MemoryPressure', 'DiskPressure', 'PIDPressure'].map((type) => ({
              type,
              status: 'False',
              reason: `KubeletHasNo${type}`,
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            })),
          ],
          nodeInfo: {
            kubeletVersion: 'v0.0.0-canary-l4-simulation',
            kubeProxyVersion: '',
            containerRuntimeVersion: 'canary-l4-processes://1',
            operatingSystem: 'linux',
            architecture: 'amd64',
            kernelVersion: '',
            osImage: 'this host',
            machineID: '',
            systemUUID: '',
            bootID: '',
          },
        },
      },
    },
    strategicMerge,
  );
  const renew = async () => {
    const spec = { holderIdentity: name, leaseDurationSeconds: LEASE_SECONDS, renewTime: new V1MicroTime() };
    try {
      const lease = await leases.readNamespacedLease({ name, namespace: 'kube-node-lease' });
      await leases.replaceNamespacedLease({ name, namespace: 'kube-node-lease', body: { ...lease, spec } });
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
      await leases.createNamespacedLease({ namespace: 'kube-node-lease', body: { metadata: { name }, spec } });
    }
  };
  await renew();
  const timer = setInterval(() => void renew().catch(() => undefined), LEASE_RENEW_MS);
  return { name, stop: () => clearInterval(timer) };
}
