// The proxy's view of its namespace: one informer per kind the release reads (its CanaryRelease by
// name; the Services, Pods, Deployments and ReplicaSets of the namespace), each restarting on its own
// after a failure. A pass reads them through here, never through the API.

import type { KubernetesListObject, KubernetesObject, V1Deployment, V1Pod, V1ReplicaSet, V1Service } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { KubeClients } from '../../kube/client.ts';
import { startInformer, type Informer } from '../../kube/informer.ts';
import { GROUP, PLURAL, VERSION, type CanaryRelease } from '../../api/types.ts';

/** Informer tuning: a server-side watch timeout, and a restart when a watch has been silent for long. */
const WATCH_TIMEOUT_SECONDS = 300;
const STALE_WATCH_MS = 10 * 60_000;
/** Recovery after an API outage must be prompt: informers retry at least this often. */
const INFORMER_MAX_BACKOFF_MS = 3_000;

export interface ReleaseCachesOptions {
  readonly clients: KubeClients;
  readonly namespace: string;
  readonly release: string;
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
  readonly #pods: Informer<V1Pod>;
  /** The stable and canary workloads of spec.workloads, and the stable ReplicaSets' pod-template-hash. */
  readonly #deployments: Informer<V1Deployment>;
  readonly #replicaSets: Informer<V1ReplicaSet>;
  /** Resolves once every cache holds its first list: a pass on a half-filled cache would see Services as missing. */
  readonly synced: Promise<void>;

  constructor({ clients, namespace, release, callOptions, onChange, onRestarted, log }: ReleaseCachesOptions) {
    this.#namespace = namespace;
    this.#name = release;
    const { core, apps, custom, kubeConfig } = clients;
    const shared = {
      kubeConfig, onChange, log, staleAfterMs: STALE_WATCH_MS, watchTimeoutSeconds: WATCH_TIMEOUT_SECONDS,
      maxBackoffMs: INFORMER_MAX_BACKOFF_MS, onRestarted,
    };
    const fieldSelector = `metadata.name=${release}`;
    this.#releases = startInformer<KubernetesObject>({
      ...shared,
      path: `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/${PLURAL}`,
      fieldSelector,
      list: () => custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, fieldSelector }, callOptions) as Promise<KubernetesListObject<KubernetesObject>>,
    });
    this.#services = startInformer<V1Service>({
      ...shared,
      path: `/api/v1/namespaces/${namespace}/services`,
      list: () => core.listNamespacedService({ namespace }, callOptions),
    });
    this.#pods = startInformer<V1Pod>({
      ...shared,
      path: `/api/v1/namespaces/${namespace}/pods`,
      list: () => core.listNamespacedPod({ namespace }, callOptions),
    });
    this.#deployments = startInformer<V1Deployment>({
      ...shared,
      path: `/apis/apps/v1/namespaces/${namespace}/deployments`,
      list: () => apps.listNamespacedDeployment({ namespace }, callOptions),
    });
    this.#replicaSets = startInformer<V1ReplicaSet>({
      ...shared,
      path: `/apis/apps/v1/namespaces/${namespace}/replicasets`,
      list: () => apps.listNamespacedReplicaSet({ namespace }, callOptions),
    });
    this.synced = Promise.all([this.#releases.synced, this.#services.synced, this.#pods.synced, this.#deployments.synced, this.#replicaSets.synced]).then(() => undefined);
  }

  release(): CanaryRelease | undefined {
    // The cache holds the object as the apiserver sent it; CanaryRelease is its type (api/types.ts).
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

  pods(): readonly V1Pod[] {
    return this.#pods.list();
  }

  deployments(): readonly V1Deployment[] {
    return this.#deployments.list();
  }

  replicaSets(): readonly V1ReplicaSet[] {
    return this.#replicaSets.list();
  }

  async stop(): Promise<void> {
    await Promise.all([this.#releases.stop(), this.#services.stop(), this.#pods.stop(), this.#deployments.stop(), this.#replicaSets.stop()]);
  }
}
