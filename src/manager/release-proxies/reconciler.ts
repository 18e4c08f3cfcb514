// The manager's reconciler of a CanaryRelease (key namespace/name): reads the release, the objects
// kept for it and its proxy pods from the caches, plans (plan.ts, pure), reports what the pass
// found (metrics, a log line and an Event once per change of ProxyAvailable's reason), and applies
// the steps. A write the apiserver will refuse again is said in the release's status at once.

import type { KubernetesObject, V1ObjectReference } from '@kubernetes/client-node';
import { apiFailure, describeError, isAlreadyExists } from '../../kube/patch.ts';
import { API_VERSION, KIND, LABEL_RELEASE } from '../../api/names.ts';
import type { ManagedRelease } from '../../api/proxy-types.ts';
import type { StepFailure } from '../apply.ts';
import {
  countedPass,
  namespacedKey,
  PassErrors,
  splitKey,
  StepRunner,
  type PassResult,
  type ReconcileContext,
  type Reconciler,
} from '../pass.ts';
import { CHILD_KINDS, childName, plan, type ChildKind, type ObservedRelease, type Plan } from '../plan.ts';
import { KIND_OF } from '../step.ts';
import { PROXY_CONDITION } from '../names.ts';

export class ReleaseReconciler implements Reconciler {
  readonly #context: ReconcileContext;
  readonly #steps: StepRunner;
  readonly #errors: PassErrors;
  /** Why the apiserver refused a release's objects, until a pass succeeds. */
  readonly #refusals = new Map<string, string>();
  /** The ProxyAvailable reason this replica last reported per release. */
  readonly #reported = new Map<string, string>();

  constructor(context: ReconcileContext) {
    this.#context = context;
    this.#steps = new StepRunner(context);
    this.#errors = new PassErrors(context.log);
  }

  async reconcile(key: string): Promise<PassResult> {
    if (!this.#context.writing()) return undefined;
    const { namespace, name } = splitKey(key);
    const waiting = this.#steps.waitForOwnWrites(key, namespace);
    if (waiting !== undefined) return waiting;
    await countedPass(
      this.#context.metrics,
      () => {
        const observed = this.#observe(namespace, name);
        const refusal = this.#refusals.get(key);
        const planned = plan(
          { ...observed, ...(refusal === undefined ? {} : { refusal }) },
          this.#context.settings,
          new Date(),
        );
        this.#report(observed.release, namespace, name, planned);
        return this.#steps.run(key, namespace, name, planned.steps, (step) =>
          this.#context.events.step({ release: name, namespace }, this.#releaseRef(namespace, name), step),
        );
      },
      (failure) => this.#reportRefusal(key, namespace, name, failure),
    );
    if (this.#errors.recovered(key))
      this.#context.log.info({ release: name, namespace }, 'the proxy objects converge again');
    // Nothing was refused this time; the status written with the old refusal is corrected by the
    // next pass, which that very write triggers.
    this.#refusals.delete(key);
    return undefined;
  }

  sayFailure(key: string, err: unknown, retryInMs: number): void {
    const { namespace, name } = splitKey(key);
    this.#errors.say(key, { release: name, namespace }, err, retryInMs);
  }

  #observe(namespace: string, name: string): ObservedRelease {
    const { caches } = this.#context;
    const children: Partial<Record<ChildKind, KubernetesObject>> = {};
    for (const kind of CHILD_KINDS) {
      const found = caches.informer(kind, namespace)?.get(childName(kind, name), namespace);
      if (found !== undefined) children[kind] = found;
    }
    const pods = caches.pods(namespace, LABEL_RELEASE, name);
    const release = caches.informer('release', namespace)?.get(name, namespace) as ManagedRelease | undefined;
    return { namespace, name, release, children, pods };
  }

  /** The release as cached now, to record an Event on; undefined once it is gone. */
  #releaseRef(namespace: string, name: string): V1ObjectReference | undefined {
    const release = this.#context.caches.informer('release', namespace)?.get(name, namespace) as
      | ManagedRelease
      | undefined;
    return release === undefined ? undefined : releaseRef(release);
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
    const statusOnly = plan({ ...observed, refusal }, this.#context.settings, new Date()).steps.filter(
      (item) => item.kind === 'writeStatus',
    );
    const statusFailure = await this.#steps.run(key, namespace, name, statusOnly, () => undefined);
    if (statusFailure !== undefined)
      this.#context.log.debug(
        { release: name, namespace, error: describeError(statusFailure.error) },
        'could not report the refusal in status either',
      );
  }

  /** Metrics, logs and Events for the state this pass found. */
  #report(release: ManagedRelease | undefined, namespace: string, name: string, planned: Plan): void {
    const { metrics, log, events } = this.#context;
    metrics.proxy(namespace, name, planned.proxy);
    // Once per change of reason: a rollout's "1/2 ready", "2/2 ready" are status, not news. Compared
    // with what this replica reported last, not with the release: a proxy's status write may carry
    // an older ProxyAvailable for a moment (its cache lags this write), which is no news either.
    const condition = planned.condition;
    const key = namespacedKey(namespace, name);
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
    log[warning ? 'warn' : 'info'](
      { release: name, namespace, reason: condition.reason },
      `${PROXY_CONDITION}: ${condition.message}`,
    );
    events.record(releaseRef(release), warning ? 'Warning' : 'Normal', condition.reason, condition.message);
  }
}

function releaseRef(release: ManagedRelease): V1ObjectReference {
  const { name, namespace = '', uid } = release.metadata;
  return { apiVersion: API_VERSION, kind: KIND, name, namespace, uid };
}
