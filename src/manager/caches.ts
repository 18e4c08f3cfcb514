// The manager's caches: an informer per watched kind and scope ('' for every namespace, or one
// namespace), the Gateway kinds' apart since they start only once the Gateway API is served.
// The reconcilers read them; every change of a cached object is handed to `onChange` (watches.ts
// turns it into the keys to reconcile).

import type { KubeConfig, KubernetesObject, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { CallOptions } from '../kube/client.ts';
import { CONTROLLER_INFORMER_TUNING, startInformer, type Informer } from '../kube/informer.ts';
import type { ManagerApis, Written } from './apply.ts';
import { GATEWAY_WATCHED, source, type GatewayWatched, type Watched } from './sources.ts';

export interface ManagerCachesOptions {
  readonly apis: ManagerApis;
  readonly kubeConfig: KubeConfig;
  readonly call: CallOptions;
  readonly log: Logger;
  readonly onChange: (kind: Watched, object: KubernetesObject) => void;
}

type Informers = Map<string, Map<Watched, Informer<KubernetesObject>>>;

export class ManagerCaches {
  readonly #options: ManagerCachesOptions;
  /** Per scope, per watched kind. */
  readonly #informers: Informers = new Map();
  /** The same, for the Gateway kinds (the cluster-scoped ones under ''). */
  readonly #gatewayInformers: Informers = new Map();

  constructor(options: ManagerCachesOptions) {
    this.#options = options;
  }

  /** Starts the release kinds' informers in each scope; resolves once they are all filled. */
  startReleases(scopes: readonly string[], kinds: readonly Watched[]): Promise<void> {
    for (const scope of scopes) this.#informers.set(scope, this.#start(scope, kinds));
    return synced(this.#informers);
  }

  /** The Gateways of the watched namespaces, and cluster-wide the classes and the pods' ClusterRoleBindings. */
  startGateways(scopes: readonly string[]): Promise<void> {
    const clusterWide: readonly GatewayWatched[] = ['gatewayClass', 'clusterRoleBinding'];
    for (const scope of scopes)
      this.#gatewayInformers.set(scope, this.#start(scope, scope === '' ? GATEWAY_WATCHED : ['gateway']));
    if (!this.#gatewayInformers.has('')) this.#gatewayInformers.set('', this.#start('', clusterWide));
    return synced(this.#gatewayInformers);
  }

  informer(kind: Watched, namespace: string): Informer<KubernetesObject> | undefined {
    const sets = (GATEWAY_WATCHED as readonly Watched[]).includes(kind) ? this.#gatewayInformers : this.#informers;
    // Cluster-wide informers are under '' (the cluster-scoped kinds always are), the others per namespace.
    return sets.get('')?.get(kind) ?? sets.get(namespace)?.get(kind);
  }

  /** An object the manager writes, as cached: cluster-scoped ones by name alone. */
  lookup(child: Written['child'], name: string, namespace: string): KubernetesObject | undefined {
    const scoped = child === 'clusterRoleBinding' || child === 'gatewayClass' ? '' : namespace;
    return this.informer(child === 'service' ? 'metricsService' : child, namespace)?.get(name, scoped);
  }

  /** The cached pods of a namespace labelled `label: value` (a release's or a Gateway's proxy pods). */
  pods(namespace: string, label: string, value: string): V1Pod[] {
    return (this.informer('pod', namespace)?.list() ?? []).filter(
      (pod) => pod.metadata?.namespace === namespace && pod.metadata.labels?.[label] === value,
    ) as V1Pod[];
  }

  /** The cached objects of a kind, in every scope. */
  list(kind: Watched): KubernetesObject[] {
    return [...this.#informers.values(), ...this.#gatewayInformers.values()].flatMap(
      (informers) => informers.get(kind)?.list() ?? [],
    );
  }

  /** Every cached object, with its kind. */
  *all(): Generator<[Watched, KubernetesObject]> {
    for (const sets of [this.#informers, this.#gatewayInformers])
      for (const informers of sets.values())
        for (const [kind, informer] of informers) for (const object of informer.list()) yield [kind, object];
  }

  async stop(): Promise<void> {
    await Promise.all(
      [...this.#informers.values(), ...this.#gatewayInformers.values()].flatMap((informers) =>
        [...informers.values()].map((informer) => informer.stop()),
      ),
    );
  }

  #start(scope: string, kinds: readonly Watched[]): Map<Watched, Informer<KubernetesObject>> {
    const { apis, call, kubeConfig, log, onChange } = this.#options;
    const informers = new Map<Watched, Informer<KubernetesObject>>();
    for (const kind of kinds)
      informers.set(
        kind,
        startInformer<KubernetesObject>({
          ...source(apis, kind, scope, call),
          kubeConfig,
          onChange: (object) => onChange(kind, object),
          log,
          ...CONTROLLER_INFORMER_TUNING,
        }),
      );
    return informers;
  }
}

function synced(sets: Informers): Promise<void> {
  const all = [...sets.values()].flatMap((informers) => [...informers.values()]);
  return Promise.all(all.map((informer) => informer.synced)).then(() => undefined);
}
