/**
 * Pods a test plays the kubelet for: create a Pod, then write its status (phase, IP, Ready
 * condition) through the `/status` subresource. On a real API the pods are bound to a node of
 * their own (`nodeName`, which no kubelet runs), so the scheduler leaves them be, the EndpointSlice
 * controller finds their node, and a delete removes them at once (grace 0: no kubelet would confirm it).
 *
 * ```ts
 * const pods = new Pods(api.kubeConfig, 'default');
 * await pods.create({ name: 'web-1', labels: { app: 'web' }, ports: [{ name: 'http', containerPort: 8000 }] });
 * await pods.markReady('web-1', addresses.ip(1));   // Running, podIP, Ready=True
 * await pods.markNotReady('web-1');              // Ready=False; phase and IP kept
 * ```
 */
import {
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Container,
  type V1ContainerPort,
  type V1Pod,
  type V1PodCondition,
} from '@kubernetes/client-node';

// client-node sends json-patch unless told otherwise.
const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export interface PodOptions {
  name: string;
  labels?: Record<string, string>;
  /** Ports of the single default container `app` (ignored when `containers` is given). */
  ports?: V1ContainerPort[];
  containers?: V1Container[];
}

export interface PodState {
  phase?: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  /** Sets `status.podIP` and `status.podIPs`. */
  podIP?: string;
  /** The `Ready` (and `ContainersReady`) condition. */
  ready?: boolean;
}

/** The Ready condition, as kube-proxy and the endpoints controller read it. */
export function isPodReady(pod: V1Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

export class Pods {
  readonly #core: CoreV1Api;
  readonly #namespace: string;
  readonly #nodeName: string | undefined;

  constructor(kubeConfig: KubeConfig, namespace = 'default', nodeName?: string) {
    this.#core = kubeConfig.makeApiClient(CoreV1Api);
    this.#namespace = namespace;
    this.#nodeName = nodeName;
  }

  /** Creates a Pending pod (bound to the test's node, if any; the fake schedules nothing). */
  create(opts: PodOptions): Promise<V1Pod> {
    const containers = opts.containers ?? [
      { name: 'app', image: 'registry.example/app:1', ...(opts.ports ? { ports: opts.ports } : {}) },
    ];
    const spec = { containers, ...(this.#nodeName === undefined ? {} : { nodeName: this.#nodeName }) };
    return this.#core.createNamespacedPod({
      namespace: this.#namespace,
      body: { metadata: { name: opts.name, labels: opts.labels ?? {} }, spec },
    });
  }

  /** Sets labels (a null removes one), as a merge patch. */
  relabel(name: string, labels: Record<string, string | null>): Promise<V1Pod> {
    return this.#core.patchNamespacedPod(
      { name, namespace: this.#namespace, body: { metadata: { labels } } },
      mergePatch,
    );
  }

  /** Creates a pod and marks it Running and Ready at `podIP`. */
  async createReady(opts: PodOptions & { podIP: string }): Promise<V1Pod> {
    await this.create(opts);
    return this.markReady(opts.name, opts.podIP);
  }

  /** Writes the status a kubelet would; what `state` leaves out stays as it is. */
  async setStatus(name: string, state: PodState): Promise<V1Pod> {
    const pod = await this.#core.readNamespacedPod({ name, namespace: this.#namespace });
    const status = pod.status ?? {};
    const phase = state.phase ?? status.phase ?? 'Pending';
    const podIP = state.podIP ?? status.podIP;
    const ready = state.ready ?? isPodReady(pod);
    if (ready && !podIP) throw new Error(`pod ${name}: a Ready pod needs a podIP`);
    const now = new Date();
    // A condition's lastTransitionTime moves only when its status flips, as the kubelet's does.
    const condition = (type: string, on: boolean): V1PodCondition => {
      const value = on ? 'True' : 'False';
      const before = status.conditions?.find((c) => c.type === type);
      return { type, status: value, lastTransitionTime: before?.status === value ? before.lastTransitionTime : now };
    };
    const scheduled = phase !== 'Pending' || podIP !== undefined;
    const body = {
      status: {
        phase,
        ...(podIP ? { podIP, podIPs: [{ ip: podIP }] } : {}),
        conditions: [
          condition('PodScheduled', scheduled),
          condition('Initialized', scheduled),
          condition('ContainersReady', ready),
          condition('Ready', ready),
        ],
      },
    };
    return this.#core.patchNamespacedPodStatus({ name, namespace: this.#namespace, body }, mergePatch);
  }

  /** Running and Ready; `podIP` is required unless the pod has one already. */
  markReady(name: string, podIP?: string): Promise<V1Pod> {
    return this.setStatus(name, { phase: 'Running', ready: true, ...(podIP ? { podIP } : {}) });
  }

  /** Ready=False (a failing readiness probe): still Running, IP kept. */
  markNotReady(name: string): Promise<V1Pod> {
    return this.setStatus(name, { ready: false });
  }

  async delete(name: string): Promise<void> {
    await this.#core.deleteNamespacedPod({
      name,
      namespace: this.#namespace,
      ...(this.#nodeName === undefined ? {} : { gracePeriodSeconds: 0 }),
    });
  }
}
