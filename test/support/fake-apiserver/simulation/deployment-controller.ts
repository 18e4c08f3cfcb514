/**
 * Simulated Deployment controller (pkg/controller/deployment): one ReplicaSet per pod template,
 * named `<deployment>-<pod-template-hash>` and numbered by the `deployment.kubernetes.io/revision`
 * annotation; RollingUpdate (maxSurge/maxUnavailable) and Recreate rollouts; `spec.paused`;
 * `revisionHistoryLimit`; and the status `kubectl rollout status` reads (counts, observedGeneration,
 * the Available and Progressing conditions with the real reasons and messages), written through the
 * status subresource. Left out: proportional scaling of several live ReplicaSets on a scale during
 * a rollout (the rolling arithmetic converges instead), progressDeadlineSeconds timing out,
 * `rollbackTo`, and adopting orphaned ReplicaSets by selector.
 */
import { type ControllerClient, controllerRef, controllerUid } from './controller-client.ts';
import { clone, type KObject } from '../wire/json.ts';
import {
  maxUnavailable,
  newReplicaSetReplicas,
  oldReplicaSetScaleDowns,
  type ReplicaSetCounts,
  resolveFenceposts,
} from './rollout.ts';
import { POD_TEMPLATE_HASH, podTemplateHash, sameTemplateIgnoringHash } from './template-hash.ts';

const REVISION = 'deployment.kubernetes.io/revision';
const DESIRED_REPLICAS = 'deployment.kubernetes.io/desired-replicas';
const MAX_REPLICAS = 'deployment.kubernetes.io/max-replicas';
/** progressDeadlineSeconds at math.MaxInt32 means "no deadline" (and no Progressing condition). */
const NO_DEADLINE = 2147483647;

interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
}

export class DeploymentController {
  readonly #client: ControllerClient;

  constructor(client: ControllerClient) {
    this.#client = client;
  }

  sync(d: KObject, now: string): void {
    if (d.metadata.deletionTimestamp || !d.spec?.selector) return;
    const namespace = d.metadata.namespace;
    const owned = () =>
      this.#client
        .list('apps/replicasets', namespace)
        .filter((rs) => controllerUid(rs, 'Deployment') === d.metadata.uid);
    const rollout = new Rollout(d, now);
    const sets = owned();
    // The store lists in creation order: the first match is the oldest, as the real controller picks.
    let newRs = sets.find((rs) => sameTemplateIgnoringHash(rs.spec?.template, d.spec.template));
    const olds = sets.filter((rs) => rs !== newRs);

    if (newRs) newRs = this.#syncRevision(rollout, newRs, olds);
    if (!rollout.paused) {
      const created =
        rollout.strategy === 'Recreate'
          ? this.#recreate(rollout, newRs, olds)
          : this.#rollingUpdate(rollout, newRs, olds);
      if (created === 'collision') return;
      newRs ??= created;
    } else this.#scalePaused(rollout, newRs, olds);

    const current = owned();
    const latest = newRs && current.find((rs) => rs.metadata.uid === newRs!.metadata.uid);
    if (latest && d.metadata.annotations?.[REVISION] !== latest.metadata.annotations?.[REVISION]) {
      this.#client.update('apps/deployments', d, (cur) => {
        cur.metadata.annotations = { ...cur.metadata.annotations, [REVISION]: latest.metadata.annotations?.[REVISION] };
        return cur;
      });
    }
    this.#client.updateStatus('apps/deployments', d, rollout.status(current, latest));
  }

  /** An existing new ReplicaSet (a rollback to an old template) becomes the latest revision. */
  #syncRevision(rollout: Rollout, newRs: KObject, olds: KObject[]): KObject {
    const wanted = maxRevision(olds) + 1;
    if (revisionOf(newRs) < wanted) {
      this.#client.update('apps/replicasets', newRs, (cur) => {
        cur.metadata.annotations = { ...cur.metadata.annotations, [REVISION]: String(wanted) };
        return cur;
      });
    }
    if (rollout.condition('Progressing') === undefined)
      rollout.setCondition({
        type: 'Progressing',
        status: 'True',
        reason: 'FoundNewReplicaSet',
        message: `Found new replica set "${newRs.metadata.name}"`,
      });
    return this.#client.get('apps/replicasets', newRs.metadata.namespace, newRs.metadata.name) ?? newRs;
  }

  /** rolling.go: grow the new ReplicaSet as far as maxSurge allows, else shrink old ones as far as maxUnavailable allows. */
  #rollingUpdate(rollout: Rollout, newRs: KObject | undefined, olds: KObject[]): KObject | undefined | 'collision' {
    const { replicas, rollingUpdate } = rollout;
    let created: KObject | undefined | 'collision';
    if (!newRs) {
      created = this.#createNew(
        rollout,
        olds,
        newReplicaSetReplicas(replicas, rollingUpdate, { name: '', replicas: 0, available: 0 }, olds.map(counts)),
      );
      if (created === undefined || created === 'collision') return created;
      newRs = created;
    }
    // reconcileNewReplicaSet first; old ReplicaSets shrink only in a sync that did not touch the new one.
    const size = newRs.spec?.replicas ?? 0;
    const target =
      size > replicas
        ? replicas
        : newReplicaSetReplicas(replicas, rollingUpdate, counts(newRs), [newRs, ...olds].map(counts));
    if (target !== size) {
      this.#scale(rollout, newRs, target);
      return created;
    }
    const downs = oldReplicaSetScaleDowns(replicas, rollout.maxUnavailable, counts(newRs), olds.map(counts));
    for (const rs of olds) if (downs.has(rs.metadata.name)) this.#scale(rollout, rs, downs.get(rs.metadata.name)!);
    if (downs.size === 0 && rollout.complete()) this.#cleanup(rollout, olds);
    return created;
  }

  /** recreate.go: old ReplicaSets to 0, wait for their pods to go, then the new one at full size. */
  #recreate(rollout: Rollout, newRs: KObject | undefined, olds: KObject[]): KObject | undefined | 'collision' {
    const active = olds.filter((rs) => (rs.spec?.replicas ?? 0) > 0);
    for (const rs of active) this.#scale(rollout, rs, 0);
    if (active.length > 0 || olds.some((rs) => (rs.status?.replicas ?? 0) > 0) || this.#oldPodsRunning(olds))
      return undefined;
    let created: KObject | undefined | 'collision';
    if (!newRs) {
      created = this.#createNew(rollout, olds, rollout.replicas);
      if (created === undefined || created === 'collision') return created;
      newRs = created;
    }
    if ((newRs.spec?.replicas ?? 0) !== rollout.replicas) this.#scale(rollout, newRs, rollout.replicas);
    else if (rollout.complete()) this.#cleanup(rollout, olds);
    return created;
  }

  /**
   * oldPodsRunning: pods of old ReplicaSets that have not finished, terminating ones included (the
   * ReplicaSets' counts leave those out), since their containers may still be serving.
   */
  #oldPodsRunning(olds: KObject[]): boolean {
    const uids = new Set(olds.map((rs) => rs.metadata.uid));
    return (
      olds.length > 0 &&
      this.#client.list('/pods', olds[0]!.metadata.namespace).some((pod) => {
        const owner = controllerUid(pod, 'ReplicaSet');
        return (
          owner !== undefined && uids.has(owner) && pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed'
        );
      })
    );
  }

  /** Paused: no rollout, but a scale of the one live ReplicaSet still happens. */
  #scalePaused(rollout: Rollout, newRs: KObject | undefined, olds: KObject[]): void {
    const live = [...(newRs ? [newRs] : []), ...olds].filter((rs) => (rs.spec?.replicas ?? 0) > 0);
    const target = live.length === 0 ? newRs : live.length === 1 ? live[0] : undefined;
    if (target && (target.spec?.replicas ?? 0) !== rollout.replicas) this.#scale(rollout, target, rollout.replicas);
  }

  /**
   * The ReplicaSet of the current template, `<deployment>-<hash>`. A name taken by another template
   * is a hash collision: `status.collisionCount` goes up and the next pass hashes again.
   */
  #createNew(rollout: Rollout, olds: KObject[], replicas: number): KObject | undefined | 'collision' {
    const d = rollout.deployment;
    const hash = podTemplateHash(d.spec.template, d.status?.collisionCount);
    const name = `${d.metadata.name}-${hash}`;
    if (this.#client.get('apps/replicasets', d.metadata.namespace, name)) {
      this.#client.updateStatus('apps/deployments', d, {
        ...d.status,
        collisionCount: (d.status?.collisionCount ?? 0) + 1,
      });
      return 'collision';
    }
    const template = clone(d.spec.template);
    template.metadata = { ...template.metadata, labels: { ...template.metadata?.labels, [POD_TEMPLATE_HASH]: hash } };
    const selector = clone(d.spec.selector);
    selector.matchLabels = { ...selector.matchLabels, [POD_TEMPLATE_HASH]: hash };
    const spec: KObject = { replicas, selector, template };
    if (d.spec.minReadySeconds) spec.minReadySeconds = d.spec.minReadySeconds;
    const created = this.#client.create('apps/replicasets', d.metadata.namespace, {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name,
        labels: template.metadata.labels,
        annotations: { ...rollout.replicaAnnotations(), [REVISION]: String(maxRevision(olds) + 1) },
        ownerReferences: [controllerRef(d, 'apps/v1', 'Deployment')],
      },
      spec,
    });
    if (created)
      rollout.setCondition({
        type: 'Progressing',
        status: 'True',
        reason: 'NewReplicaSetCreated',
        message: `Created new replica set "${name}"`,
      });
    return created;
  }

  #scale(rollout: Rollout, rs: KObject, replicas: number): void {
    this.#client.update('apps/replicasets', rs, (cur) => {
      cur.spec = { ...cur.spec, replicas };
      cur.metadata.annotations = { ...cur.metadata.annotations, ...rollout.replicaAnnotations() };
      return cur;
    });
  }

  /** sync.go cleanupDeployment: old ReplicaSets at 0 beyond revisionHistoryLimit go, oldest revision first. */
  #cleanup(rollout: Rollout, olds: KObject[]): void {
    const limit = rollout.deployment.spec.revisionHistoryLimit;
    if (typeof limit !== 'number') return;
    const alive = olds.filter((rs) => !rs.metadata.deletionTimestamp).sort((a, b) => revisionOf(a) - revisionOf(b));
    for (const rs of alive.slice(0, Math.max(0, alive.length - limit))) {
      const idle =
        (rs.spec?.replicas ?? 0) === 0 &&
        (rs.status?.replicas ?? 0) === 0 &&
        (rs.status?.observedGeneration ?? 0) >= rs.metadata.generation;
      if (idle) this.#client.delete('apps/replicasets', rs);
    }
  }
}

/** One sync of one Deployment: its parameters, and the conditions as they change during the sync. */
class Rollout {
  readonly deployment: KObject;
  readonly replicas: number;
  readonly strategy: string;
  readonly rollingUpdate: KObject | undefined;
  readonly maxUnavailable: number;
  readonly paused: boolean;
  readonly #now: string;
  #conditions: KObject[];

  constructor(d: KObject, now: string) {
    this.deployment = d;
    this.replicas = d.spec.replicas ?? 1;
    this.strategy = d.spec.strategy?.type ?? 'RollingUpdate';
    this.rollingUpdate = d.spec.strategy?.rollingUpdate;
    this.maxUnavailable = maxUnavailable(this.strategy, this.rollingUpdate, this.replicas);
    this.paused = d.spec.paused === true;
    this.#now = now;
    this.#conditions = clone((d.status?.conditions ?? []) as KObject[]);
    const progressing = this.condition('Progressing');
    if (this.paused && progressing?.reason !== 'DeploymentPaused')
      this.setCondition({
        type: 'Progressing',
        status: 'Unknown',
        reason: 'DeploymentPaused',
        message: 'Deployment is paused',
      });
    if (!this.paused && progressing?.reason === 'DeploymentPaused')
      this.setCondition({
        type: 'Progressing',
        status: 'Unknown',
        reason: 'DeploymentResumed',
        message: 'Deployment is resumed',
      });
  }

  /** The annotations every scale writes on a ReplicaSet (SetReplicasAnnotations). */
  replicaAnnotations(): Record<string, string> {
    const surge = this.strategy === 'RollingUpdate' ? resolveFenceposts(this.rollingUpdate, this.replicas).maxSurge : 0;
    return { [DESIRED_REPLICAS]: String(this.replicas), [MAX_REPLICAS]: String(this.replicas + surge) };
  }

  condition(type: string): KObject | undefined {
    return this.#conditions.find((c) => c.type === type);
  }

  /** SetDeploymentCondition: same status and reason → unchanged; same status → lastTransitionTime kept. */
  setCondition(c: Condition, force = false): void {
    const cur = this.condition(c.type);
    if (!force && cur?.status === c.status && cur.reason === c.reason) return;
    const lastTransitionTime = cur?.status === c.status ? cur.lastTransitionTime : this.#now;
    this.#conditions = [
      ...this.#conditions.filter((x) => x.type !== c.type),
      {
        type: c.type,
        status: c.status,
        lastUpdateTime: this.#now,
        lastTransitionTime,
        reason: c.reason,
        message: c.message,
      },
    ];
  }

  /** DeploymentComplete, against the status the Deployment has now. */
  complete(status: KObject = this.deployment.status ?? {}): boolean {
    const r = this.replicas;
    return (
      (status.updatedReplicas ?? 0) === r &&
      (status.replicas ?? 0) === r &&
      (status.availableReplicas ?? 0) === r &&
      (status.observedGeneration ?? 0) >= this.deployment.metadata.generation
    );
  }

  /** calculateStatus + syncRolloutStatus: counts from the ReplicaSets, then the conditions. */
  status(all: KObject[], newRs: KObject | undefined): KObject {
    const d = this.deployment;
    const total = (field: string, sets = all) => sets.reduce((n, rs) => n + Number(rs.status?.[field] ?? 0), 0);
    const available = total('availableReplicas');
    const desired = all.reduce((n, rs) => n + Number(rs.spec?.replicas ?? 0), 0);
    const counts: KObject = {
      observedGeneration: d.metadata.generation,
      replicas: total('replicas'),
      updatedReplicas: newRs ? total('replicas', [newRs]) : 0,
      readyReplicas: total('readyReplicas'),
      availableReplicas: available,
      unavailableReplicas: Math.max(0, desired - available),
    };
    if (available >= this.replicas - this.maxUnavailable)
      this.setCondition({
        type: 'Available',
        status: 'True',
        reason: 'MinimumReplicasAvailable',
        message: 'Deployment has minimum availability.',
      });
    else
      this.setCondition({
        type: 'Available',
        status: 'False',
        reason: 'MinimumReplicasUnavailable',
        message: 'Deployment does not have minimum availability.',
      });
    this.#progress(counts, newRs);
    // The API's omitempty: zero counts are left out.
    const status: KObject = Object.fromEntries(Object.entries(counts).filter(([, n]) => n !== 0));
    if (this.#conditions.length > 0) status.conditions = this.#conditions;
    if (d.status?.collisionCount !== undefined) status.collisionCount = d.status.collisionCount;
    return status;
  }

  #progress(counts: KObject, newRs: KObject | undefined): void {
    const deadline = this.deployment.spec.progressDeadlineSeconds;
    if (deadline === undefined || deadline === NO_DEADLINE) {
      this.#conditions = this.#conditions.filter((c) => c.type !== 'Progressing');
      return;
    }
    if (this.paused) return;
    const current = this.condition('Progressing');
    if (counts.replicas === counts.updatedReplicas && current?.reason === 'NewReplicaSetAvailable') return;
    const subject = newRs ? `ReplicaSet "${newRs.metadata.name}"` : `Deployment "${this.deployment.metadata.name}"`;
    const before = this.deployment.status ?? {};
    const progressed =
      counts.updatedReplicas > (before.updatedReplicas ?? 0) ||
      counts.replicas - counts.updatedReplicas < (before.replicas ?? 0) - (before.updatedReplicas ?? 0) ||
      counts.readyReplicas > (before.readyReplicas ?? 0) ||
      counts.availableReplicas > (before.availableReplicas ?? 0);
    if (this.complete(counts))
      this.setCondition({
        type: 'Progressing',
        status: 'True',
        reason: 'NewReplicaSetAvailable',
        message: `${subject} has successfully progressed.`,
      });
    // Progress refreshes lastUpdateTime even with the same reason (the special case in syncRolloutStatus).
    else if (progressed)
      this.setCondition(
        { type: 'Progressing', status: 'True', reason: 'ReplicaSetUpdated', message: `${subject} is progressing.` },
        true,
      );
  }
}

function counts(rs: KObject): ReplicaSetCounts {
  return { name: rs.metadata.name, replicas: rs.spec?.replicas ?? 0, available: rs.status?.availableReplicas ?? 0 };
}

function revisionOf(rs: KObject): number {
  return Number(rs.metadata.annotations?.[REVISION] ?? 0) || 0;
}

function maxRevision(sets: KObject[]): number {
  return sets.reduce((max, rs) => Math.max(max, revisionOf(rs)), 0);
}
