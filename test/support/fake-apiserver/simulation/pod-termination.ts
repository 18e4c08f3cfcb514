/**
 * Graceful pod deletion, with the Deployment simulation on: what kube-apiserver's pod strategy and
 * the kubelet do between a pod's DELETE and its removal. The DELETE (a client's, the garbage
 * collector's, the ReplicaSet controller's scale-down) only marks the pod: `deletionTimestamp` (now
 * + the grace period) and `deletionGracePeriodSeconds`, so endpoint watchers (kube-proxy) drop it at
 * once, while its containers (test/support/cluster/pod-servers.ts) keep answering the connections already
 * sent its way. Then, as the kubelet does, the pod is reported not Ready (still Running), and once
 * its containers have exited it is reported `Succeeded` (the kubelet puts a deleted pod in a
 * terminal phase) and deleted with a grace of 0, which removes it unless finalizers hold it. The
 * containers here exit cleanly after the grace period or `podTerminationMs`, whichever is shorter
 * (real ones often exit on SIGTERM well before the grace ends), so tests do not wait 30 s.
 *
 * Writes happen from timers, never inside a store event (watchers would see the reaction before
 * the cause), and every pod bound to a node is handled, whoever controls it: the apiserver's rule
 * does not depend on the owner, and a pod left terminating for good would surprise its test.
 */
import { nowRfc3339 } from '../verbs/api.ts';
import type { ControllerClient } from './controller-client.ts';
import { clone, type KObject } from '../wire/json.ts';
import { readinessCondition } from './pod-lifecycle.ts';
import type { Store } from '../verbs/store.ts';

/** spec.terminationGracePeriodSeconds's default (the fake's defaulting sets it, as the API's does). */
const DEFAULT_GRACE_SECONDS = 30;

/**
 * The pod strategy's CheckGracefulDelete: the request's grace period, else the pod's; 0 (delete at
 * once) for a pod that never reached a node or has finished, since no kubelet has anything to stop.
 */
export function podGracePeriod(pod: KObject, requested: number | undefined): number {
  if (!pod.spec?.nodeName || pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return 0;
  const period: number = requested ?? pod.spec.terminationGracePeriodSeconds ?? DEFAULT_GRACE_SECONDS;
  // A negative request means "as short as possible" but still graceful, as kube-apiserver reads it.
  return period < 0 ? 1 : period;
}

const READINESS = new Set(['Ready', 'ContainersReady']);

/** What the kubelet reports while it stops a pod's containers, and (`exited`) once they have exited 0. */
function stoppingStatus(pod: KObject, exited: boolean): KObject {
  const status = clone(pod.status ?? {});
  const finishedAt = nowRfc3339();
  status.conditions = ((status.conditions ?? []) as KObject[]).map((c) =>
    READINESS.has(c.type) ? readinessCondition(pod, c.type, false) : c,
  );
  if (Array.isArray(status.containerStatuses)) {
    status.containerStatuses = (status.containerStatuses as KObject[]).map((c) => {
      if (!exited) return { ...c, ready: false };
      const terminated = { exitCode: 0, reason: 'Completed', startedAt: c.state?.running?.startedAt, finishedAt };
      return { ...c, ready: false, started: false, state: { terminated } };
    });
  }
  if (exited) status.phase = 'Succeeded';
  return status;
}

export interface PodTerminationOptions {
  /** How long the simulated containers take to stop at most, whatever the grace period. */
  readonly podTerminationMs: number;
}

interface Terminating {
  readonly namespace: string;
  readonly name: string;
  /** When the deletion was first seen (the local clock, finer than deletionTimestamp's seconds). */
  readonly since: number;
  /** When the containers will have stopped. */
  dueAt: number;
  timer: NodeJS.Timeout;
}

export class PodTermination {
  readonly #client: ControllerClient;
  readonly #capMs: number;
  /** Pods in their grace period, by uid. */
  readonly #pods = new Map<string, Terminating>();
  readonly #unsubscribe: () => void;

  constructor(store: Store, client: ControllerClient, options: PodTerminationOptions) {
    this.#client = client;
    this.#capMs = options.podTerminationMs;
    this.#unsubscribe = store.subscribe((ev) => {
      if (ev.key !== '/pods') return;
      const pod = ev.object;
      if (!pod.metadata.deletionTimestamp) return;
      // A grace cut to 0 (a forced DELETE) or a removal ends the wait; finalizers may hold the pod on.
      if (ev.type !== 'DELETED' && pod.metadata.deletionGracePeriodSeconds > 0) this.#terminating(pod);
      else this.#forget(pod.metadata.uid);
    });
  }

  stop(): void {
    this.#unsubscribe();
    for (const pod of this.#pods.values()) clearTimeout(pod.timer);
    this.#pods.clear();
  }

  /** A pod in its grace period: newly (stop its readiness, time its end) or again (a shortened grace). */
  #terminating(pod: KObject): void {
    const uid: string = pod.metadata.uid;
    const graceMs = Math.min(pod.metadata.deletionGracePeriodSeconds * 1000, this.#capMs);
    const known = this.#pods.get(uid);
    if (known) {
      if (known.since + graceMs >= known.dueAt) return;
      known.dueAt = known.since + graceMs;
      clearTimeout(known.timer);
      known.timer = setTimeout(() => this.#stopped(uid), Math.max(0, known.dueAt - Date.now()));
      return;
    }
    const since = Date.now();
    const { namespace, name } = pod.metadata;
    this.#pods.set(uid, {
      namespace,
      name,
      since,
      dueAt: since + graceMs,
      timer: setTimeout(() => this.#stopped(uid), graceMs),
    });
    setImmediate(() => this.#unready(uid));
  }

  /** The kubelet stops the containers: no longer Ready, though still Running until they have exited. */
  #unready(uid: string): void {
    const pod = this.#current(uid);
    const readiness = ((pod?.status?.conditions ?? []) as KObject[]).filter((c) => READINESS.has(c.type));
    if (pod && readiness.some((c) => c.status === 'True'))
      this.#client.updateStatus('/pods', pod, stoppingStatus(pod, false));
  }

  /**
   * The containers have exited: the pod in a terminal phase, then the kubelet's final DELETE, with
   * no grace (finalizers may still hold the pod, its containers gone).
   */
  #stopped(uid: string): void {
    let pod = this.#current(uid);
    if (pod && pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed') {
      this.#client.updateStatus('/pods', pod, stoppingStatus(pod, true));
      pod = this.#current(uid);
    }
    this.#pods.delete(uid);
    if (pod) this.#client.delete('/pods', pod, { gracePeriodSeconds: 0 });
  }

  #current(uid: string): KObject | undefined {
    const known = this.#pods.get(uid);
    const pod = known && this.#client.get('/pods', known.namespace, known.name);
    return pod?.metadata.uid === uid ? pod : undefined;
  }

  #forget(uid: string): void {
    clearTimeout(this.#pods.get(uid)?.timer);
    this.#pods.delete(uid);
  }
}
