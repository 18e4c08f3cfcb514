/**
 * Simulated ReplicaSet controller: keeps `spec.replicas` pods of each ReplicaSet (named
 * `<rs>-<5 random>` through generateName, labelled and specified by its template, owned by it) and
 * writes its status (replicas, fullyLabeledReplicas, readyReplicas, availableReplicas,
 * observedGeneration). Surplus pods go in the real controller's order of preference: unscheduled,
 * then pending, then not ready, then ready; the newest first among equals. A pod relabelled out of
 * the selector is released and replaced. A ReplicaSet being deleted gets no new pods (the garbage
 * collector is taking them).
 */
import { type ControllerClient, controllerRef, controllerUid } from './controller-client.ts';
import { clone, type KObject } from '../wire/json.ts';
import { labelSelectorMatches } from '../resources/selectors.ts';

export function isPodReady(pod: KObject): boolean {
  return ((pod.status?.conditions ?? []) as KObject[]).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** Whether a pod counts: not being deleted, not finished. */
export function isPodActive(pod: KObject): boolean {
  return !pod.metadata.deletionTimestamp && pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed';
}

export class ReplicaSetController {
  readonly #client: ControllerClient;
  /** Asks for another pass in `ms` (a pod becomes available once Ready for minReadySeconds). */
  readonly #recheckIn: (ms: number) => void;

  constructor(client: ControllerClient, recheckIn: (ms: number) => void) {
    this.#client = client;
    this.#recheckIn = recheckIn;
  }

  sync(rs: KObject, now: number): void {
    const desired = rs.spec?.replicas ?? 1;
    const active = this.#pods(rs).filter(isPodActive);
    if (!rs.metadata.deletionTimestamp) {
      for (let missing = desired - active.length; missing > 0; missing--)
        this.#client.create('/pods', rs.metadata.namespace, podFor(rs));
      for (const surplus of deletionOrder(active).slice(0, Math.max(0, active.length - desired)))
        this.#client.delete('/pods', surplus);
    }
    this.#writeStatus(rs, this.#pods(rs).filter(isPodActive), now);
  }

  /**
   * Pods this ReplicaSet controls, oldest first (the store keeps creation order). One relabelled
   * out of its selector is released (its owner reference removed), as ClaimPods does, and replaced.
   */
  #pods(rs: KObject): KObject[] {
    const matching: KObject[] = [];
    for (const pod of this.#client.list('/pods', rs.metadata.namespace)) {
      if (controllerUid(pod, 'ReplicaSet') !== rs.metadata.uid) continue;
      if (labelSelectorMatches(rs.spec?.selector, pod.metadata.labels)) matching.push(pod);
      else
        this.#client.update('/pods', pod, (cur) => {
          cur.metadata.ownerReferences = (cur.metadata.ownerReferences as KObject[]).filter(
            (ref) => ref.uid !== rs.metadata.uid,
          );
          if (cur.metadata.ownerReferences.length === 0) delete cur.metadata.ownerReferences;
          return cur;
        });
    }
    return matching;
  }

  #writeStatus(rs: KObject, pods: KObject[], now: number): void {
    const minReadyMs = (rs.spec?.minReadySeconds ?? 0) * 1000;
    const ready = pods.filter(isPodReady);
    const available = ready.filter((pod) => {
      const since = Date.parse(
        ((pod.status.conditions ?? []) as KObject[]).find((c) => c.type === 'Ready')?.lastTransitionTime ?? '',
      );
      const at = (Number.isNaN(since) ? now : since) + minReadyMs;
      if (at > now) this.#recheckIn(at - now);
      return at <= now;
    });
    const templateLabels = Object.entries((rs.spec?.template?.metadata?.labels ?? {}) as Record<string, string>);
    const labelled = pods.filter((pod) => templateLabels.every(([key, value]) => pod.metadata.labels?.[key] === value));
    // The API's omitempty: zero counts are left out, `replicas` always there.
    const status: KObject = { replicas: pods.length };
    for (const [field, count] of [
      ['fullyLabeledReplicas', labelled.length],
      ['readyReplicas', ready.length],
      ['availableReplicas', available.length],
    ] as const) {
      if (count > 0) status[field] = count;
    }
    status.observedGeneration = rs.metadata.generation;
    this.#client.updateStatus('apps/replicasets', rs, status);
  }
}

/** A pod of the ReplicaSet's template. */
function podFor(rs: KObject): KObject {
  const template = clone(rs.spec?.template ?? {});
  const metadata: KObject = {
    generateName: `${rs.metadata.name}-`,
    labels: template.metadata?.labels ?? {},
    ownerReferences: [controllerRef(rs, 'apps/v1', 'ReplicaSet')],
  };
  if (template.metadata?.annotations) metadata.annotations = template.metadata.annotations;
  return { apiVersion: 'v1', kind: 'Pod', metadata, spec: template.spec ?? {} };
}

/** Surplus pods, the first to delete first (controller.ActivePods' order, simplified). */
function deletionOrder(pods: KObject[]): KObject[] {
  const rank = (pod: KObject) =>
    !pod.spec?.nodeName ? 0 : pod.status?.phase === 'Pending' ? 1 : !isPodReady(pod) ? 2 : 3;
  return pods
    .map((pod, created) => ({ pod, created }))
    .sort((a, b) => rank(a.pod) - rank(b.pod) || b.created - a.created)
    .map(({ pod }) => pod);
}
