// reconcile: observed CanaryRelease + Services + Pods + listening ports → desired steps, L4 config
// and status. Pure: no I/O, no clock (options.now), nothing observed is mutated. Level-based:
// every call computes the whole desired state from the world, so a restarted proxy rebuilds
// everything and nothing is skipped because "nothing changed" (seed defects D1, D13).

import { condition } from '../api/conditions.ts';
import {
  finalizerStep,
  ignoredTransition,
  makeStatus,
  observe,
  pointsAtProxy,
  statusStep,
  type Context,
} from './pass/context.ts';
import { copySource } from './service/copies.ts';
import type { Desired, Observed, ReconcileOptions } from './pass/desired.ts';
import { buildL4Config, withPortPolicies } from './service/l4.ts';
import { withMirrors } from './service/port-mirrors.ts';
import { servicePorts, portProtocol } from './service/originals.ts';
import {
  allocatePorts,
  followRenumbered,
  type Allocation,
  type LivePort,
  type PortKey,
  type WantedPort,
} from './service/ports.ts';
import { planRunning } from './release/running.ts';
import { planServices, type ServicePlan } from './release/plan.ts';
import { planWorkloads, stableChanged, type WorkloadPlan } from './workload/workloads.ts';
import { DEFAULT_FAILURE_LIMIT } from './progress/analysis/verdict.ts';
import { planSteps, stepMirror, stepsComplete, type StepPlan } from './progress/steps.ts';
import { archivedStatus, describeSelectorChange, planTransition } from './release/transition.ts';
import { releaseProblems } from '../api/validate.ts';
import type { TransitionRecord } from '../api/status-types.ts';

export type { Desired, Mode, Observed, ReconcileOptions, ServicePatchReason, Step } from './pass/desired.ts';

export function reconcile(observed: Observed, options: ReconcileOptions): Desired {
  const desired = plan(observed, options);
  const { spec } = observed.release;
  const l4Config = withPortPolicies(desired.l4Config, spec);
  // Only a running release mirrors: a transition under way sends the canary nothing it did not ask for.
  return {
    ...desired,
    l4Config:
      desired.mode === 'running' ? withMirrors(l4Config, spec, stepMirror(spec, desired.status.currentStep)) : l4Config,
  };
}

function plan(observed: Observed, options: ReconcileOptions): Desired {
  const context = observe(observed, options);
  const desired = planPhase(context);
  const ignored = ignoredTransition(observed.release);
  return ignored === undefined ? desired : { ...desired, ignored: [{ reason: 'TransitionIgnored', message: ignored }] };
}

function planPhase(context: Context): Desired {
  const { observed } = context;
  const phase = observed.release.status?.phase;
  if (phase === 'Adopted' || phase === 'Deprecated') return planArchived(context, phase);
  // A release that fails its validation acts on nothing it asks (no adoption, no steps, no verdict
  // of thresholds it got wrong); what restores the Services (a rollback, a deleted Service) still runs.
  const transition = decideTransition(context, releaseProblems(observed.release.spec).length === 0);
  if (transition !== undefined) return planTransition(context, transition);
  const planned = planSpec(context);
  if (!planned.ok) return planHolding(context, planned.problems, planned.waiting);
  return planRunning(context, planned.plans, planned.allocations, planned.workloads, planned.stepPlan);
}

/** What the spec asks of the world as observed, or why the release cannot go on as written. */
export type SpecOutcome =
  | {
      readonly ok: false;
      readonly problems: readonly string[];
      readonly waiting: readonly { reason: string; message: string }[];
    }
  | {
      readonly ok: true;
      readonly plans: readonly ServicePlan[];
      readonly allocations: readonly Allocation[];
      readonly workloads: readonly WorkloadPlan[];
      readonly stepPlan: StepPlan | undefined;
    };

/** The Services' plans, the proxy ports, the canary workloads and the step of a running release. */
export function planSpec(context: Context): SpecOutcome {
  const { observed, options } = context;
  const invalid = releaseProblems(observed.release.spec);
  const workloads = planWorkloads(observed.release, observed.deployments, observed.replicaSets);
  // The steps of an invalid spec are not planned: its pauses may end at no time at all.
  const stepPlan =
    invalid.length > 0
      ? undefined
      : planSteps(
          observed.release.spec ?? {},
          observed.release.status ?? {},
          context.judged.analysis,
          allTakenOver(context),
          options.now,
        );
  const spec = planServices(
    observed.release.spec,
    context.name,
    options.proxySelector,
    context.originals,
    observed.services,
    workloads.ok ? workloads.plans : [],
    stepPlan?.weight,
  );
  if (!workloads.ok || !spec.ok || invalid.length > 0) {
    const problems = [...invalid, ...(workloads.ok ? [] : workloads.problems), ...(spec.ok ? [] : spec.problems)];
    const waiting = [
      ...(workloads.ok ? [] : workloads.waiting.map((message) => ({ reason: 'WaitingForWorkload', message }))),
      ...(spec.ok ? [] : spec.waiting.map((message) => ({ reason: 'WaitingForOtherRelease', message }))),
    ];
    return { ok: false, problems, waiting };
  }
  const wanted: WantedPort[] = [
    ...spec.plans.flatMap((plan) => plan.ports.map((port) => withPreferredPort(plan, port, options))),
    // A Service dropped from the spec but still selecting the proxy keeps its ports until handed back.
    ...context.recorded.filter(
      (port) => !spec.plans.some((plan) => plan.name === port.service) && pointsAtProxy(context, port.service),
    ),
  ];
  const recorded = followRenumbered(context.recorded, livePortsOf(context));
  const allocation = allocatePorts(recorded, wanted, options.portBase, options.reservedPorts);
  if (!allocation.ok) return { ok: false, problems: [allocation.message], waiting: [] };
  return { ok: true, plans: spec.plans, allocations: allocation.allocations, workloads: workloads.plans, stepPlan };
}

/**
 * In a pod of its own, the proxy would rather listen on the port's own targetPort (a number), so
 * that the takeover leaves it alone: a re-apply that sets it back, or omits it, changes nothing.
 */
function withPreferredPort(plan: ServicePlan, port: PortKey, options: ReconcileOptions): WantedPort {
  if (options.inPod !== true || plan.takeover.design !== 'values') return port;
  const targetPort = plan.saved.ports.find(
    (saved) => saved.port === port.port && saved.protocol === port.protocol,
  )?.targetPort;
  return typeof targetPort === 'number' ? { ...port, preferred: targetPort } : port;
}

/** Every Service of the spec selects the proxy: the first step's clock may start. */
function allTakenOver(context: Context): boolean {
  const services = context.observed.release.spec?.services ?? [];
  return services.length > 0 && services.every((entry) => context.originals.get(entry.service)?.kind === 'retargeted');
}

/** The TCP and UDP ports of the original Services, as they are now. */
function livePortsOf(context: Context): LivePort[] {
  return [...context.originals.entries()].flatMap(([service, state]) =>
    state.kind === 'missing'
      ? []
      : servicePorts(state.service).flatMap((port): LivePort[] => {
          const protocol = portProtocol(port);
          return protocol === 'TCP' || protocol === 'UDP'
            ? [{ service, port: port.port, protocol, targetPort: port.targetPort }]
            : [];
        }),
  );
}

/**
 * The transition to run, if any. A recorded one wins (it may have outlived its trigger); then the
 * user's spec.transition; then automatic deprecation — an original Service deleted, or its selector
 * changed by someone else after the retarget — and last the release being deleted. A Service
 * missing before the release ever ran is a bad spec instead (planServices says so). An invalid
 * spec (`valid` false) is neither adopted nor judged: only what hands the Services back runs.
 */
function decideTransition(context: Context, valid: boolean): TransitionRecord | undefined {
  const { release } = context.observed;
  const recorded = release.status?.transition;
  if (recorded != null) return recorded;
  const requested = release.spec?.transition;
  if (requested === 'Deprecated' || (requested === 'Adopted' && valid)) {
    const why = release.spec?.transitionReason;
    return {
      type: requested,
      reason: 'Requested',
      message: `spec.transition is ${requested}${why === undefined || why === '' ? '' : `: ${why}`}`,
    };
  }
  const analysis = context.judged.analysis;
  const failureLimit = release.spec?.analysis?.failureLimit ?? DEFAULT_FAILURE_LIMIT;
  if (valid && release.spec?.analysis !== undefined && analysis !== undefined && analysis.failures >= failureLimit) {
    return {
      type: 'Deprecated',
      reason: 'AnalysisFailed',
      message: `rolled back: the canary failed ${analysis.failures} analysis interval(s) in a row: ${analysis.message}`,
    };
  }
  const stableChange = stableChanged(release, context.observed.deployments, context.observed.replicaSets);
  if (stableChange !== undefined)
    return { type: 'Deprecated', reason: 'StableChanged', message: `deprecated automatically: ${stableChange}` };
  for (const entry of release.spec?.services ?? []) {
    const state = context.originals.get(entry.service);
    if (state?.kind === 'hijacked') {
      return {
        type: 'Deprecated',
        reason: 'SelectorChanged',
        message: `deprecated automatically: ${describeSelectorChange(entry.service, state)}`,
      };
    }
    if (state?.kind === 'missing' && hasRun(context, entry.service)) {
      return {
        type: 'Deprecated',
        reason: 'ServiceDeleted',
        message: `deprecated automatically: Service ${entry.service} was deleted`,
      };
    }
  }
  if (context.deleting)
    return { type: 'Deprecated', reason: 'ReleaseDeleted', message: 'the CanaryRelease is being deleted' };
  const steps = release.spec?.steps ?? [];
  if (valid && stepsComplete(release.spec, release.status ?? {}) && release.spec?.autoAdopt !== false) {
    return {
      type: 'Adopted',
      reason: 'StepsComplete',
      message: `every step is done (${steps.length}/${steps.length}); adopted automatically (spec.autoAdopt)`,
    };
  }
  return undefined;
}

function hasRun(context: Context, service: string): boolean {
  return (
    context.recorded.some((port) => port.service === service) ||
    context.copies.some((copy) => copySource(copy) === service)
  );
}

/**
 * A release that cannot go on as written, or that waits (for another release to let go of a
 * Service, for a workload's ReplicaSet): say why, change nothing, keep serving what status holds.
 */
function planHolding(
  context: Context,
  problems: readonly string[],
  waiting: readonly { reason: string; message: string }[],
): Desired {
  const serving = context.recorded.some((port) => pointsAtProxy(context, port.service));
  const invalid = problems.length > 0;
  const status = makeStatus(
    context,
    'Holding',
    null,
    {
      Available: serving
        ? condition(true, 'LastGoodState', 'serving the last good state while the CanaryRelease cannot be applied')
        : condition(false, 'NotRetargeted', 'traffic has not been moved to the proxy'),
      Progressing: invalid
        ? condition(false, 'Blocked', 'nothing is changed until the CanaryRelease is fixed')
        : condition(true, waiting[0]?.reason ?? 'Waiting', waiting.map((wait) => wait.message).join('; ')),
      Failure: invalid ? condition(true, 'InvalidRelease', problems.join('; ')) : condition(false, 'None'),
      Archived: condition(false, 'Running'),
    },
    context.recorded,
  );
  return {
    mode: 'holding',
    steps: [...finalizerStep(context, true), ...statusStep(context, status)],
    l4Config: buildL4Config(context.recorded, context.observed.services, context.options.listenHost),
    status,
  };
}

/** Done: only a finalizer left by a crash after the phase write remains to drop. */
function planArchived(context: Context, phase: 'Adopted' | 'Deprecated'): Desired {
  const record =
    context.observed.release.status?.transition ??
    ({ type: phase, reason: 'Requested', message: `spec.transition is ${phase}` } satisfies TransitionRecord);
  const status = archivedStatus(context, record);
  return {
    mode: 'archived',
    steps: [...statusStep(context, status), ...finalizerStep(context, false)],
    l4Config: { listeners: [] },
    status,
  };
}
