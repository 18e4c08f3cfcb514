// The control loop of `canary-l4 manager`: informers on the CanaryReleases, on the Gateways and
// GatewayClasses (once the Gateway API is served: gateway-watch.ts) and on what the manager keeps
// for them (found by its managed-by label), in every watched namespace; events only add the key of
// a release, a Gateway or a GatewayClass to the work queue; a worker reads the caches, calls the
// pure plan (plan.ts, gateway-plan.ts, api/gateway/class-status.ts) and applies its steps. Only the Lease
// holder writes. Failures retry with backoff per key (the others go on); a periodic resync repairs
// what no event announced.

import type {
  KubeConfig,
  KubernetesListObject,
  KubernetesObject,
  V1ObjectReference,
  V1Pod,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { boundedCall, type CallOptions } from '../kube/client.ts';
import { EventRecorder } from '../kube/events.ts';
import { CONTROLLER_INFORMER_TUNING, startInformer, type Informer } from '../kube/informer.ts';
import { apiFailure, describeError, isAlreadyExists } from '../kube/patch.ts';
import { API_VERSION, GROUP, KIND, LABEL_RELEASE, PLURAL, VERSION } from '../api/names.ts';
import { GATEWAY_GROUP, GATEWAY_VERSION } from '../api/gateway/names.ts';
import type { Gateway, GatewayClass } from '../api/gateway/types.ts';
import { applyManagerSteps, describeStep, type ManagerApis, type StepFailure, type Written } from './apply.ts';
import { CHILD_KINDS, childName, plan, type ChildKind, type Plan } from './plan.ts';
import { KIND_OF, type Step } from './step.ts';
import { classStatusPatch, isOurClass, servesClass } from '../api/gateway/class-status.ts';
import { planGateway, type GatewayPlan, type ObservedGateway } from './gateway-plan.ts';
import { GATEWAY_KINDS, gatewayChildName } from './gateway-render.ts';
import { LABEL_GATEWAY, LABEL_GATEWAY_NAMESPACE } from './gateway-types.ts';
import { watchWhenServed, type ServedWatch } from './gateway-watch.ts';
import { ManagerMetrics } from './metrics.ts';
import { KeyedQueue } from '../controller-kit/work-queue.ts';
import { OWN_WRITES_WAIT_MS, WORK_MAX_BACKOFF_MS } from '../controller-kit/constants.ts';
import { OwnWrites } from '../controller-kit/own-writes.ts';
import { showsResourceVersion } from '../controller-kit/resource-version.ts';
import type { RenderSettings } from './render.ts';
import { LABEL_MANAGED_BY, MANAGED_BY, PROXY_CONDITION } from './types.ts';
import type { ManagedRelease } from '../api/proxy-types.ts';

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

/** Two releases are worked on at once. */
const WORKERS = 2;
const MANAGED_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;

type Watched = ChildKind | 'release' | 'pod' | GatewayWatched;
/** Watched once the Gateway API is served; the classes and the ClusterRoleBindings cluster-wide. */
type GatewayWatched = 'gateway' | 'gatewayClass' | 'clusterRoleBinding';
const GATEWAY_WATCHED: readonly GatewayWatched[] = ['gateway', 'gatewayClass', 'clusterRoleBinding'];

/** Finds an object of the pass's namespace (cluster-scoped ones by name alone) in the caches. */
type Lookup = (kind: Written['child'], name: string) => KubernetesObject | undefined;

const GATEWAY_KEY = 'Gateway:';
const CLASS_KEY = 'GatewayClass:';

type List = KubernetesListObject<KubernetesObject>;
type ListIn = (request: { namespace: string; labelSelector: string }, call: CallOptions) => Promise<List>;
type ListAll = (request: { labelSelector: string }, call: CallOptions) => Promise<List>;

interface Source {
  readonly path: string;
  readonly labelSelector?: string;
  readonly list: () => Promise<List>;
}

/** How each watched kind is listed and watched, in one namespace ('' for all of them). */
function source(
  { core, apps, policy, rbac, custom }: ManagerApis,
  kind: Watched,
  namespace: string,
  call: CallOptions,
): Source {
  const at = (base: string, plural: string) => `${base}${namespace === '' ? '' : `/namespaces/${namespace}`}/${plural}`;
  // What the manager keeps, by its label; the generated client's two list methods of the kind.
  const kept = (api: object, base: string, plural: string, inNamespace: ListIn, everywhere: ListAll): Source => ({
    path: at(base, plural),
    labelSelector: MANAGED_SELECTOR,
    list: () =>
      namespace === ''
        ? everywhere.call(api, { labelSelector: MANAGED_SELECTOR }, call)
        : inNamespace.call(api, { namespace, labelSelector: MANAGED_SELECTOR }, call),
  });
  const releases = { group: GROUP, version: VERSION };
  switch (kind) {
    case 'release':
      return {
        path: at(`/apis/${GROUP}/${VERSION}`, PLURAL),
        list: () =>
          (namespace === ''
            ? custom.listCustomObjectForAllNamespaces({ ...releases, resourcePlural: PLURAL }, call)
            : custom.listNamespacedCustomObject({ ...releases, plural: PLURAL, namespace }, call)) as Promise<List>,
      };
    case 'deployment':
      return kept(
        apps,
        '/apis/apps/v1',
        'deployments',
        apps.listNamespacedDeployment,
        apps.listDeploymentForAllNamespaces,
      );
    case 'podDisruptionBudget':
      return kept(
        policy,
        '/apis/policy/v1',
        'poddisruptionbudgets',
        policy.listNamespacedPodDisruptionBudget,
        policy.listPodDisruptionBudgetForAllNamespaces,
      );
    case 'roleBinding':
      return kept(
        rbac,
        '/apis/rbac.authorization.k8s.io/v1',
        'rolebindings',
        rbac.listNamespacedRoleBinding,
        rbac.listRoleBindingForAllNamespaces,
      );
    case 'serviceAccount':
      return kept(
        core,
        '/api/v1',
        'serviceaccounts',
        core.listNamespacedServiceAccount,
        core.listServiceAccountForAllNamespaces,
      );
    case 'metricsService':
      return kept(core, '/api/v1', 'services', core.listNamespacedService, core.listServiceForAllNamespaces);
    case 'pod':
      return kept(core, '/api/v1', 'pods', core.listNamespacedPod, core.listPodForAllNamespaces);
    case 'gateway': {
      const gateways = { group: GATEWAY_GROUP, version: GATEWAY_VERSION };
      return {
        path: at(`/apis/${GATEWAY_GROUP}/${GATEWAY_VERSION}`, 'gateways'),
        list: () =>
          (namespace === ''
            ? custom.listCustomObjectForAllNamespaces({ ...gateways, resourcePlural: 'gateways' }, call)
            : custom.listNamespacedCustomObject({ ...gateways, plural: 'gateways', namespace }, call)) as Promise<List>,
      };
    }
    case 'gatewayClass':
      return {
        path: `/apis/${GATEWAY_GROUP}/${GATEWAY_VERSION}/gatewayclasses`,
        list: () =>
          custom.listClusterCustomObject(
            { group: GATEWAY_GROUP, version: GATEWAY_VERSION, plural: 'gatewayclasses' },
            call,
          ) as Promise<List>,
      };
    case 'clusterRoleBinding':
      return {
        path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
        labelSelector: MANAGED_SELECTOR,
        list: () => rbac.listClusterRoleBinding({ labelSelector: MANAGED_SELECTOR }, call),
      };
  }
}

/** The informer that caches a kind the manager writes. */
function watchedOf(child: Written['child']): Watched {
  return child === 'service' ? 'metricsService' : child;
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
  /** The same, for the Gateway kinds, once the Gateway API is served (the cluster-scoped ones under ''). */
  readonly #gatewayInformers = new Map<string, Map<Watched, Informer<KubernetesObject>>>();
  readonly #servedWatch: ServedWatch;
  readonly #recorders = new Map<string, EventRecorder>();
  /** Writes of each key the caches have yet to show: the next pass waits for them. */
  readonly #ownWrites = new Map<string, OwnWrites<Written, Lookup>>();
  /** Why the apiserver refused a release's objects, until a pass succeeds. */
  readonly #refusals = new Map<string, string>();
  /** The ProxyAvailable reason (a Gateway's problems) this replica last reported per key. */
  readonly #reported = new Map<string, string>();
  /** The last error logged per key, so a retry is not news. */
  readonly #said = new Map<string, string>();
  #synced = false;
  #gatewaysSynced = false;
  #stopped = false;
  #resync: NodeJS.Timeout | undefined;

  constructor(options: ManagerControllerOptions) {
    this.#options = options;
    this.#log = options.log;
    this.#metrics = new ManagerMetrics(options.registry);
    this.#call = boundedCall(this.#cancel.signal, options.requestTimeoutMs);
    this.#queue = new KeyedQueue({
      reconcile: (key) => this.#reconcile(key),
      onError: (key, err, retryInMs) => this.#sayError(key, err, retryInMs),
      workers: WORKERS,
      maxBackoffMs: WORK_MAX_BACKOFF_MS,
    });
    const scopes = options.namespaces.length === 0 ? [''] : options.namespaces;
    const kinds: readonly Watched[] = ['release', ...CHILD_KINDS, 'pod'];
    for (const scope of scopes) this.#informers.set(scope, this.#startInformers(scope, kinds));
    const all = [...this.#informers.values()].flatMap((informers) => [...informers.values()]);
    void Promise.all(all.map((informer) => informer.synced)).then(() => {
      if (this.#stopped) return;
      this.#synced = true;
      this.#queue.start();
      this.#enqueueAll();
      this.#resync = setInterval(() => this.#enqueueAll(), options.resyncMs);
      options.onSynced();
    });
    this.#servedWatch = watchWhenServed({
      custom: options.apis.custom,
      call: this.#call,
      log: this.#log,
      intervalMs: options.resyncMs,
      onServed: () => this.#watchGateways(scopes),
    });
  }

  #startInformers(scope: string, kinds: readonly Watched[]): Map<Watched, Informer<KubernetesObject>> {
    const informers = new Map<Watched, Informer<KubernetesObject>>();
    for (const kind of kinds) {
      informers.set(
        kind,
        startInformer<KubernetesObject>({
          ...source(this.#options.apis, kind, scope, this.#call),
          kubeConfig: this.#options.kubeConfig,
          onChange: (object) => {
            for (const key of this.#keysOf(kind, object)) this.#queue.add(key);
          },
          log: this.#log,
          ...CONTROLLER_INFORMER_TUNING,
        }),
      );
    }
    return informers;
  }

  /** The Gateways of the watched namespaces, and cluster-wide the classes and the pods' ClusterRoleBindings. */
  #watchGateways(scopes: readonly string[]): void {
    if (this.#stopped) return;
    const clusterWide: readonly GatewayWatched[] = ['gatewayClass', 'clusterRoleBinding'];
    for (const scope of scopes) {
      const kinds: Watched[] = scope === '' ? [...GATEWAY_WATCHED] : ['gateway'];
      this.#gatewayInformers.set(scope, this.#startInformers(scope, kinds));
    }
    if (!this.#gatewayInformers.has('')) this.#gatewayInformers.set('', this.#startInformers('', clusterWide));
    const all = [...this.#gatewayInformers.values()].flatMap((informers) => [...informers.values()]);
    void Promise.all(all.map((informer) => informer.synced)).then(() => {
      if (this.#stopped) return;
      this.#gatewaysSynced = true;
      this.#enqueueAll();
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
    await this.#queue.stop();
    await Promise.all(
      [...this.#informers.values(), ...this.#gatewayInformers.values()].flatMap((informers) =>
        [...informers.values()].map((informer) => informer.stop()),
      ),
    );
  }

  #informer(kind: Watched, namespace: string): Informer<KubernetesObject> | undefined {
    const sets = (GATEWAY_WATCHED as readonly Watched[]).includes(kind) ? this.#gatewayInformers : this.#informers;
    // Cluster-wide informers are under '' (the cluster-scoped kinds always are), the others per namespace.
    return sets.get('')?.get(kind) ?? sets.get(namespace)?.get(kind);
  }

  /** An object the manager writes, as cached: cluster-scoped ones by name alone. */
  #lookup(child: Written['child'], name: string, namespace: string): KubernetesObject | undefined {
    const scoped = child === 'clusterRoleBinding' || child === 'gatewayClass' ? '' : namespace;
    return this.#informer(watchedOf(child), namespace)?.get(name, scoped);
  }

  /** The keys an event on this object calls for: its release or Gateway; a class's Gateways as well. */
  #keysOf(kind: Watched, object: KubernetesObject): string[] {
    const namespace = object.metadata?.namespace ?? '';
    const name = object.metadata?.name ?? '';
    const labels = object.metadata?.labels ?? {};
    switch (kind) {
      case 'release':
        return [`${namespace}/${name}`];
      case 'gateway':
        return [`${GATEWAY_KEY}${namespace}/${name}`];
      case 'gatewayClass': {
        const gateways = [...this.#gatewayInformers.values()]
          .flatMap((informers) => informers.get('gateway')?.list() ?? [])
          .filter((gateway) => (gateway as Gateway).spec?.gatewayClassName === name)
          .map((gateway) => `${GATEWAY_KEY}${gateway.metadata?.namespace}/${gateway.metadata?.name}`);
        return [`${CLASS_KEY}${name}`, ...gateways];
      }
      default: {
        const gateway = labels[LABEL_GATEWAY];
        if (gateway !== undefined) return [`${GATEWAY_KEY}${labels[LABEL_GATEWAY_NAMESPACE] ?? namespace}/${gateway}`];
        return [`${namespace}/${labels[LABEL_RELEASE] ?? ''}`];
      }
    }
  }

  /** Every release, Gateway and class, and everything left of one (an object kept for one that is gone). */
  #enqueueAll(): void {
    for (const sets of [this.#informers, this.#gatewayInformers]) {
      for (const informers of sets.values())
        for (const [kind, informer] of informers)
          for (const object of informer.list()) for (const key of this.#keysOf(kind, object)) this.#queue.add(key);
    }
  }

  #observe(namespace: string, name: string) {
    const children: Partial<Record<ChildKind, KubernetesObject>> = {};
    for (const kind of CHILD_KINDS) {
      const found = this.#informer(kind, namespace)?.get(childName(kind, name), namespace);
      if (found !== undefined) children[kind] = found;
    }
    const pods = (this.#informer('pod', namespace)?.list() ?? []).filter(
      (pod) => pod.metadata?.namespace === namespace && pod.metadata.labels?.[LABEL_RELEASE] === name,
    ) as V1Pod[];
    const release = this.#informer('release', namespace)?.get(name, namespace) as ManagedRelease | undefined;
    return { namespace, name, release, children, pods };
  }

  #observeGateway(namespace: string, name: string): ObservedGateway {
    const children: ObservedGateway['children'] = {};
    for (const kind of GATEWAY_KINDS) {
      const found = this.#lookup(kind, gatewayChildName(kind, namespace, name), namespace);
      if (found !== undefined) children[kind] = found;
    }
    const pods = (this.#informer('pod', namespace)?.list() ?? []).filter(
      (pod) => pod.metadata?.namespace === namespace && pod.metadata.labels?.[LABEL_GATEWAY] === name,
    ) as V1Pod[];
    const gateway = this.#informer('gateway', namespace)?.get(name, namespace) as Gateway | undefined;
    const gatewayClass =
      gateway === undefined
        ? undefined
        : (this.#informer('gatewayClass', '')?.get(gateway.spec.gatewayClassName, '') as GatewayClass | undefined);
    return { namespace, name, gateway, classServed: servesClass(gatewayClass), children, pods };
  }

  /** Milliseconds to wait for the caches to show this key's last writes (0: go ahead). */
  #ownWritesWaitMs(key: string, namespace: string): number {
    const writes = this.#ownWrites.get(key);
    if (writes === undefined) return 0;
    const waitMs = writes.waitMs((kind, name) => this.#lookup(kind, name, namespace), Date.now());
    if (waitMs === 0) this.#ownWrites.delete(key);
    return waitMs;
  }

  async #reconcile(key: string): Promise<{ requeueAfterMs?: number } | undefined> {
    if (!this.#options.isLeader() || this.#stopped) return;
    const gateway = key.startsWith(GATEWAY_KEY);
    const gatewayClass = key.startsWith(CLASS_KEY);
    // Before the Gateway caches are full, a pass would take a Gateway not listed yet for one gone.
    if ((gateway || gatewayClass) && !this.#gatewaysSynced) return;
    const [namespace = '', name = ''] = gatewayClass
      ? ['', key.slice(CLASS_KEY.length)]
      : key.slice(gateway ? GATEWAY_KEY.length : 0).split('/');
    const waitMs = this.#ownWritesWaitMs(key, namespace);
    if (waitMs > 0) return { requeueAfterMs: Math.min(waitMs, 100) };
    if (gatewayClass) return this.#reconcileClass(key, name);
    if (gateway) return this.#reconcileGateway(key, namespace, name);
    return this.#reconcileRelease(key, namespace, name);
  }

  async #reconcileRelease(key: string, namespace: string, name: string): Promise<undefined> {
    const passed = this.#metrics.pass();
    const observed = this.#observe(namespace, name);
    const refusal = this.#refusals.get(key);
    const planned = plan(
      { ...observed, ...(refusal === undefined ? {} : { refusal }) },
      this.#options.settings,
      new Date(),
    );
    this.#report(namespace, name, observed.release, planned);
    const failure = await this.#apply(key, namespace, name, planned.steps, (step) =>
      this.#sayStep(namespace, name, step),
    );
    if (failure !== undefined) {
      passed('error');
      await this.#reportRefusal(key, namespace, name, failure);
      throw new Error(`${describeStep(failure.step)}: ${describeError(failure.error)}`, { cause: failure.error });
    }
    passed('success');
    if (this.#said.has(key)) this.#log.info({ release: name, namespace }, 'the proxy objects converge again');
    this.#said.delete(key);
    // Nothing was refused this time; the status written with the old refusal is corrected by the
    // next pass, which that very write triggers.
    this.#refusals.delete(key);
    return undefined;
  }

  async #reconcileGateway(key: string, namespace: string, name: string): Promise<undefined> {
    const passed = this.#metrics.pass();
    const observed = this.#observeGateway(namespace, name);
    const planned = planGateway(observed, this.#options.settings);
    this.#reportGateway(key, observed, planned);
    const failure = await this.#apply(key, namespace, name, planned.steps, (step) =>
      this.#sayGatewayStep(observed, step),
    );
    if (failure !== undefined) {
      passed('error');
      throw new Error(`${describeStep(failure.step)}: ${describeError(failure.error)}`, { cause: failure.error });
    }
    passed('success');
    if (this.#said.has(key)) this.#log.info({ gateway: name, namespace }, "the Gateway's proxy objects converge again");
    this.#said.delete(key);
    return undefined;
  }

  async #reconcileClass(key: string, name: string): Promise<undefined> {
    const gatewayClass = this.#informer('gatewayClass', '')?.get(name, '') as GatewayClass | undefined;
    if (!isOurClass(gatewayClass) || gatewayClass.metadata.deletionTimestamp != null) return undefined;
    const patch = classStatusPatch(gatewayClass, new Date());
    if (patch === undefined) return undefined;
    const passed = this.#metrics.pass();
    const failure = await this.#apply(key, '', name, [{ kind: 'writeClassStatus', patch }], () => {
      const accepted = patch.status.conditions.find((condition) => condition.type === 'Accepted');
      this.#log[accepted?.status === 'True' ? 'info' : 'warn'](
        { gatewayClass: name, reason: accepted?.reason },
        `GatewayClass ${name} Accepted=${accepted?.status}: ${accepted?.message}`,
      );
    });
    if (failure !== undefined) {
      passed('error');
      throw new Error(`${describeStep(failure.step)}: ${describeError(failure.error)}`, { cause: failure.error });
    }
    passed('success');
    return undefined;
  }

  /** Runs the steps, keeping what they wrote for the next pass to wait for; the first failure, if any. */
  async #apply(
    key: string,
    namespace: string,
    name: string,
    steps: readonly Step[],
    say: (step: Step) => void,
  ): Promise<StepFailure | undefined> {
    return applyManagerSteps(
      this.#options.apis,
      namespace,
      name,
      steps,
      this.#call,
      (step, written) => {
        this.#ownWritesOf(key).record(written, Date.now());
        say(step);
      },
      () => this.#options.isLeader() && !this.#stopped,
    );
  }

  #ownWritesOf(key: string): OwnWrites<Written, Lookup> {
    let writes = this.#ownWrites.get(key);
    if (writes === undefined) {
      writes = new OwnWrites({
        maxWaitMs: OWN_WRITES_WAIT_MS,
        objectOf: (written) => `${written.child}/${written.name}`,
        shown,
      });
      this.#ownWrites.set(key, writes);
    }
    return writes;
  }

  /**
   * A write the apiserver refuses (invalid, forbidden, a name someone else's object holds) will be
   * refused again: say it in the release's condition now. The failing write comes before the status
   * write in the pass, so the status alone is written here, best effort.
   */
  async #reportRefusal(key: string, namespace: string, name: string, { step, error }: StepFailure): Promise<void> {
    const failure = apiFailure(error);
    const taken = step.kind === 'create' && isAlreadyExists(error);
    if (
      failure === undefined ||
      step.kind === 'writeStatus' ||
      step.kind === 'writeClassStatus' ||
      (failure.code === 409 && !taken) ||
      failure.code >= 500 ||
      failure.code === 429
    )
      return;
    const refusal =
      taken && step.kind === 'create'
        ? `${KIND_OF[step.child]} ${step.object.metadata?.name ?? ''} already exists and is not the manager's (a standalone proxy?): delete it, or rename the release`
        : `${KIND_OF[step.child]}: ${describeError(error)}`;
    this.#refusals.set(key, refusal);
    const observed = this.#observe(namespace, name);
    const statusOnly = plan({ ...observed, refusal }, this.#options.settings, new Date()).steps.filter(
      (item) => item.kind === 'writeStatus',
    );
    const statusFailure = await this.#apply(key, namespace, name, statusOnly, () => undefined);
    if (statusFailure !== undefined)
      this.#log.debug(
        { release: name, namespace, error: describeError(statusFailure.error) },
        'could not report the refusal in status either',
      );
  }

  /** Metrics, logs and Events for the state this pass found. */
  #report(namespace: string, name: string, release: ManagedRelease | undefined, planned: Plan): void {
    this.#metrics.proxy(namespace, name, planned.proxy);
    // Once per change of reason: a rollout's "1/2 ready", "2/2 ready" are status, not news. Compared
    // with what this replica reported last, not with the release: a proxy's status write may carry
    // an older ProxyAvailable for a moment (its cache lags this write), which is no news either.
    const condition = planned.condition;
    const key = `${namespace}/${name}`;
    const before =
      this.#reported.get(key) ??
      (release?.status?.conditions ?? []).find((item) => (item.type as string) === PROXY_CONDITION)?.reason;
    if (release === undefined || condition === undefined) {
      this.#reported.delete(key);
      return;
    }
    this.#reported.set(key, condition.reason);
    if (before === condition.reason) return;
    const warning =
      condition.status === 'False' && condition.reason !== 'NoReadyProxy' && condition.reason !== 'ReleaseFinished';
    this.#log[warning ? 'warn' : 'info'](
      { release: name, namespace, reason: condition.reason },
      `${PROXY_CONDITION}: ${condition.message}`,
    );
    this.#record(releaseRef(release), warning ? 'Warning' : 'Normal', condition.reason, condition.message);
  }

  /**
   * What stops a Gateway's proxy (or what it was made without), logged and recorded on the Gateway
   * once per change: the gateway command writes the Gateway's status, the manager only says this.
   */
  #reportGateway(key: string, observed: ObservedGateway, planned: GatewayPlan): void {
    const said = [...planned.problems, ...planned.warnings].join('; ');
    const before = this.#reported.get(key) ?? '';
    if (said === '') this.#reported.delete(key);
    else this.#reported.set(key, said);
    if (said === before || said === '' || observed.gateway === undefined) return;
    const reason = planned.problems.length > 0 ? 'ProxyNotMade' : 'ProxyWarning';
    const message =
      planned.problems.length > 0 ? `no proxy is made for this Gateway: ${said}` : `the proxy is made, but: ${said}`;
    this.#log.warn({ gateway: observed.name, namespace: observed.namespace, reason }, message);
    this.#record(gatewayRef(observed.gateway), 'Warning', reason, message);
  }

  #record(object: V1ObjectReference, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const namespace = object.namespace ?? '';
    let recorder = this.#recorders.get(namespace);
    if (recorder === undefined) {
      recorder = new EventRecorder({
        core: this.#options.apis.core,
        namespace,
        component: MANAGED_BY,
        instance: this.#options.identity,
        log: this.#log,
        callOptions: this.#call,
      });
      this.#recorders.set(namespace, recorder);
    }
    recorder.record(object, type, reason, message);
  }

  #sayStep(namespace: string, name: string, step: Step): void {
    if (step.kind === 'writeStatus' || step.kind === 'writeClassStatus') return;
    const object = `${KIND_OF[step.child]} ${step.kind === 'delete' ? step.name : step.object.metadata?.name}`;
    const verb = { create: 'created', replace: 'updated', delete: 'deleted' }[step.kind];
    this.#log.info({ release: name, namespace, step: step.kind, object }, `${verb} ${object}`);
    const release = this.#informer('release', namespace)?.get(name, namespace) as ManagedRelease | undefined;
    if (step.child === 'deployment' && release !== undefined) {
      const reason = { create: 'ProxyCreated', replace: 'ProxyUpdated', delete: 'ProxyRemoved' }[step.kind];
      this.#record(releaseRef(release), 'Normal', reason, `${verb} ${object}`);
    }
  }

  #sayGatewayStep({ namespace, name, gateway }: ObservedGateway, step: Step): void {
    if (step.kind === 'writeStatus' || step.kind === 'writeClassStatus') return;
    const object = `${KIND_OF[step.child]} ${step.kind === 'delete' ? step.name : step.object.metadata?.name}`;
    const verb = { create: 'created', replace: 'updated', delete: 'deleted' }[step.kind];
    this.#log.info({ gateway: name, namespace, step: step.kind, object }, `${verb} ${object}`);
    if (step.child === 'deployment' && gateway !== undefined) {
      const reason = { create: 'ProxyCreated', replace: 'ProxyUpdated', delete: 'ProxyRemoved' }[step.kind];
      this.#record(gatewayRef(gateway), 'Normal', reason, `${verb} ${object}`);
    }
  }

  #sayError(key: string, err: unknown, retryInMs: number): void {
    const message = describeError(err);
    const level = this.#said.get(key) === message ? 'debug' : 'warn';
    const what = key.startsWith(CLASS_KEY)
      ? { gatewayClass: key.slice(CLASS_KEY.length) }
      : key.startsWith(GATEWAY_KEY)
        ? (([namespace, gateway]) => ({ gateway, namespace }))(key.slice(GATEWAY_KEY.length).split('/'))
        : (([namespace, release]) => ({ release, namespace }))(key.split('/'));
    this.#log[level]({ ...what, error: message, retryInMs }, 'manager reconcile failed; retrying');
    this.#said.set(key, message);
  }
}

function releaseRef(release: ManagedRelease): V1ObjectReference {
  const { name, namespace = '', uid } = release.metadata;
  return { apiVersion: API_VERSION, kind: KIND, name, namespace, uid };
}

function gatewayRef(gateway: Gateway): V1ObjectReference {
  const { name, namespace = '', uid } = gateway.metadata;
  return { apiVersion: `${GATEWAY_GROUP}/${GATEWAY_VERSION}`, kind: 'Gateway', name, namespace, uid };
}

/** A write is shown once its object is cached at that resourceVersion or later; a delete once it is gone. */
function shown(written: Written, lookup: Lookup): boolean {
  const cached = lookup(written.child, written.name);
  if (written.resourceVersion === undefined) return cached === undefined;
  // A release (a class) gone since is shown as well as it will ever be.
  if (cached === undefined) return written.child === 'release' || written.child === 'gatewayClass';
  return showsResourceVersion(cached.metadata?.resourceVersion, written.resourceVersion);
}
