// The proxy's view of its namespace: one informer per kind the release reads (its CanaryRelease by
// name; the Services and Deployments of the namespace; the Pods and ReplicaSets its selectors can
// match, watched-pods.ts, and its own pods by --proxy-selector), each restarting on its own after a
// failure. A pass reads them through here, never through the API. When the release or its Services
// change what the Pods and ReplicaSets watch selects, a watch with the new selector starts, and the
// old one answers until the new one holds its first list; meanwhile the caches are not settled and
// no pass runs (a pass on a half-filled cache would see a side with no pods).

import type {
  KubernetesListObject,
  KubernetesObject,
  V1Deployment,
  V1Pod,
  V1ReplicaSet,
  V1Service,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeClients } from '../../kube/client.ts';
import { startInformer, type Informer } from '../../kube/informer.ts';
import { GROUP, PLURAL, VERSION, type Labels } from '../../api/names.ts';
import type { CanaryRelease } from '../../api/release-types.ts';
import { watchedSelector } from './watched-pods.ts';

/** Informer tuning: a server-side watch timeout, and a restart when a watch has been silent for long. */
const WATCH_TIMEOUT_SECONDS = 300;
const STALE_WATCH_MS = 10 * 60_000;
/** Recovery after an API outage must be prompt: informers retry at least this often. */
const INFORMER_MAX_BACKOFF_MS = 3_000;

export interface ReleaseCachesOptions {
  readonly clients: KubeClients;
  readonly namespace: string;
  readonly release: string;
  /** The labels of the proxy's own pods (--proxy-selector): replicas read each other's flags and counters. */
  readonly proxySelector: Labels;
  /** Every call of the initial lists and relists. */
  readonly callOptions: Parameters<KubeClients['core']['listNamespacedPod']>[1];
  /** Called for every add, update and delete of any kind; must only enqueue work. */
  readonly onChange: () => void;
  /** A watch back after an outage: the API answers again. */
  readonly onRestarted: () => void;
  readonly log: Logger;
}

export class ReleaseCaches {
  readonly #namespace: string;
  readonly #name: string;
  readonly #releases: Informer<KubernetesObject>;
  readonly #services: Informer<V1Service>;
  /** The pods of the release's Services and workloads, and the proxy's own. */
  readonly #pods: FollowingInformer<V1Pod>;
  readonly #proxyPods: Informer<V1Pod>;
  /** The stable and canary workloads of spec.workloads, and the stable ReplicaSets' pod-template-hash. */
  readonly #deployments: Informer<V1Deployment>;
  readonly #replicaSets: FollowingInformer<V1ReplicaSet>;
  readonly #proxySelector: Labels;
  /** The release, its Services and the proxy's pods hold their first list: the selector can be told. */
  #listed = false;
  /** Resolves once every cache holds its first list: a pass on a half-filled cache would see Services as missing. */
  readonly synced: Promise<void>;

  constructor({
    clients,
    namespace,
    release,
    proxySelector,
    callOptions,
    onChange,
    onRestarted,
    log,
  }: ReleaseCachesOptions) {
    this.#namespace = namespace;
    this.#name = release;
    this.#proxySelector = proxySelector;
    const { core, apps, custom, kubeConfig } = clients;
    const shared = {
      kubeConfig,
      onChange,
      log,
      staleAfterMs: STALE_WATCH_MS,
      watchTimeoutSeconds: WATCH_TIMEOUT_SECONDS,
      maxBackoffMs: INFORMER_MAX_BACKOFF_MS,
      onRestarted,
    };
    const fieldSelector = `metadata.name=${release}`;
    // What the release and its Services select decides which Pods and ReplicaSets are watched.
    const followRelease = () => {
      onChange();
      if (this.#listed) void this.#follow();
    };
    this.#releases = startInformer<KubernetesObject>({
      ...shared,
      onChange: followRelease,
      path: `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
      fieldSelector,
      list: () =>
        custom.listNamespacedCustomObject(
          { group: GROUP, version: VERSION, namespace, plural: PLURAL, fieldSelector },
          callOptions,
        ) as Promise<KubernetesListObject<KubernetesObject>>,
    });
    this.#services = startInformer<V1Service>({
      ...shared,
      onChange: followRelease,
      path: `/api/v1/namespaces/${namespace}/services`,
      list: () => core.listNamespacedService({ namespace }, callOptions),
    });
    const podsPath = `/api/v1/namespaces/${namespace}/pods`;
    const proxyLabels = Object.entries(proxySelector)
      .map(([key, value]) => `${key}=${value}`)
      .join(',');
    this.#proxyPods = startInformer<V1Pod>({
      ...shared,
      path: podsPath,
      labelSelector: proxyLabels,
      list: () => core.listNamespacedPod({ namespace, labelSelector: proxyLabels }, callOptions),
    });
    this.#pods = new FollowingInformer(
      (labelSelector) =>
        startInformer<V1Pod>({
          ...shared,
          path: podsPath,
          labelSelector,
          list: () => core.listNamespacedPod({ namespace, labelSelector }, callOptions),
        }),
      onChange,
    );
    this.#deployments = startInformer<V1Deployment>({
      ...shared,
      path: `/apis/apps/v1/namespaces/${namespace}/deployments`,
      list: () => apps.listNamespacedDeployment({ namespace }, callOptions),
    });
    this.#replicaSets = new FollowingInformer(
      (labelSelector) =>
        startInformer<V1ReplicaSet>({
          ...shared,
          path: `/apis/apps/v1/namespaces/${namespace}/replicasets`,
          labelSelector,
          list: () => apps.listNamespacedReplicaSet({ namespace, labelSelector }, callOptions),
        }),
      onChange,
    );
    this.synced = Promise.all([
      this.#releases.synced,
      this.#services.synced,
      this.#proxyPods.synced,
      this.#deployments.synced,
    ]).then(() => {
      this.#listed = true;
      return this.#follow();
    });
  }

  /** Watches what the release selects now; resolves once the caches are settled. */
  #follow(): Promise<void> {
    const selector = watchedSelector(this.release(), this.#services.list(), this.#proxySelector);
    return Promise.all([this.#pods.follow(selector), this.#replicaSets.follow(selector)]).then(() => undefined);
  }

  /** False while a watch with a new selector fills its cache: a pass must wait for it (see the header). */
  settled(): boolean {
    return this.#pods.settled() && this.#replicaSets.settled();
  }

  release(): CanaryRelease | undefined {
    // The cache holds the object as the apiserver sent it; CanaryRelease is its type (api/release-types.ts).
    return this.#releases.get(this.#name, this.#namespace) as CanaryRelease | undefined;
  }

  service(name: string): V1Service | undefined {
    return this.#services.get(name, this.#namespace);
  }

  deployment(name: string): V1Deployment | undefined {
    return this.#deployments.get(name, this.#namespace);
  }

  services(): readonly V1Service[] {
    return this.#services.list();
  }

  /** The release's pods and the proxy's, each once (an application selector may match the proxy's pods). */
  pods(): readonly V1Pod[] {
    const proxyPods = this.#proxyPods.list();
    const own = new Set(proxyPods.map((pod) => pod.metadata?.uid));
    return [...proxyPods, ...this.#pods.list().filter((pod) => !own.has(pod.metadata?.uid))];
  }

  deployments(): readonly V1Deployment[] {
    return this.#deployments.list();
  }

  replicaSets(): readonly V1ReplicaSet[] {
    return this.#replicaSets.list();
  }

  async stop(): Promise<void> {
    await Promise.all([
      this.#releases.stop(),
      this.#services.stop(),
      this.#proxyPods.stop(),
      this.#pods.stop(),
      this.#deployments.stop(),
      this.#replicaSets.stop(),
    ]);
  }
}

interface Selection<T extends KubernetesObject> {
  /** undefined: nothing is watched. */
  readonly selector: string | undefined;
  readonly informer: Informer<T> | undefined;
}

/**
 * An informer whose label selector follows the release. A new selector starts a new informer; the
 * old one keeps answering until the new one holds its first list, then stops.
 */
class FollowingInformer<T extends KubernetesObject> {
  readonly #start: (labelSelector: string) => Informer<T>;
  /** Called when a new selection answers: the cache changed. */
  readonly #onSwitched: () => void;
  #current: Selection<T> = { selector: undefined, informer: undefined };
  #next: Selection<T> | undefined;
  #waiting: (() => void)[] = [];

  constructor(start: (labelSelector: string) => Informer<T>, onSwitched: () => void) {
    this.#start = start;
    this.#onSwitched = onSwitched;
  }

  /** Watches `selector` from now on; resolves once no switch is pending (this one or a later one). */
  follow(selector: string | undefined): Promise<void> {
    if ((this.#next ?? this.#current).selector !== selector) this.#switchTo(selector);
    return this.settled() ? Promise.resolve() : new Promise((resolve) => this.#waiting.push(resolve));
  }

  settled(): boolean {
    return this.#next === undefined;
  }

  list(): readonly T[] {
    return this.#current.informer?.list() ?? [];
  }

  async stop(): Promise<void> {
    const { informer } = this.#current;
    const next = this.#next?.informer;
    await Promise.all([informer?.stop(), next?.stop()]);
  }

  #switchTo(selector: string | undefined): void {
    // A switch still filling is superseded: its cache would be stale before it is used.
    void this.#next?.informer?.stop();
    if (selector === this.#current.selector) {
      this.#next = undefined;
      this.#settle();
      return;
    }
    const next: Selection<T> = { selector, informer: selector === undefined ? undefined : this.#start(selector) };
    this.#next = next;
    void (next.informer?.synced ?? Promise.resolve()).then(() => {
      if (this.#next !== next) return;
      const old = this.#current;
      this.#current = next;
      this.#next = undefined;
      void old.informer?.stop();
      this.#settle();
      this.#onSwitched();
    });
  }

  #settle(): void {
    for (const resolve of this.#waiting.splice(0)) resolve();
  }
}
