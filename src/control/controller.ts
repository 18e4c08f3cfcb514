// The control loop of `canary-l4 proxy`: informers on the CanaryRelease, the Services and the Pods
// of its namespace only trigger the work loop; its single worker assembles the observed world from
// the caches and the data plane, calls the pure reconcile, applies the L4 config to the data plane
// first, then the steps. Failures retry with capped backoff forever; a periodic resync repairs
// what no event announced.

import { isDeepStrictEqual } from 'node:util';
import type { KubernetesListObject, KubernetesObject, V1Deployment, V1ObjectReference, V1Pod, V1ReplicaSet, V1Service } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { L4Config } from '../config/types.ts';
import { METRIC_PREFIX } from '../defaults.ts';
import { boundedCall, type KubeClients } from '../kube/client.ts';
import { EventRecorder } from '../kube/events.ts';
import { startInformer, type Informer } from '../kube/informer.ts';
import { apiFailure, describeError, isAlreadyExists, isConflict } from '../kube/patch.ts';
import type { Runtime } from '../runtime.ts';
import { snapshotCounters } from '../dataplane/counters.ts';
import { DEFAULT_INTERVAL_MS, hasCounts, type Evidence } from './analysis.ts';
import { applySteps, StepError, type ApplyTarget } from './apply.ts';
import { EvidenceCollector, mergeEvidence, replicaStatsUrls } from './collector.ts';
import { decisions } from './decisions.ts';
import { listenerName, listenersStillTargeted, servedWeight } from './l4.ts';
import { OwnWrites } from './own-writes.ts';
import { ProgressMetrics } from './progress-metrics.ts';
import { reconcile, type Desired, type Observed, type ReconcileOptions, type Step } from './reconcile.ts';
import { withRefusedConfig } from './refused.ts';
import { API_VERSION, GROUP, KIND, PLURAL, VERSION, type CanaryRelease, type CanaryReleaseCondition } from './types.ts';
import { analysisIntervalMs } from './steps.ts';
import { WorkLoop } from './work-loop.ts';

export interface ControllerOptions {
  readonly runtime: Pick<Runtime, 'log' | 'registry' | 'dataplane' | 'applyConfig' | 'setReady' | 'stats'>;
  readonly clients: KubeClients;
  readonly namespace: string;
  /** The CanaryRelease's name. */
  readonly release: string;
  readonly reconcile: Omit<ReconcileOptions, 'now'>;
  readonly resyncMs: number;
  /** Any single API call is abandoned after this long. */
  readonly requestTimeoutMs: number;
  /**
   * With several replicas only the leader writes; the others run the same reconcile to serve the
   * same L4 config from the same CanaryRelease status and Services. Default: always the leader.
   */
  readonly isLeader?: () => boolean;
  /** Who this replica is, for the Events it records (reportingInstance). */
  readonly identity?: string;
  /** Told of every config the data plane took (e.g. to keep it in --state-dir). */
  readonly onServed?: (config: L4Config) => void;
}

/** Informer tuning: a server-side watch timeout, and a restart when a watch has been silent for long. */
const WATCH_TIMEOUT_SECONDS = 300;
const STALE_WATCH_MS = 10 * 60_000;
/** How long a pass waits for the caches to show the previous pass's own writes (own-writes.ts). */
const OWN_WRITES_WAIT_MS = 2_000;
/** A config opens or closes listeners once; a second change within one pass would be a surprise. */
const MAX_REPLANS = 2;
/** Recovery after an API outage must be prompt: informers and the work loop retry at least this often. */
const INFORMER_MAX_BACKOFF_MS = 3_000;
const WORK_MAX_BACKOFF_MS = 10_000;
/** Without spec.analysis the achieved split is brought up to date this often. */
const COUNT_INTERVAL_MS = 10_000;
/** Intervals kept while passes cannot count them (an API outage); older ones are merged. */
const MAX_PENDING_INTERVALS = 30;
/** An API error is said in status once it has failed this many passes in a row (one may be a blip). */
const API_ERROR_PASSES = 2;

interface ControllerMetrics {
  readonly reconciles: Counter<'result'>;
  readonly duration: Histogram;
  readonly releaseInfo: Gauge<'release' | 'namespace' | 'phase'>;
  readonly canaryWeight: Gauge<'service' | 'port' | 'protocol'>;
}

function registerMetrics(registry: Registry): ControllerMetrics {
  const registers = [registry];
  return {
    reconciles: new Counter({ name: `${METRIC_PREFIX}reconcile_total`, help: 'Reconcile passes of the CanaryRelease, by result.', labelNames: ['result'], registers }),
    duration: new Histogram({ name: `${METRIC_PREFIX}reconcile_duration_seconds`, help: 'Duration of a reconcile pass, API writes included.', registers }),
    releaseInfo: new Gauge({
      name: `${METRIC_PREFIX}release_info`,
      help: 'The CanaryRelease this proxy runs; phase: Running, Holding (Failure, nothing changed), Adopting, Deprecating, Adopted, Deprecated.',
      labelNames: ['release', 'namespace', 'phase'],
      registers,
    }),
    canaryWeight: new Gauge({
      name: `${METRIC_PREFIX}canary_weight`,
      help: 'Canary weight in effect per Service port (a --weight override included), as served by the data plane.',
      labelNames: ['service', 'port', 'protocol'],
      registers,
    }),
  };
}

/** Starts on construction: informers at once, the work loop once every cache is filled. */
export class Controller {
  readonly #options: ControllerOptions;
  readonly #log: Logger;
  readonly #metrics: ControllerMetrics;
  readonly #progress: ProgressMetrics;
  /** Aborts every API call in flight at shutdown. */
  readonly #cancel = new AbortController();
  readonly #target: ApplyTarget;
  readonly #loop: WorkLoop;
  readonly #ownWrites = new OwnWrites(OWN_WRITES_WAIT_MS);
  readonly #releases: Informer<KubernetesObject>;
  readonly #services: Informer<V1Service>;
  readonly #pods: Informer<V1Pod>;
  /** The stable and canary workloads of spec.workloads, and the stable ReplicaSets' pod-template-hash. */
  readonly #deployments: Informer<V1Deployment>;
  readonly #replicaSets: Informer<V1ReplicaSet>;
  readonly #events: EventRecorder;
  #stopped = false;
  #synced = false;
  /** Data-plane applies, one at a time, each planned from the caches as they are when its turn comes. */
  #serving: Promise<unknown> = Promise.resolve();
  #serveScheduled = false;
  /** The status the last pass reported, to tell what changed (Events). */
  #lastStatus: Desired['status'] | undefined;
  /** The leader's collector of every replica's counters, and the latest interval it collected. */
  readonly #collector: EvidenceCollector;
  #evidence: Evidence[] = [];
  /** The last pass's API failure and how many passes in a row failed with it. */
  #apiError: { message: string; passes: number } | undefined;
  /** What was last logged, so that a state worth a human's attention is logged once, not per pass. */
  #said = { phase: '', failure: '', error: '', missing: false };

  constructor(options: ControllerOptions) {
    this.#options = options;
    this.#log = options.runtime.log.child({ release: options.release, namespace: options.namespace });
    this.#metrics = registerMetrics(options.runtime.registry);
    this.#progress = new ProgressMetrics(options.runtime.registry);
    const { core, apps, custom, kubeConfig } = options.clients;
    const { namespace, release } = options;
    const callOptions = boundedCall(this.#cancel.signal, options.requestTimeoutMs);
    this.#target = { core, apps, custom, namespace, release, callOptions };
    this.#loop = new WorkLoop({
      reconcile: () => this.#reconcile(),
      onError: (err, retryInMs) => this.#sayError(err, retryInMs),
      resyncMs: options.resyncMs,
      maxBackoffMs: WORK_MAX_BACKOFF_MS,
    });
    this.#events = new EventRecorder({
      core, namespace, component: 'canary-l4-proxy', instance: options.identity ?? 'canary-l4-proxy', log: this.#log, callOptions,
    });
    // Every change is served at once, whatever the API writes of the work loop are doing; the work
    // loop follows with the writes and status.
    const trigger = () => {
      this.#loop.trigger();
      this.#serveSoon();
    };
    const shared = {
      kubeConfig, onChange: trigger, log: this.#log, staleAfterMs: STALE_WATCH_MS, watchTimeoutSeconds: WATCH_TIMEOUT_SECONDS,
      maxBackoffMs: INFORMER_MAX_BACKOFF_MS,
      // A watch back after an outage: the API answers again, so stop waiting out the backoff.
      onRestarted: () => this.#loop.retryNow(),
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
    this.#collector = new EvidenceCollector({
      local: () => snapshotCounters(options.runtime.stats, options.runtime.dataplane.config),
      replicas: () => replicaStatsUrls(this.#pods.list(), options.reconcile.proxySelector),
      intervalMs: () => collectionIntervalMs(this.#release()),
      // A release that is over has nothing left to count.
      active: () => !this.#stopped && (options.isLeader?.() ?? true) && !isArchived(this.#release()),
      onEvidence: (evidence) => {
        // Without analysis an interval with no traffic changes nothing in status: no write for it.
        if (this.#release()?.spec?.analysis === undefined && !hasCounts(evidence)) return;
        // Queued until status counts it: a pass delayed past the next interval (a backoff) loses none.
        this.#evidence.push(evidence);
        if (this.#evidence.length > MAX_PENDING_INTERVALS) this.#evidence.splice(0, 2, mergeEvidence(this.#evidence[0]!, this.#evidence[1]!));
        this.#loop.trigger();
      },
      log: this.#log,
    });
    // A pass on a half-filled cache would see Services as missing: wait for every first list.
    void Promise.all([this.#releases.synced, this.#services.synced, this.#pods.synced, this.#deployments.synced, this.#replicaSets.synced]).then(() => {
      if (this.#stopped) return;
      this.#synced = true;
      this.#loop.start();
      this.#collector.start();
    });
  }

  /** Reconcile soon, e.g. because leadership changed. */
  trigger(): void {
    this.#loop.trigger();
  }

  /** Bounded: API calls in flight are aborted, so neither the loop nor the informers can hang it. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#cancel.abort();
    await Promise.all([this.#loop.stop(), this.#collector.stop(), this.#releases.stop(), this.#services.stop(), this.#pods.stop(), this.#deployments.stop(), this.#replicaSets.stop()]);
  }

  #release(): CanaryRelease | undefined {
    // The cache holds the object as the apiserver sent it; CanaryRelease is its type (types.ts).
    return this.#releases.get(this.#options.release, this.#options.namespace) as CanaryRelease | undefined;
  }

  #service(name: string): V1Service | undefined {
    return this.#services.get(name, this.#options.namespace);
  }

  #listening(): Set<number> {
    const { tcp, udp } = this.#options.runtime.dataplane.listeningPorts();
    return new Set([...tcp, ...udp]);
  }

  /**
   * The oldest interval status has not counted yet, one per pass (each pass's status write counts it,
   * and the next pass takes the next). Only the leader's: it alone collects and writes, and a
   * replica that stopped leading must not plan on intervals another leader counts.
   */
  #pendingEvidence(release: CanaryRelease): { evidence: Evidence } | undefined {
    const countedAt = release.status?.countedAt;
    const leading = this.#options.isLeader?.() ?? true;
    this.#evidence = leading ? this.#evidence.filter((item) => countedAt === undefined || Date.parse(item.at) > Date.parse(countedAt)) : [];
    const [oldest] = this.#evidence;
    return oldest === undefined ? undefined : { evidence: oldest };
  }

  /** Reconcile on the caches as they are now; `apiError`: the persistent failure to report. */
  #plan(release: CanaryRelease, now: Date, apiError?: string): Desired {
    const observed: Observed = {
      release,
      services: byName(this.#services.list()),
      pods: this.#pods.list(),
      deployments: byName(this.#deployments.list()),
      replicaSets: this.#replicaSets.list(),
      listening: this.#listening(),
      ...(apiError === undefined ? {} : { apiError }),
      ...(this.#pendingEvidence(release) ?? {}),
    };
    return reconcile(observed, { ...this.#options.reconcile, now });
  }

  /** Runs `work` after every data-plane apply queued before it. */
  #serialized<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#serving.then(work);
    this.#serving = result.catch(() => undefined);
    return result;
  }

  /**
   * The fast lane: a weight change, a pod turning Ready, a Service edit reach the data plane as
   * soon as the watch shows them (coalesced per event-loop turn), never behind the work loop's
   * API writes or their backoff. It only serves; the work loop writes and reports.
   */
  #serveSoon(): void {
    if (this.#serveScheduled || !this.#synced || this.#stopped) return;
    this.#serveScheduled = true;
    setImmediate(() => {
      this.#serveScheduled = false;
      void this.#serialized(async () => {
        const release = this.#release();
        if (release === undefined || this.#stopped) return;
        const planned = this.#plan(release, new Date());
        if (await this.#serve(planned.l4Config) === undefined) this.#reportWeights(planned);
      });
    });
  }

  async #reconcile(): Promise<{ requeueAfterMs?: number } | void> {
    const waitMs = this.#ownWrites.waitMs({
      service: (name) => this.#service(name),
      deployment: (name) => this.#deployments.get(name, this.#options.namespace),
      release: () => this.#release(),
    }, Date.now());
    if (waitMs > 0) return { requeueAfterMs: waitMs };
    const endTimer = this.#metrics.duration.startTimer();
    try {
      const result = await this.#pass();
      this.#metrics.reconciles.inc({ result: 'success' });
      if (this.#said.error !== '') this.#log.info('reconcile succeeds again');
      this.#said.error = '';
      this.#apiError = undefined;
      return result;
    } catch (err) {
      this.#metrics.reconciles.inc({ result: 'error' });
      await this.#reportApiError(err);
      throw err;
    } finally {
      endTimer();
    }
  }

  /**
   * An API error that persists reaches the Failure condition: when the failing write comes before
   * the status write (a Service patch refused, say), the pass never gets to write status, so the
   * status alone is written here, best effort. A conflict or an existing object only means the
   * cache was behind; a refused config is said by the pass itself.
   */
  async #reportApiError(err: unknown): Promise<void> {
    const cause = err instanceof StepError ? err.cause : err;
    if (apiFailure(cause) === undefined || isConflict(cause) || isAlreadyExists(cause)) {
      this.#apiError = undefined;
      return;
    }
    const message = describeError(err);
    this.#apiError = { message, passes: this.#apiError?.message === message ? this.#apiError.passes + 1 : 1 };
    const release = this.#release();
    if (this.#apiError.passes < API_ERROR_PASSES || release === undefined || !(this.#options.isLeader?.() ?? true)) return;
    const statusSteps = this.#plan(release, new Date(), message).steps.filter((step) => step.kind === 'writeStatus' && step.reason === 'updateStatus');
    try {
      await applySteps(this.#target, statusSteps, (_step, written) => this.#ownWrites.record(written, Date.now()));
    } catch (statusErr) {
      this.#log.debug({ error: describeError(statusErr) }, 'could not report the API error in status either');
    }
  }

  async #pass(): Promise<{ requeueAfterMs?: number } | void> {
    const release = this.#release();
    if (release === undefined) {
      // Closing listeners only: nothing to refuse. A Service may still point here (a finalizer
      // removed by hand): its listeners stay.
      await this.#serialized(() => this.#serve(listenersStillTargeted(this.#options.runtime.dataplane.config, this.#services.list(), this.#options.reconcile.proxySelector)));
      this.#metrics.canaryWeight.reset();
      if (!this.#said.missing) {
        if (this.#said.phase === '') this.#log.warn('CanaryRelease not found; waiting for it');
        else this.#log.info('CanaryRelease is gone; nothing left to do');
      }
      this.#said.missing = true;
      this.#metrics.releaseInfo.reset();
      this.#progress.reset();
      return;
    }
    this.#said.missing = false;
    const { namespace } = this.#options;
    const now = new Date();
    const { planned, refusal, listening } = await this.#serialized(async () => {
      let listening = this.#listening();
      let planned = this.#plan(release, now);
      // The data plane first: retargets in the steps were gated on ports it already listens on.
      let refusal = await this.#serve(planned.l4Config);
      // Listeners just opened or closed change what may be retargeted and what status says: plan
      // again with what listens now, rather than write a status that is already out of date (a
      // restarted proxy would otherwise say "waiting for the proxy to listen" on every start).
      for (let replans = 0; refusal === undefined && replans < MAX_REPLANS && !isDeepStrictEqual(this.#listening(), listening); replans++) {
        listening = this.#listening();
        planned = this.#plan(release, now);
        refusal = await this.#serve(planned.l4Config);
      }
      return { planned, refusal, listening };
    });
    // Readiness is never withdrawn by a refused update: that would take the endpoints of the
    // ports that do work away too.
    if (refusal === undefined) this.#options.runtime.setReady(true);
    const desired = refusal === undefined ? planned : withRefusedConfig(planned, release, refusal, now);
    this.#report(desired, refusal === undefined);
    // A follower only serves; the leader also writes, and stops writing the moment it loses the Lease.
    const leading = () => this.#options.isLeader?.() ?? true;
    const done: Step[] = [];
    try {
      await applySteps(
        this.#target,
        desired.steps,
        (step, written) => {
          this.#ownWrites.record(written, Date.now());
          this.#sayStep(step);
          done.push(step);
        },
        leading,
      );
    } finally {
      if (leading()) this.#recordDecisions(release, desired, done);
    }
    if (refusal !== undefined) throw new Error(`the data plane refused the config of CanaryRelease ${namespace}/${release.metadata.name}: ${refusal}`);
    // Still moving after the replans: go again at once.
    if (!isDeepStrictEqual(this.#listening(), listening)) return { requeueAfterMs: 0 };
    if (desired.requeueAfterMs !== undefined) return { requeueAfterMs: desired.requeueAfterMs };
  }

  /** Events for what this pass decided (once per change: the recorder drops repeats). */
  #recordDecisions(release: CanaryRelease, desired: Desired, done: readonly Step[]): void {
    const { name, namespace, uid } = release.metadata;
    const object: V1ObjectReference = { apiVersion: API_VERSION, kind: KIND, name, namespace, uid };
    for (const decision of decisions(this.#lastStatus === undefined ? undefined : { ...desired, status: this.#lastStatus }, desired, done)) {
      this.#events.record(object, decision.type, decision.reason, decision.message);
    }
    this.#lastStatus = desired.status;
  }

  /** Applies the config unless it already runs (the previous one keeps serving if it is refused);
   * the refusal's message, or undefined once it serves. */
  async #serve(config: L4Config): Promise<string | undefined> {
    const { runtime } = this.#options;
    if (!isDeepStrictEqual(config, runtime.dataplane.config)) {
      try {
        await runtime.applyConfig(config);
      } catch (err) {
        return (err as Error).message;
      }
      this.#log.info({ listeners: config.listeners.map((listener) => `${listener.name}@${listener.listen.port}`) }, 'data plane config applied');
      this.#options.onServed?.(config);
    }
    return undefined;
  }

  /** canary_weight: what the data plane serves now, per port it listens for. */
  #reportWeights(desired: Desired): void {
    const listeners = new Set(this.#options.runtime.dataplane.config.listeners.map((listener) => listener.name));
    this.#metrics.canaryWeight.reset();
    for (const port of desired.status.ports) {
      if (listeners.has(listenerName(port))) this.#metrics.canaryWeight.set({ service: port.service, port: String(port.port), protocol: port.protocol }, servedWeight(port));
    }
  }

  #report(desired: Desired, served: boolean): void {
    const { release, namespace } = this.#options;
    const phase = desired.status.phase;
    this.#metrics.releaseInfo.reset();
    this.#metrics.releaseInfo.set({ release, namespace, phase }, 1);
    this.#progress.report(desired.status);
    if (served) this.#reportWeights(desired);
    if (phase !== this.#said.phase) this.#log.info({ phase }, `CanaryRelease is ${phase}`);
    this.#said.phase = phase;
    const failure = desired.status.conditions.find((condition) => condition.type === 'Failure');
    const failureText = failure?.status === 'True' ? describeCondition(failure) : '';
    if (failureText !== this.#said.failure) {
      if (failureText !== '') this.#log.error({ reason: failure?.reason }, `failure: ${failureText}`);
      else this.#log.info('failure cleared');
    }
    this.#said.failure = failureText;
  }

  #sayStep(step: Step): void {
    if (step.kind !== 'patchService') return;
    const messages: Partial<Record<typeof step.reason, string>> = {
      retarget: `retargeted Service ${step.name}: it now selects the proxy`,
      adopt: `adopted: Service ${step.name} now selects the canary pods`,
      restore: `restored Service ${step.name} as it was before the release`,
    };
    const message = messages[step.reason];
    if (message !== undefined) this.#log.info({ service: step.name, step: step.reason }, message);
  }

  #sayError(err: unknown, retryInMs: number): void {
    const message = describeError(err);
    // The same failure again is a retry, not news.
    const level = message === this.#said.error ? 'debug' : 'warn';
    this.#log[level]({ error: message, retryInMs }, 'reconcile failed; retrying');
    this.#said.error = message;
  }
}

function describeCondition(condition: CanaryReleaseCondition): string {
  return `${condition.reason}: ${condition.message}`;
}

function byName<T extends { metadata?: { name?: string } }>(objects: readonly T[]): Map<string, T> {
  return new Map(objects.map((object) => [object.metadata?.name ?? '', object]));
}

/** Counting cadence: the analysis interval, else often enough for the achieved split to follow. */
function isArchived(release: CanaryRelease | undefined): boolean {
  const phase = release?.status?.phase;
  return phase === 'Adopted' || phase === 'Deprecated';
}

/** A release holding on a bad interval is counted at the default pace meanwhile. */
function collectionIntervalMs(release: CanaryRelease | undefined): number {
  return analysisIntervalMs(release?.spec) ?? (release?.spec?.analysis === undefined ? COUNT_INTERVAL_MS : DEFAULT_INTERVAL_MS);
}
