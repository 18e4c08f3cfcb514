// The control loop of `canary-l4 manager`, as controller-runtime's manager runs its controllers: the
// caches (caches.ts: informers on the CanaryReleases, on the Gateways and GatewayClasses once the
// Gateway API is served, and on what the manager keeps for them, in every watched namespace); one
// reconciler per kind (release-proxies/, gateway-proxies/), each with a work queue of its own keys;
// events only add keys (watches.ts). Only the Lease holder writes. Failures retry with backoff per
// key (the others go on); a periodic resync repairs what no event announced.

import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { boundedCall } from '../kube/client.ts';
import { KeyedQueue } from '../controller-kit/work-queue.ts';
import { WORK_MAX_BACKOFF_MS } from '../controller-kit/constants.ts';
import type { ManagerApis } from './apply.ts';
import { ManagerCaches } from './caches.ts';
import { EventReporter } from './events.ts';
import { GatewayClassReconciler } from './gateway-proxies/class-reconciler.ts';
import { GatewayReconciler } from './gateway-proxies/reconciler.ts';
import { watchWhenServed, type ServedWatch } from './gateway-proxies/served-watch.ts';
import { ManagerMetrics } from './metrics.ts';
import type { ReconcileContext, Reconciler } from './pass.ts';
import { CHILD_KINDS } from './plan.ts';
import { ReleaseReconciler } from './release-proxies/reconciler.ts';
import type { RenderSettings } from './render.ts';
import { requestsOf, type ReconciledKind } from './watches.ts';

export interface ManagerControllerOptions {
  readonly log: Logger;
  readonly registry: Registry;
  readonly kubeConfig: KubeConfig;
  readonly apis: ManagerApis;
  /** The namespaces watched; empty: every namespace. */
  readonly namespaces: readonly string[];
  readonly settings: RenderSettings;
  readonly resyncMs: number;
  readonly requestTimeoutMs: number;
  readonly isLeader: () => boolean;
  /** Who this replica is, for the Events it records. */
  readonly identity: string;
  /** Told once every cache is filled (readiness). */
  readonly onSynced: () => void;
}

/** How many keys of each kind are worked on at once. */
const WORKERS: Readonly<Record<ReconciledKind, number>> = { release: 2, gateway: 2, gatewayClass: 1 };

export class ManagerController {
  readonly #options: ManagerControllerOptions;
  readonly #metrics: ManagerMetrics;
  readonly #cancel = new AbortController();
  readonly #caches: ManagerCaches;
  readonly #queues: ReadonlyMap<ReconciledKind, KeyedQueue>;
  readonly #servedWatch: ServedWatch;
  #synced = false;
  #gatewaysSynced = false;
  #stopped = false;
  #resync: NodeJS.Timeout | undefined;

  constructor(options: ManagerControllerOptions) {
    this.#options = options;
    const { log, apis, kubeConfig, resyncMs } = options;
    this.#metrics = new ManagerMetrics(options.registry);
    const call = boundedCall(this.#cancel.signal, options.requestTimeoutMs);
    this.#caches = new ManagerCaches({
      apis,
      kubeConfig,
      call,
      log,
      onChange: (kind, object) => {
        for (const { kind: reconciled, key } of requestsOf(kind, object, () => this.#caches.list('gateway')))
          this.#queues.get(reconciled)?.add(key);
      },
    });
    const context: ReconcileContext = {
      apis,
      call,
      caches: this.#caches,
      settings: options.settings,
      log,
      metrics: this.#metrics,
      events: new EventReporter({ core: apis.core, identity: options.identity, log, call }),
      writing: () => options.isLeader() && !this.#stopped,
    };
    const gatewaysSynced = () => this.#gatewaysSynced;
    const reconcilers: Record<ReconciledKind, Reconciler> = {
      release: new ReleaseReconciler(context),
      gateway: new GatewayReconciler(context, gatewaysSynced),
      gatewayClass: new GatewayClassReconciler(context, gatewaysSynced),
    };
    this.#queues = new Map(
      (Object.entries(reconcilers) as [ReconciledKind, Reconciler][]).map(([kind, reconciler]) => [
        kind,
        new KeyedQueue({
          reconcile: (key) => reconciler.reconcile(key),
          onError: (key, err, retryInMs) => reconciler.sayFailure(key, err, retryInMs),
          workers: WORKERS[kind],
          maxBackoffMs: WORK_MAX_BACKOFF_MS,
        }),
      ]),
    );
    const scopes = options.namespaces.length === 0 ? [''] : options.namespaces;
    void this.#caches.startReleases(scopes, ['release', ...CHILD_KINDS, 'pod']).then(() => {
      if (this.#stopped) return;
      this.#synced = true;
      for (const queue of this.#queues.values()) queue.start();
      this.#enqueueAll();
      this.#resync = setInterval(() => this.#enqueueAll(), resyncMs);
      options.onSynced();
    });
    this.#servedWatch = watchWhenServed({
      custom: apis.custom,
      call,
      log,
      intervalMs: resyncMs,
      onServed: () => {
        if (this.#stopped) return;
        void this.#caches.startGateways(scopes).then(() => {
          if (this.#stopped) return;
          this.#gatewaysSynced = true;
          this.#enqueueAll();
        });
      },
    });
  }

  /**
   * Leadership changed: a new leader looks at every release at once; one that no longer leads stops
   * reporting proxies (dashboards take the highest value across managers: a stale one would hide a drop).
   */
  leadershipChanged(): void {
    if (!this.#options.isLeader()) this.#metrics.forgetProxies();
    else if (this.#synced) this.#enqueueAll();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#resync);
    this.#servedWatch.stop();
    this.#cancel.abort();
    await Promise.all([...this.#queues.values()].map((queue) => queue.stop()));
    await this.#caches.stop();
  }

  /** Every release, Gateway and class, and everything left of one (an object kept for one that is gone). */
  #enqueueAll(): void {
    const gateways = () => this.#caches.list('gateway');
    for (const [kind, object] of this.#caches.all())
      for (const { kind: reconciled, key } of requestsOf(kind, object, gateways))
        this.#queues.get(reconciled)?.add(key);
  }
}
