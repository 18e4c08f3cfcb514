/**
 * The Deployment simulation (`simulateDeployments`): what kube-controller-manager's deployment and
 * replicaset controllers, the scheduler and the kubelet do to objects, for every Deployment in
 * every namespace. Off unless asked for. After any change to a Deployment, ReplicaSet or Pod (by a
 * client or by the simulated kubelet's timers) one pass runs, soon and coalesced: the ReplicaSet
 * controller first (so ReplicaSet statuses count the pods as they are), then the Deployment
 * controller, repeated until a round writes nothing. A pass is synchronous, so no client sees a
 * half-done round, and a rollout's availability arithmetic never works from stale counts. Pods are
 * deleted gracefully meanwhile (pod-termination.ts).
 */
import { nowRfc3339, type FakeApi } from '../verbs/api.ts';
import { ControllerClient } from './controller-client.ts';
import { DeploymentController } from './deployment-controller.ts';
import { PodLifecycle, type PodLifecycleOptions } from './pod-lifecycle.ts';
import { podGracePeriod, PodTermination, type PodTerminationOptions } from './pod-termination.ts';
import { ReplicaSetController } from './replicaset-controller.ts';

const WATCHED = new Set(['/pods', 'apps/replicasets', 'apps/deployments']);
/** A pass that has not settled after this many rounds waits for the next change (it would be a bug). */
const MAX_ROUNDS = 50;

export type DeploymentSimulationOptions = PodLifecycleOptions & PodTerminationOptions;

export class DeploymentSimulation {
  readonly #api: FakeApi;
  readonly #replicaSets: ReplicaSetController;
  readonly #deployments: DeploymentController;
  readonly #kubelet: PodLifecycle;
  readonly #termination: PodTermination;
  readonly #unsubscribe: () => void;
  /** The one pending recheck (for pods that become available once Ready for minReadySeconds). */
  #recheck: { at: number; timer: NodeJS.Timeout } | undefined;
  #scheduled: NodeJS.Immediate | undefined;
  #inPass = false;

  constructor(api: FakeApi, options: DeploymentSimulationOptions) {
    this.#api = api;
    const client = new ControllerClient(api);
    this.#replicaSets = new ReplicaSetController(client, (ms) => this.#recheckIn(ms));
    this.#deployments = new DeploymentController(client);
    this.#kubelet = new PodLifecycle(api.store, client, options);
    this.#termination = new PodTermination(api.store, client, options);
    // Graceful pod deletion only now that something (PodTermination) finishes it.
    api.gracePeriod = (rt, obj, requested) =>
      rt.group === '' && rt.plural === 'pods' ? podGracePeriod(obj, requested) : undefined;
    // The pass's own writes are its next round's input, not a reason for another pass.
    this.#unsubscribe = api.store.subscribe((ev) => {
      if (!this.#inPass && WATCHED.has(ev.key)) this.#schedule();
    });
  }

  stop(): void {
    this.#unsubscribe();
    this.#api.gracePeriod = () => undefined;
    this.#kubelet.stop();
    this.#termination.stop();
    if (this.#scheduled) clearImmediate(this.#scheduled);
    this.#scheduled = undefined;
    clearTimeout(this.#recheck?.timer);
    this.#recheck = undefined;
  }

  #schedule(): void {
    this.#scheduled ??= setImmediate(() => {
      this.#scheduled = undefined;
      this.#pass();
    });
  }

  #recheckIn(ms: number): void {
    const at = Date.now() + ms;
    if (this.#recheck && this.#recheck.at <= at) return;
    clearTimeout(this.#recheck?.timer);
    const timer = setTimeout(() => {
      this.#recheck = undefined;
      this.#schedule();
    }, ms);
    this.#recheck = { at, timer };
  }

  #pass(): void {
    const store = this.#api.store;
    this.#inPass = true;
    try {
      for (let round = 0; round < MAX_ROUNDS; round++) {
        const before = store.resourceVersion;
        const now = Date.now();
        for (const rs of store.list('apps/replicasets')) this.#replicaSets.sync(rs, now);
        const stamp = nowRfc3339();
        for (const d of store.list('apps/deployments')) this.#deployments.sync(d, stamp);
        if (store.resourceVersion === before) return;
      }
    } finally {
      this.#inPass = false;
    }
  }
}
