// The control loop of `canary-l4 manager`: informers on the CanaryReleases and on what the manager
// keeps for them (found by its managed-by label), in every watched namespace; events only add the
// release's key to the work queue; a worker reads the caches, calls the pure plan and applies its
// steps. Only the Lease holder writes. Failures retry with backoff per release (the others go
// on); a periodic resync repairs what no event announced.

import type { KubeConfig, KubernetesListObject, KubernetesObject, V1ObjectReference, V1Pod } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { METRIC_PREFIX } from '../defaults.ts';
import { boundedCall, type CallOptions } from '../kube/client.ts';
import { EventRecorder } from '../kube/events.ts';
import { startInformer, type Informer } from '../kube/informer.ts';
import { apiFailure, describeError, isAlreadyExists } from '../kube/patch.ts';
import { API_VERSION, GROUP, KIND, LABEL_RELEASE, PLURAL, VERSION } from '../control/types.ts';
import { applyManagerSteps, ManagerStepError, type ManagerApis, type Written } from './apply.ts';
import { CHILD_KINDS, childName, KIND_OF, plan, type ChildKind, type Plan, type Step } from './plan.ts';
import { KeyedQueue } from './queue.ts';
import type { RenderSettings } from './render.ts';
import { LABEL_MANAGED_BY, MANAGED_BY, PROXY_CONDITION, type ManagedRelease } from './types.ts';

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

const WATCH_TIMEOUT_SECONDS = 300;
const STALE_WATCH_MS = 10 * 60_000;
const INFORMER_MAX_BACKOFF_MS = 3_000;
const WORK_MAX_BACKOFF_MS = 10_000;
const WORKERS = 2;
/** How long a pass waits for the caches to show the previous pass's writes of the same release. */
const OWN_WRITES_WAIT_MS = 2_000;
const MANAGED_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;

type Watched = ChildKind | 'release' | 'pod';

/** How each watched kind is listed and watched, in one namespace ('' for all of them). */
function source(apis: ManagerApis, kind: Watched, namespace: string, call: CallOptions): { path: string; labelSelector?: string; list: () => Promise<KubernetesListObject<KubernetesObject>> } {
  const labelSelector = MANAGED_SELECTOR;
  const at = (base: string, plural: string) => `${base}${namespace === '' ? '' : `/namespaces/${namespace}`}/${plural}`;
  const scoped = <T>(inNamespace: () => Promise<T>, everywhere: () => Promise<T>) => () => (namespace === '' ? everywhere() : inNamespace()) as Promise<KubernetesListObject<KubernetesObject>>;
  switch (kind) {
    case 'release':
      return {
        path: at(`/apis/${GROUP}/${VERSION}`, PLURAL),
        list: scoped(() => apis.custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, namespace }, call),
          () => apis.custom.listCustomObjectForAllNamespaces({ group: GROUP, version: VERSION, resourcePlural: PLURAL }, call)),
      };
    case 'deployment':
      return { path: at('/apis/apps/v1', 'deployments'), labelSelector, list: scoped(() => apis.apps.listNamespacedDeployment({ namespace, labelSelector }, call), () => apis.apps.listDeploymentForAllNamespaces({ labelSelector }, call)) };
    case 'podDisruptionBudget':
      return { path: at('/apis/policy/v1', 'poddisruptionbudgets'), labelSelector, list: scoped(() => apis.policy.listNamespacedPodDisruptionBudget({ namespace, labelSelector }, call), () => apis.policy.listPodDisruptionBudgetForAllNamespaces({ labelSelector }, call)) };
    case 'roleBinding':
      return { path: at('/apis/rbac.authorization.k8s.io/v1', 'rolebindings'), labelSelector, list: scoped(() => apis.rbac.listNamespacedRoleBinding({ namespace, labelSelector }, call), () => apis.rbac.listRoleBindingForAllNamespaces({ labelSelector }, call)) };
    case 'serviceAccount':
      return { path: at('/api/v1', 'serviceaccounts'), labelSelector, list: scoped(() => apis.core.listNamespacedServiceAccount({ namespace, labelSelector }, call), () => apis.core.listServiceAccountForAllNamespaces({ labelSelector }, call)) };
    case 'metricsService':
      return { path: at('/api/v1', 'services'), labelSelector, list: scoped(() => apis.core.listNamespacedService({ namespace, labelSelector }, call), () => apis.core.listServiceForAllNamespaces({ labelSelector }, call)) };
    case 'pod':
      return { path: at('/api/v1', 'pods'), labelSelector, list: scoped(() => apis.core.listNamespacedPod({ namespace, labelSelector }, call), () => apis.core.listPodForAllNamespaces({ labelSelector }, call)) };
  }
}

interface ManagerMetrics {
  readonly reconciles: Counter<'result'>;
  readonly duration: Histogram;
  readonly replicas: Gauge<'release_namespace' | 'release' | 'state'>;
}

function registerMetrics(registry: Registry): ManagerMetrics {
  const registers = [registry];
  return {
    reconciles: new Counter({ name: `${METRIC_PREFIX}manager_reconcile_total`, help: 'Reconcile passes of a CanaryRelease\'s proxy, by result.', labelNames: ['result'], registers }),
    duration: new Histogram({ name: `${METRIC_PREFIX}manager_reconcile_duration_seconds`, help: 'Duration of a manager reconcile pass, API writes included.', registers }),
    replicas: new Gauge({
      name: `${METRIC_PREFIX}manager_proxy_replicas`,
      help: 'Proxy pods of each CanaryRelease: desired, ready, and updated (running the current template); on the Lease holder.',
      labelNames: ['release_namespace', 'release', 'state'],
      registers,
    }),
  };
}

export class ManagerController {
  readonly #options: ManagerControllerOptions;
  readonly #log: Logger;
  readonly #metrics: ManagerMetrics;
  readonly #cancel = new AbortController();
  readonly #call: CallOptions;
  readonly #queue: KeyedQueue;
  /** Per scope ('' or a namespace), per watched kind. */
  readonly #informers = new Map<string, Map<Watched, Informer<KubernetesObject>>>();
  readonly #recorders = new Map<string, EventRecorder>();
  /** Writes of each release the caches have yet to show: the next pass waits for them. */
  readonly #pending = new Map<string, { readonly writes: Written[]; readonly deadline: number }>();
  /** Why the apiserver refused a release's objects, until a pass succeeds. */
  readonly #refusals = new Map<string, string>();
  /** The last error logged per release, so a retry is not news. */
  readonly #said = new Map<string, string>();
  #synced = false;
  #stopped = false;
  #resync: NodeJS.Timeout | undefined;

  constructor(options: ManagerControllerOptions) {
    this.#options = options;
    this.#log = options.log;
    this.#metrics = registerMetrics(options.registry);
    this.#call = boundedCall(this.#cancel.signal, options.requestTimeoutMs);
    this.#queue = new KeyedQueue({
      reconcile: (key) => this.#reconcile(key),
      onError: (key, err, retryInMs) => this.#sayError(key, err, retryInMs),
      workers: WORKERS,
      maxBackoffMs: WORK_MAX_BACKOFF_MS,
    });
    const scopes = options.namespaces.length === 0 ? [''] : options.namespaces;
    const kinds: readonly Watched[] = ['release', ...CHILD_KINDS, 'pod'];
    for (const scope of scopes) {
      const informers = new Map<Watched, Informer<KubernetesObject>>();
      for (const kind of kinds) {
        informers.set(kind, startInformer<KubernetesObject>({
          ...source(options.apis, kind, scope, this.#call),
          kubeConfig: options.kubeConfig,
          onChange: (object) => this.#queue.add(keyOf(kind, object)),
          log: this.#log,
          staleAfterMs: STALE_WATCH_MS,
          watchTimeoutSeconds: WATCH_TIMEOUT_SECONDS,
          maxBackoffMs: INFORMER_MAX_BACKOFF_MS,
        }));
      }
      this.#informers.set(scope, informers);
    }
    const all = [...this.#informers.values()].flatMap((informers) => [...informers.values()]);
    void Promise.all(all.map((informer) => informer.synced)).then(() => {
      if (this.#stopped) return;
      this.#synced = true;
      this.#queue.start();
      this.#enqueueAll();
      this.#resync = setInterval(() => this.#enqueueAll(), options.resyncMs);
      options.onSynced();
    });
  }

  /** Leadership changed: a new leader looks at every release at once. */
  leadershipChanged(): void {
    if (this.#synced) this.#enqueueAll();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearInterval(this.#resync);
    this.#cancel.abort();
    await this.#queue.stop();
    await Promise.all([...this.#informers.values()].flatMap((informers) => [...informers.values()].map((informer) => informer.stop())));
  }

  #informer(kind: Watched, namespace: string): Informer<KubernetesObject> | undefined {
    return (this.#informers.get('') ?? this.#informers.get(namespace))?.get(kind);
  }

  /** Every release, and everything left of one (an object the manager keeps for a release that is gone). */
  #enqueueAll(): void {
    for (const informers of this.#informers.values()) {
      for (const [kind, informer] of informers) for (const object of informer.list()) this.#queue.add(keyOf(kind, object));
    }
  }

  #observe(namespace: string, name: string) {
    const children: Partial<Record<ChildKind, KubernetesObject>> = {};
    for (const kind of CHILD_KINDS) {
      const found = this.#informer(kind, namespace)?.get(childName(kind, name), namespace);
      if (found !== undefined) children[kind] = found;
    }
    const pods = (this.#informer('pod', namespace)?.list() ?? [])
      .filter((pod) => pod.metadata?.namespace === namespace && pod.metadata.labels?.[LABEL_RELEASE] === name) as V1Pod[];
    const release = this.#informer('release', namespace)?.get(name, namespace) as ManagedRelease | undefined;
    return { namespace, name, release, children, pods };
  }

  /** Milliseconds to wait for the caches to show this release's last writes (0: go ahead). */
  #ownWritesWaitMs(key: string, namespace: string, name: string): number {
    const pending = this.#pending.get(key);
    if (pending === undefined) return 0;
    const shown = pending.writes.every((written) => {
      const cached = written.child === 'release'
        ? this.#informer('release', namespace)?.get(name, namespace)
        : this.#informer(written.child, namespace)?.get(written.name, namespace);
      if (written.resourceVersion === undefined) return cached === undefined;
      // A release gone since is shown as well as it will ever be.
      if (cached === undefined) return written.child === 'release';
      return atLeast(cached.metadata?.resourceVersion, written.resourceVersion);
    });
    const waitMs = pending.deadline - Date.now();
    if (shown || waitMs <= 0) {
      this.#pending.delete(key);
      return 0;
    }
    return waitMs;
  }

  async #reconcile(key: string): Promise<{ requeueAfterMs?: number } | void> {
    if (!this.#options.isLeader() || this.#stopped) return;
    const [namespace = '', name = ''] = key.split('/');
    const waitMs = this.#ownWritesWaitMs(key, namespace, name);
    if (waitMs > 0) return { requeueAfterMs: Math.min(waitMs, 100) };
    const endTimer = this.#metrics.duration.startTimer();
    const observed = this.#observe(namespace, name);
    const refusal = this.#refusals.get(key);
    const planned = plan({ ...observed, ...(refusal === undefined ? {} : { refusal }) }, this.#options.settings, new Date());
    this.#report(namespace, name, observed.release, planned);
    try {
      await this.#apply(key, namespace, name, planned.steps);
      this.#metrics.reconciles.inc({ result: 'success' });
      if (this.#said.has(key)) this.#log.info({ release: name, namespace }, 'the proxy objects converge again');
      this.#said.delete(key);
      // Nothing was refused this time; the status written with the old refusal is corrected by the
      // next pass, which that very write triggers.
      this.#refusals.delete(key);
    } catch (err) {
      this.#metrics.reconciles.inc({ result: 'error' });
      await this.#reportRefusal(key, namespace, name, err);
      throw err;
    } finally {
      endTimer();
    }
  }

  async #apply(key: string, namespace: string, name: string, steps: readonly Step[]): Promise<void> {
    const writes: Written[] = [];
    try {
      await applyManagerSteps(this.#options.apis, namespace, name, steps, this.#call, (step, written) => {
        writes.push(written);
        this.#sayStep(namespace, name, step);
      }, () => this.#options.isLeader() && !this.#stopped);
    } finally {
      if (writes.length > 0) this.#pending.set(key, { writes, deadline: Date.now() + OWN_WRITES_WAIT_MS });
    }
  }

  /**
   * A write the apiserver refuses (invalid, forbidden, a name someone else's object holds) will be
   * refused again: say it in the release's condition now. The failing write comes before the status
   * write in the pass, so the status alone is written here, best effort.
   */
  async #reportRefusal(key: string, namespace: string, name: string, err: unknown): Promise<void> {
    const step = err instanceof ManagerStepError ? err.step : undefined;
    const cause = err instanceof ManagerStepError ? err.cause : err;
    const failure = apiFailure(cause);
    const taken = step?.kind === 'create' && isAlreadyExists(cause);
    if (failure === undefined || step === undefined || step.kind === 'writeStatus' || (failure.code === 409 && !taken) || failure.code >= 500 || failure.code === 429) return;
    const refusal = taken && step.kind === 'create'
      ? `${KIND_OF[step.child]} ${step.object.metadata?.name ?? ''} already exists and is not the manager's (a standalone proxy?): delete it, or rename the release`
      : `${KIND_OF[step.child]}: ${describeError(cause)}`;
    this.#refusals.set(key, refusal);
    const observed = this.#observe(namespace, name);
    const statusOnly = plan({ ...observed, refusal }, this.#options.settings, new Date()).steps.filter((item) => item.kind === 'writeStatus');
    try {
      await this.#apply(key, namespace, name, statusOnly);
    } catch (statusErr) {
      this.#log.debug({ release: name, namespace, error: describeError(statusErr) }, 'could not report the refusal in status either');
    }
  }

  /** Metrics, logs and Events for the state this pass found. */
  #report(namespace: string, name: string, release: ManagedRelease | undefined, planned: Plan): void {
    // Not `namespace`: Prometheus gives the manager's own namespace that name on every series it scrapes.
    const labels = { release_namespace: namespace, release: name };
    for (const state of ['desired', 'ready', 'updated'] as const) {
      const proxy = planned.proxy;
      if (proxy === null) this.#metrics.replicas.remove({ ...labels, state });
      else this.#metrics.replicas.set({ ...labels, state }, state === 'desired' ? proxy.replicas : state === 'ready' ? proxy.readyReplicas : proxy.updatedReplicas);
    }
    // Once per change of reason: a rollout's "1/2 ready", "2/2 ready" are status, not news.
    const condition = planned.condition;
    const before = (release?.status?.conditions ?? []).find((item) => (item.type as string) === PROXY_CONDITION);
    if (release === undefined || condition === undefined || before?.reason === condition.reason) return;
    const warning = condition.status === 'False' && condition.reason !== 'NoReadyProxy' && condition.reason !== 'ReleaseFinished';
    this.#log[warning ? 'warn' : 'info']({ release: name, namespace, reason: condition.reason }, `${PROXY_CONDITION}: ${condition.message}`);
    this.#record(release, warning ? 'Warning' : 'Normal', condition.reason, condition.message);
  }

  #record(release: ManagedRelease, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const { name, namespace = '', uid } = release.metadata;
    let recorder = this.#recorders.get(namespace);
    if (recorder === undefined) {
      recorder = new EventRecorder({ core: this.#options.apis.core, namespace, component: MANAGED_BY, instance: this.#options.identity, log: this.#log, callOptions: this.#call });
      this.#recorders.set(namespace, recorder);
    }
    const object: V1ObjectReference = { apiVersion: API_VERSION, kind: KIND, name, namespace, uid };
    recorder.record(object, type, reason, message);
  }

  #sayStep(namespace: string, name: string, step: Step): void {
    if (step.kind === 'writeStatus') return;
    const object = `${KIND_OF[step.child]} ${step.kind === 'delete' ? step.name : step.object.metadata?.name}`;
    const verb = { create: 'created', replace: 'updated', delete: 'deleted' }[step.kind];
    this.#log.info({ release: name, namespace, step: step.kind, object }, `${verb} ${object}`);
    const release = this.#informer('release', namespace)?.get(name, namespace) as ManagedRelease | undefined;
    if (step.child === 'deployment' && release !== undefined) {
      const reason = { create: 'ProxyCreated', replace: 'ProxyUpdated', delete: 'ProxyRemoved' }[step.kind];
      this.#record(release, 'Normal', reason, `${verb} ${object}`);
    }
  }

  #sayError(key: string, err: unknown, retryInMs: number): void {
    const message = describeError(err);
    const level = this.#said.get(key) === message ? 'debug' : 'warn';
    const [namespace, release] = key.split('/');
    this.#log[level]({ release, namespace, error: message, retryInMs }, 'manager reconcile failed; retrying');
    this.#said.set(key, message);
  }
}

/** The release an object belongs to: itself, or the one its release label names. */
function keyOf(kind: Watched, object: KubernetesObject): string {
  const namespace = object.metadata?.namespace ?? '';
  const name = kind === 'release' ? object.metadata?.name : object.metadata?.labels?.[LABEL_RELEASE];
  return `${namespace}/${name ?? ''}`;
}

/** resourceVersions are etcd revisions in practice: a newer one means our write is in the cache. */
function atLeast(cached: string | undefined, written: string): boolean {
  if (cached === written) return true;
  return cached !== undefined && /^\d+$/.test(cached) && /^\d+$/.test(written) && BigInt(cached) >= BigInt(written);
}
