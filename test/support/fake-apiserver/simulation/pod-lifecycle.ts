/**
 * Simulated scheduler and kubelet for the pods of ReplicaSets (what the simulated Deployment
 * controller makes); no process runs. A pod is created Pending; a short scheduling step later it is
 * bound to the one fake node (`spec.nodeName`) and Running with a `podIP` from the pod CIDR, its
 * containers started but not ready; `podReadyDelayMs` after that they are Ready (Ready and
 * ContainersReady True), as if a readiness probe had passed. The address is freed when the pod is
 * deleted; a pod that finds the range full stays Pending until one is freed. Pods nobody's
 * ReplicaSet controls (a test's own, see test/support/cluster/pods.ts) are left to the test.
 *
 * Writes happen from timers, never inside a store event: a write there would reach watchers
 * before the event that caused it.
 */
import { nowRfc3339 } from '../verbs/api.ts';
import { type ControllerClient, controllerUid } from './controller-client.ts';
import { IpAllocator } from '../resources/ip-allocator.ts';
import type { KObject } from '../wire/json.ts';
import type { Store } from '../verbs/store.ts';

/** Between creation and Running: what the scheduler and the container runtime take. */
export const SCHEDULING_DELAY_MS = 20;
export const NODE_NAME = 'fake-node';
const HOST_IP = '127.0.0.1';

export interface PodLifecycleOptions {
  readonly podCidr: string;
  readonly podReadyDelayMs: number;
}

interface Tracked {
  readonly namespace: string;
  readonly name: string;
  timer?: NodeJS.Timeout;
  ip?: string;
}

export class PodLifecycle {
  readonly #client: ControllerClient;
  readonly #readyDelayMs: number;
  readonly #ips: IpAllocator;
  /** Pods of ReplicaSets, by uid. */
  readonly #pods = new Map<string, Tracked>();
  /** Pods waiting for an address, in arrival order. */
  readonly #waiting = new Set<string>();
  readonly #unsubscribe: () => void;

  constructor(store: Store, client: ControllerClient, options: PodLifecycleOptions) {
    this.#client = client;
    this.#readyDelayMs = options.podReadyDelayMs;
    this.#ips = new IpAllocator(options.podCidr, { purpose: 'pod', roundRobin: true });
    this.#unsubscribe = store.subscribe((ev) => {
      if (ev.key !== '/pods') return;
      const uid: string = ev.object.metadata.uid;
      if (ev.type === 'ADDED' && controllerUid(ev.object, 'ReplicaSet') !== undefined) {
        const tracked: Tracked = { namespace: ev.object.metadata.namespace, name: ev.object.metadata.name };
        this.#pods.set(uid, tracked);
        this.#after(tracked, SCHEDULING_DELAY_MS, () => this.#start(uid));
      } else if (ev.type === 'DELETED') this.#forget(uid);
    });
  }

  stop(): void {
    this.#unsubscribe();
    for (const tracked of this.#pods.values()) clearTimeout(tracked.timer);
    this.#pods.clear();
    this.#waiting.clear();
  }

  #after(tracked: Tracked, ms: number, step: () => void): void {
    clearTimeout(tracked.timer);
    tracked.timer = setTimeout(step, ms);
  }

  /** The pod as stored now, unless it is gone or going. */
  #current(uid: string): KObject | undefined {
    const tracked = this.#pods.get(uid);
    const pod = tracked && this.#client.get('/pods', tracked.namespace, tracked.name);
    return pod?.metadata.uid === uid && !pod.metadata.deletionTimestamp ? pod : undefined;
  }

  /** Scheduled and started: on the node, Running with an address, containers not ready yet. */
  #start(uid: string): void {
    const tracked = this.#pods.get(uid);
    let pod = this.#current(uid);
    if (!tracked || !pod) return;
    try {
      tracked.ip = this.#ips.allocate();
    } catch {
      this.#waiting.add(uid);
      return;
    }
    const startedAt = nowRfc3339();
    if (!pod.spec?.nodeName) {
      this.#client.update('/pods', pod, (cur) => ({ ...cur, spec: { ...cur.spec, nodeName: NODE_NAME } }));
      pod = this.#current(uid);
    }
    if (!pod || !this.#client.updateStatus('/pods', pod, podStatus(pod, tracked.ip, startedAt, false))) return;
    this.#after(tracked, this.#readyDelayMs, () => this.#ready(uid, startedAt));
  }

  #ready(uid: string, startedAt: string): void {
    const pod = this.#current(uid);
    const ip = this.#pods.get(uid)?.ip;
    if (pod && ip) this.#client.updateStatus('/pods', pod, podStatus(pod, ip, startedAt, true));
  }

  #forget(uid: string): void {
    const tracked = this.#pods.get(uid);
    if (!tracked) return;
    clearTimeout(tracked.timer);
    this.#pods.delete(uid);
    this.#waiting.delete(uid);
    if (tracked.ip === undefined) return;
    this.#ips.release(tracked.ip);
    const next = this.#waiting.values().next();
    if (next.done) return;
    this.#waiting.delete(next.value);
    const waiting = this.#pods.get(next.value);
    if (waiting) this.#after(waiting, 0, () => this.#start(next.value));
  }
}

/**
 * The pod's Ready or ContainersReady condition as the kubelet writes it: its lastTransitionTime
 * moves only when the status flips.
 */
export function readinessCondition(pod: KObject, type: 'Ready' | 'ContainersReady', ready: boolean): KObject {
  const status = ready ? 'True' : 'False';
  const before = ((pod.status?.conditions ?? []) as KObject[]).find((c) => c.type === type);
  const lastTransitionTime = before?.status === status ? before.lastTransitionTime : nowRfc3339();
  const containers = (pod.spec?.containers ?? []) as KObject[];
  const unready = ready
    ? {}
    : {
        reason: 'ContainersNotReady',
        message: `containers with unready status: [${containers.map((c) => c.name).join(' ')}]`,
      };
  return { type, status, lastTransitionTime, ...unready };
}

/** What the kubelet reports for a started pod, ready or not yet. */
function podStatus(pod: KObject, ip: string, startedAt: string, ready: boolean): KObject {
  const containers = (pod.spec?.containers ?? []) as KObject[];
  return {
    phase: 'Running',
    conditions: [
      { type: 'PodReadyToStartContainers', status: 'True', lastTransitionTime: startedAt },
      { type: 'Initialized', status: 'True', lastTransitionTime: startedAt },
      readinessCondition(pod, 'Ready', ready),
      readinessCondition(pod, 'ContainersReady', ready),
      { type: 'PodScheduled', status: 'True', lastTransitionTime: startedAt },
    ],
    hostIP: HOST_IP,
    hostIPs: [{ ip: HOST_IP }],
    podIP: ip,
    podIPs: [{ ip }],
    startTime: startedAt,
    containerStatuses: containers.map((c) => ({
      name: c.name,
      state: { running: { startedAt } },
      lastState: {},
      ready,
      restartCount: 0,
      image: c.image,
      imageID: '',
      started: true,
    })),
    qosClass: pod.status?.qosClass ?? 'BestEffort',
  };
}
