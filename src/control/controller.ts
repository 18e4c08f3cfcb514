// The control loop of `canary-l4 proxy`: informers on the CanaryRelease, the Services and the Pods
// of its namespace only trigger the work loop; its single worker assembles the observed world from
// the caches and the data plane, calls the pure reconcile, applies the L4 config to the data plane
// first, then the steps. Failures retry with capped backoff forever; a periodic resync repairs
// what no event announced.

import { isDeepStrictEqual } from 'node:util';
import type { V1ObjectReference } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { configChanges } from '../config/changes.ts';
import type { L4Config } from '../config/types.ts';
import type { CounterSnapshot } from '../counters/snapshot.ts';
import { boundedCall, type KubeClients } from '../kube/client.ts';
import { EventRecorder } from '../kube/events.ts';
import { describeError } from '../kube/patch.ts';
import { DEFAULT_INTERVAL_MS } from './progress/analysis/verdict.ts';
import { hasCounts, type Evidence } from './progress/analysis/evidence.ts';
import { ApiErrorStreak } from './api-error-streak.ts';
import { applySteps, type ApplyTarget, type Written } from './loop/apply.ts';
import { EvidenceCollector, replicaStatsUrls } from './progress/collector.ts';
import { EvidenceQueue } from './progress/evidence-queue.ts';
import { decisions } from './pass/decisions.ts';
import { listenersStillTargeted } from './service/l4.ts';
import { readyPods, selectorMatches } from './service/selectors.ts';
import { ReleaseCaches } from './loop/caches.ts';
import { PassReporter } from './loop/reporting.ts';
import { UpstreamReach } from './loop/upstream-reach.ts';
import { proxyOwnWrites } from './loop/own-writes.ts';
import { reconcile, type Desired, type Observed, type ReconcileOptions, type Step } from './reconcile.ts';
import { withRefusedConfig } from './pass/refused.ts';
import { API_VERSION, KIND } from '../api/names.ts';
import type { CanaryRelease } from '../api/release-types.ts';
import { analysisIntervalMs } from './progress/steps.ts';
import { WorkLoop } from '../controller-kit/work-loop.ts';
import { OWN_WRITES_WAIT_MS, WORK_MAX_BACKOFF_MS } from '../controller-kit/constants.ts';

/**
 * What the controller needs of the process it runs in (runtime/runtime.ts's Runtime is one): control
 * imports neither the runtime nor the data plane, they are handed in.
 */
export interface ControlledProcess {
  readonly log: Logger;
  readonly registry: Registry;
  /** The config the data plane serves, and the ports it listens on now. */
  readonly dataplane: {
    readonly config: L4Config;
    listeningPorts(): { tcp: ReadonlySet<number>; udp: ReadonlySet<number> };
  };
  /** Serves `config`; rejects, saying why, when the data plane refuses it. */
  applyConfig(config: L4Config): Promise<unknown>;
  setReady(ready: boolean): void;
  /** This replica's counters, as the others serve theirs on /stats. */
  counters(): CounterSnapshot;
}

export interface ControllerOptions {
  readonly runtime: ControlledProcess;
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
  /** Told after each pass that finds the release over (Adopted or Deprecated, its hand-back grace
   * past, nothing left to write): the proxy has nothing left to serve. */
  readonly onReleaseFinished?: (phase: 'Adopted' | 'Deprecated') => void;
}

/** A config opens or closes listeners once; a second change within one pass would be a surprise. */
const MAX_REPLANS = 2;
/** Without spec.analysis the achieved split is brought up to date this often. */
const COUNT_INTERVAL_MS = 10_000;
/** How long the finalizer's removal waits for the pass's Events to be sent. */
const EVENTS_BEFORE_FINALIZER_MS = 3_000;
/** While an upstream is not answering as it will serve, it is asked again this often. */
const UPSTREAM_RETRY_MS = 1_000;

/** Starts on construction: informers at once, the work loop once every cache is filled. */
export class Controller {
  readonly #options: ControllerOptions;
  readonly #log: Logger;
  readonly #reporter: PassReporter;
  /** Aborts every API call in flight at shutdown. */
  readonly #cancel = new AbortController();
  readonly #target: ApplyTarget;
  readonly #loop: WorkLoop;
  readonly #ownWrites = proxyOwnWrites(OWN_WRITES_WAIT_MS);
  readonly #caches: ReleaseCaches;
  readonly #events: EventRecorder;
  #stopped = false;
  #synced = false;
  /** Data-plane applies, one at a time, each planned from the caches as they are when its turn comes. */
  #serving: Promise<unknown> = Promise.resolve();
  #serveScheduled = false;
  /** The status the last pass reported, to tell what changed (Events). */
  #lastStatus: Desired['status'] | undefined;
  /** The leader's collector of every replica's counters, and the intervals status has not counted yet. */
  readonly #collector: EvidenceCollector;
  readonly #evidence = new EvidenceQueue();
  readonly #apiErrors = new ApiErrorStreak();
  /** The uid of the release this proxy handed back as it was deleted: its finalizer patch was the
   * last write to it, whatever a lagging cache still shows of it afterwards. */
  #handedBack: string | undefined;
  readonly #upstreams = new UpstreamReach();
  /** The unready upstreams last logged, so a wait is said once. */
  #saidUnready = '';

  constructor(options: ControllerOptions) {
    this.#options = options;
    this.#log = options.runtime.log.child({ release: options.release, namespace: options.namespace });
    this.#reporter = new PassReporter({
      registry: options.runtime.registry,
      log: this.#log,
      release: options.release,
      namespace: options.namespace,
    });
    const { core, apps, custom } = options.clients;
    const { namespace, release } = options;
    const callOptions = boundedCall(this.#cancel.signal, options.requestTimeoutMs);
    this.#target = { core, apps, custom, namespace, release, callOptions };
    this.#loop = new WorkLoop({
      reconcile: () => this.#reconcile(),
      onError: (err, retryInMs) => this.#reporter.sayError(err, retryInMs),
      resyncMs: options.resyncMs,
      maxBackoffMs: WORK_MAX_BACKOFF_MS,
    });
    this.#events = new EventRecorder({
      core,
      namespace,
      component: 'canary-l4-proxy',
      instance: options.identity ?? 'canary-l4-proxy',
      log: this.#log,
      callOptions,
    });
    // Every change is served at once, whatever the API writes of the work loop are doing; the work
    // loop follows with the writes and status.
    const trigger = () => {
      this.#loop.trigger();
      this.#serveSoon();
    };
    this.#caches = new ReleaseCaches({
      clients: options.clients,
      namespace,
      release,
      proxySelector: options.reconcile.proxySelector,
      callOptions,
      onChange: trigger,
      log: this.#log,
      // A watch back after an outage: the API answers again, so stop waiting out the backoff.
      onRestarted: () => this.#loop.retryNow(),
    });
    this.#collector = new EvidenceCollector({
      local: () => options.runtime.counters(),
      replicas: () => replicaStatsUrls(this.#caches.pods(), options.reconcile.proxySelector),
      intervalMs: () => collectionIntervalMs(this.#release()),
      // A release that is over has nothing left to count.
      active: () => !this.#stopped && (options.isLeader?.() ?? true) && !isArchived(this.#release()),
      onEvidence: (evidence) => {
        // Without analysis an interval with no traffic changes nothing in status: no write for it.
        if (this.#release()?.spec?.analysis === undefined && !hasCounts(evidence)) return;
        this.#evidence.push(evidence);
        this.#loop.trigger();
      },
      log: this.#log,
    });
    void this.#caches.synced.then(() => {
      if (this.#stopped) return;
      this.#synced = true;
      this.#loop.start();
      this.#collector.start();
    });
  }

  /** Leadership was gained or lost: reconcile soon. */
  leadershipChanged(): void {
    this.#loop.trigger();
  }

  /** Bounded: API calls in flight are aborted, so neither the loop nor the informers can hang it. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.#cancel.abort();
    await Promise.all([this.#loop.stop(), this.#collector.stop(), this.#caches.stop()]);
  }

  #release(): CanaryRelease | undefined {
    const release = this.#caches.release();
    return release !== undefined && release.metadata.uid === this.#handedBack ? undefined : release;
  }

  #listening(): Set<number> {
    const { tcp, udp } = this.#options.runtime.dataplane.listeningPorts();
    return new Set([...tcp, ...udp]);
  }

  /** The oldest interval status has not counted yet, one per pass (evidence-queue.ts). */
  #pendingEvidence(release: CanaryRelease): { evidence: Evidence } | undefined {
    const oldest = this.#evidence.oldest(release.status?.countedAt, this.#options.isLeader?.() ?? true);
    return oldest === undefined ? undefined : { evidence: oldest };
  }

  /** Reconcile on the caches as they are now; `apiError`: the persistent failure to report. */
  #plan(release: CanaryRelease, now: Date, apiError?: string): Desired {
    const observed: Observed = {
      release,
      services: byName(this.#caches.services()),
      pods: this.#caches.pods(),
      deployments: byName(this.#caches.deployments()),
      replicaSets: this.#caches.replicaSets(),
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
        if (release === undefined || this.#stopped || !this.#caches.settled()) return;
        const planned = this.#plan(release, new Date());
        if ((await this.#serve(planned.l4Config)) === undefined)
          this.#reporter.reportWeights(planned, this.#options.runtime.dataplane.config);
      });
    });
  }

  async #reconcile(): Promise<{ requeueAfterMs?: number } | undefined> {
    const waitMs = this.#ownWrites.waitMs(
      {
        service: (name) => this.#caches.service(name),
        deployment: (name) => this.#caches.deployment(name),
        release: () => this.#release(),
      },
      Date.now(),
    );
    if (waitMs > 0) return { requeueAfterMs: waitMs };
    // The Pods watch is switching selectors; the switch triggers a pass once it has its list.
    if (!this.#caches.settled()) return;
    const endTimer = this.#reporter.startPass();
    try {
      const result = await this.#pass();
      this.#reporter.passSucceeded();
      this.#apiErrors.passed();
      return result;
    } catch (err) {
      this.#reporter.passFailed();
      await this.#reportApiError(err);
      throw err;
    } finally {
      endTimer();
    }
  }

  /**
   * An API error that persists reaches the Failure condition (api-error-streak.ts): when the failing
   * write comes before the status write (a Service patch refused, say), the pass never gets to write
   * status, so the status alone is written here, best effort.
   */
  async #reportApiError(err: unknown): Promise<void> {
    const message = this.#apiErrors.failed(err);
    const release = this.#release();
    if (message === undefined || release === undefined || !(this.#options.isLeader?.() ?? true)) return;
    const statusSteps = this.#plan(release, new Date(), message).steps.filter(
      (step) => step.kind === 'writeStatus' && step.reason === 'updateStatus',
    );
    try {
      await applySteps(this.#target, statusSteps, (_step, written) => this.#ownWrites.record(written, Date.now()));
    } catch (statusErr) {
      this.#log.debug({ error: describeError(statusErr) }, 'could not report the API error in status either');
    }
  }

  async #pass(): Promise<{ requeueAfterMs?: number } | undefined> {
    const release = this.#release();
    if (release === undefined) {
      // Closing listeners only: nothing to refuse. A Service may still point here (a finalizer
      // removed by hand): its listeners stay.
      await this.#serialized(() =>
        this.#serve(
          listenersStillTargeted(
            this.#options.runtime.dataplane.config,
            this.#caches.services(),
            this.#options.release,
            this.#options.reconcile.proxySelector,
          ),
        ),
      );
      this.#reporter.releaseMissing();
      return;
    }
    this.#reporter.releaseFound();
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
      for (
        let replans = 0;
        refusal === undefined && replans < MAX_REPLANS && !isDeepStrictEqual(this.#listening(), listening);
        replans++
      ) {
        listening = this.#listening();
        planned = this.#plan(release, now);
        refusal = await this.#serve(planned.l4Config);
      }
      return { planned, refusal, listening };
    });
    // Readiness is never withdrawn by a refused update: that would take the endpoints of the
    // ports that do work away too.
    const waitingForUpstreams = refusal === undefined ? await this.#upstreamsUnready() : false;
    const desired =
      refusal === undefined ? planned : withRefusedConfig(planned, release, refusal, now, this.#listening());
    this.#reporter.report(desired, refusal === undefined ? this.#options.runtime.dataplane.config : undefined);
    // A follower only serves; the leader also writes, and stops writing the moment it loses the Lease.
    const leading = () => this.#options.isLeader?.() ?? true;
    const done: Step[] = [];
    // The finalizer goes last, after this pass's Events are sent: once it is gone, the release is
    // deleted, and nothing of this pass is left to write.
    const finalizerGoes = (step: Step) => step.kind === 'patchRelease' && step.reason === 'removeFinalizer';
    const onWritten = (step: Step, written: Written) => {
      this.#ownWrites.record(written, Date.now());
      if (finalizerGoes(step) && release.metadata.deletionTimestamp != null) this.#handedBack = release.metadata.uid;
      this.#reporter.sayStep(step);
      done.push(step);
    };
    let recorded = false;
    try {
      await applySteps(
        this.#target,
        desired.steps.filter((step) => !finalizerGoes(step)),
        onWritten,
        leading,
      );
      const last = desired.steps.filter(finalizerGoes);
      if (last.length > 0 && leading()) {
        this.#recordDecisions(release, desired, done);
        recorded = true;
        await this.#events.flushed(EVENTS_BEFORE_FINALIZER_MS);
        await applySteps(this.#target, last, onWritten, leading);
      }
    } finally {
      if (!recorded && leading()) this.#recordDecisions(release, desired, done);
    }
    if (refusal !== undefined)
      throw new Error(
        `the data plane refused the config of CanaryRelease ${namespace}/${release.metadata.name}: ${refusal}`,
      );
    const phase = release.status?.phase;
    if (desired.mode === 'archived' && desired.steps.length === 0 && (phase === 'Adopted' || phase === 'Deprecated'))
      this.#options.onReleaseFinished?.(phase);
    // Still moving after the replans: go again at once.
    if (!isDeepStrictEqual(this.#listening(), listening)) return { requeueAfterMs: 0 };
    const requeues = [desired.requeueAfterMs, waitingForUpstreams ? UPSTREAM_RETRY_MS : undefined];
    const requeueAfterMs = Math.min(...requeues.filter((ms) => ms !== undefined));
    if (Number.isFinite(requeueAfterMs)) return { requeueAfterMs };
  }

  /**
   * Ready once a Service sends this pod traffic; before that, once it serves a listener and every
   * upstream of its config answers from here as it will serve (loop/upstream-reach.ts), so that the
   * takeover, which waits for a Ready proxy pod, never sends traffic to a pod that cannot pass it on.
   * Once a Service targets it, readiness is never withdrawn, whatever a new upstream does. Whether
   * it is still waiting.
   */
  async #upstreamsUnready(): Promise<boolean> {
    const { runtime, release, reconcile } = this.#options;
    const config = runtime.dataplane.config;
    if (
      listenersStillTargeted(config, this.#caches.services(), release, reconcile.proxySelector).listeners.length > 0
    ) {
      runtime.setReady(true);
      return false;
    }
    const ready = readyPods(this.#caches.pods());
    const hasReadyPods = (host: string) => {
      const selector = [...this.#caches.services()].find((service) => service.spec?.clusterIP === host)?.spec?.selector;
      return selector !== undefined && ready.some((pod) => selectorMatches(selector, pod.metadata?.labels));
    };
    const unready = await this.#upstreams.unready(config, hasReadyPods);
    runtime.setReady(config.listeners.length > 0 && unready.length === 0);
    const said = unready.join(', ');
    if (said !== this.#saidUnready && unready.length > 0)
      this.#log.info(
        { upstreams: unready },
        "not Ready yet: these upstreams do not answer from this pod as they will serve (kube-proxy on its node has not written their Services' rules or endpoints yet?)",
      );
    this.#saidUnready = said;
    return unready.length > 0;
  }

  /** Events for what this pass decided (once per change: the recorder drops repeats). */
  #recordDecisions(release: CanaryRelease, desired: Desired, done: readonly Step[]): void {
    const { name, namespace, uid } = release.metadata;
    const object: V1ObjectReference = { apiVersion: API_VERSION, kind: KIND, name, namespace, uid };
    for (const decision of decisions(
      this.#lastStatus === undefined ? undefined : { ...desired, status: this.#lastStatus },
      desired,
      done,
    )) {
      this.#events.record(object, decision.type, decision.reason, decision.message);
    }
    this.#lastStatus = desired.status;
  }

  /** Applies the config unless it already runs (the previous one keeps serving if it is refused);
   * the refusal's message, or undefined once it serves. */
  async #serve(config: L4Config): Promise<string | undefined> {
    const { runtime } = this.#options;
    const before = runtime.dataplane.config;
    if (!isDeepStrictEqual(config, before)) {
      try {
        await runtime.applyConfig(config);
      } catch (err) {
        return (err as Error).message;
      }
      this.#log.info(
        {
          listeners: config.listeners.map((listener) => `${listener.name}@${listener.listen.port}`),
          ...configChanges(before, config),
        },
        'data plane config applied',
      );
      this.#options.onServed?.(config);
    }
    return undefined;
  }
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
  return (
    analysisIntervalMs(release?.spec) ??
    (release?.spec?.analysis === undefined ? COUNT_INTERVAL_MS : DEFAULT_INTERVAL_MS)
  );
}
