// The release while it runs. Order of the steps: finalizer → save each original (annotation only)
// → create or update the copies → retarget (gated on what is observed: the annotation saved, the
// copies' cluster IPs, the proxy ports recorded in status and listened on, in a pod a Ready proxy
// pod carrying the takeover labels, no mixing) → hand back
// Services the spec dropped → delete their copies → status (records new allocations; a port is
// retargeted only on a later pass, once status holds it). At most one patch per Service per pass:
// each carries the observed resourceVersion, so a second would always conflict.

import type { V1ServicePort } from '@kubernetes/client-node';
import { condition } from '../../api/conditions.ts';
import { deleteCopyStep, finalizerStep, hasReadyPod, makeStatus, statusStep, type Context } from '../pass/context.ts';
import { clusterIpOf, copyName, copySource, COPY_ROLES, desiredCopy } from '../service/copies.ts';
import type { Desired, Step } from '../pass/desired.ts';
import { askedWeight, buildL4Config, gatedWeight, servedWeight, type SideReadiness } from '../service/l4.ts';
import { formatSaved, liveFields, portProtocol, retargetFields, saveOriginal } from '../service/originals.ts';
import { copyPatch, originalPatch } from '../service/patches.ts';
import { portKeyId, type Allocation } from '../service/ports.ts';
import { findOverlap, livePods, type SelectorOverlap } from '../service/selectors.ts';
import { proxyPodsReady } from '../service/takeover-selector.ts';
import { planTakeover, type TakeoverPlan } from './takeover-plan.ts';
import { formatSelector } from '../../api/labels.ts';
import type { ServicePlan } from './plan.ts';
import type { StepPlan } from '../progress/steps.ts';
import { handBackSteps } from './transition.ts';
import { canaryDrift, workloadStatuses, type WorkloadPlan } from '../workload/workloads.ts';
import type { PortStatus } from '../../api/status-types.ts';

export interface SelectorFindings {
  /** Selectors that would mix versions: traffic must not move. */
  readonly failures: readonly string[];
  /** A side with no Ready pod: its share is held (not a failure; it resolves as pods come up). */
  readonly notes: readonly string[];
}

interface RetargetOutcome {
  readonly steps: readonly Step[];
  /** The Service selects the proxy once the steps are done. */
  readonly retargeted: boolean;
  readonly waiting: readonly string[];
}

export function planRunning(
  context: Context,
  plans: readonly ServicePlan[],
  allocations: readonly Allocation[],
  workloads: readonly WorkloadPlan[],
  stepPlan?: StepPlan,
): Desired {
  const readiness = sidesReady(context, plans);
  const takeover = planTakeover(
    context.name,
    plans,
    allocations,
    context.options.inPod === true,
    context.options.reservedPorts ?? new Set(),
  );
  const ports = portStatuses(context, plans, allocations, readiness, takeover);
  const findings = checkSelectors(context, plans, readiness);
  const mixing = findings.failures.length > 0;
  const outcomes = plans.map((plan) => planRetarget(context, plan, allocations, mixing, takeover));
  const planned = new Set(plans.map((plan) => plan.name));
  const dropped = handBackSteps(
    context,
    [...context.originals.keys()].filter((name) => !planned.has(name)),
    'Deprecated',
  );
  const deletions: Step[] = context.copies
    .filter((copy) => {
      const source = copySource(copy) ?? '';
      return !planned.has(source) && !dropped.blocked.has(source);
    })
    .map(deleteCopyStep);
  const allRetargeted = outcomes.every((outcome) => outcome.retargeted);
  const waiting = outcomes.flatMap((outcome) => outcome.waiting);
  const progressing = [...waiting, ...findings.notes, ...dropped.waiting];
  const failures = [...findings.failures, ...dropped.problems];
  const status = makeStatus(
    context,
    'Running',
    null,
    {
      Available: allRetargeted
        ? condition(
            true,
            ports.some((port) => port.override != null) ? 'WeightOverridden' : 'Serving',
            describeServing(ports, context, takeover),
          )
        : condition(false, 'NotRetargeted', 'traffic has not been moved to the proxy yet'),
      Progressing:
        progressing.length === 0
          ? condition(false, 'Complete')
          : condition(true, waiting.length > 0 ? 'Retargeting' : 'WaitingForReadyPods', progressing.join('; ')),
      Failure:
        failures.length === 0
          ? condition(false, 'None')
          : condition(true, mixing ? 'SelectorsMix' : 'CannotRestore', failures.join('; ')),
      Archived: condition(false, 'Running'),
    },
    ports,
    {
      workloads:
        workloads.length === 0
          ? undefined
          : workloadStatuses(workloads, context.observed.deployments, context.observed.release.status?.workloads ?? []),
      ...(stepPlan === undefined ? {} : { steps: stepPlan }),
      takeover: takeover.status,
    },
  );
  const steps = [
    ...finalizerStep(context, true),
    ...plans.flatMap((plan) => saveStep(context, plan)),
    ...workloads.flatMap((workload) => canaryWorkloadSteps(context, workload)),
    ...plans.flatMap((plan) => copySteps(context, plan)),
    ...outcomes.flatMap((outcome) => outcome.steps),
    ...dropped.steps,
    ...deletions,
    ...statusStep(context, status),
  ];
  return {
    mode: 'running',
    steps,
    status,
    l4Config: buildL4Config(ports, context.observed.services, context.options.listenHost),
    ...(stepPlan?.requeueAfterMs === undefined ? {} : { requeueAfterMs: stepPlan.requeueAfterMs }),
  };
}

/** Spec weights and overrides for planned ports; a dropped Service still served keeps what status says. */
function portStatuses(
  context: Context,
  plans: readonly ServicePlan[],
  allocations: readonly Allocation[],
  readiness: ReadonlyMap<string, SideReadiness>,
  takeover: TakeoverPlan,
): PortStatus[] {
  const plansByName = new Map(plans.map((plan) => [plan.name, plan] as const));
  const planned = new Map(plans.flatMap((plan) => plan.ports.map((port) => [portKeyId(port), port] as const)));
  const recorded = new Map(context.recorded.map((port) => [portKeyId(port), port] as const));
  return allocations.map((allocation): PortStatus => {
    const port = planned.get(portKeyId(allocation));
    if (port === undefined) {
      const previous = recorded.get(portKeyId(allocation));
      const kept = {
        ...allocation,
        weight: previous?.weight ?? 0,
        override: previous?.override ?? null,
        ...(previous?.targetPortKept === true ? { targetPortKept: true as const } : {}),
      };
      return { ...kept, served: previous === undefined ? askedWeight(kept) : servedWeight(previous) };
    }
    const plan = plansByName.get(port.service);
    const targetPortKept = plan !== undefined && takeover.keepsTargetPort(plan, allocation);
    const override = context.options.weightOverrides.findLast(
      (item) => item.service === port.service && item.port === port.port,
    );
    const asked = { ...allocation, weight: port.weight, override: override?.weight ?? null };
    const sides = readiness.get(port.service) ?? { stable: true, canary: true };
    return {
      ...asked,
      served: gatedWeight(askedWeight(asked), sides),
      ...(targetPortKept ? { targetPortKept: true as const } : {}),
    };
  });
}

/** Whether each planned Service's stable and canary sides have a Ready pod. */
export function sidesReady(context: Context, plans: readonly ServicePlan[]): Map<string, SideReadiness> {
  return new Map(
    plans.map(
      (plan) =>
        [
          plan.name,
          {
            stable: hasReadyPod(context, plan.forkedSelector),
            canary: hasReadyPod(context, plan.canarySelector),
          },
        ] as const,
    ),
  );
}

/** Selectors that would mix versions (failures), and sides with no Ready pod (notes). */
export function checkSelectors(
  context: Context,
  plans: readonly ServicePlan[],
  readiness: ReadonlyMap<string, SideReadiness>,
): SelectorFindings {
  const pods = livePods(context.observed.pods);
  const failures: string[] = [];
  const notes: string[] = [];
  const proxy = context.options.proxySelector;
  for (const plan of plans) {
    const overlaps: [string, string, SelectorOverlap | undefined][] = [
      ['forked', 'canary', findOverlap(plan.forkedSelector, plan.canarySelector, pods)],
      ['forked', 'proxy', findOverlap(plan.forkedSelector, proxy, pods)],
      ['canary', 'proxy', findOverlap(plan.canarySelector, proxy, pods)],
    ];
    for (const [first, second, overlap] of overlaps) {
      if (overlap !== undefined) failures.push(describeOverlap(plan.name, first, second, overlap));
    }
    const sides = readiness.get(plan.name);
    const canary = `canary selector ${formatSelector(plan.canarySelector)}`;
    const stable = `forked selector ${formatSelector(plan.forkedSelector)}`;
    if (sides === undefined || (sides.stable && sides.canary)) continue;
    if (!sides.stable && !sides.canary)
      notes.push(`Service ${plan.name}: neither the ${stable} nor the ${canary} matches a Ready pod`);
    else if (!sides.canary)
      notes.push(
        `Service ${plan.name}: the ${canary} matches no Ready pod; its ports send the canary no new traffic until one is Ready`,
      );
    else
      notes.push(
        `Service ${plan.name}: the ${stable} matches no Ready pod; its ports send all new traffic to the canary until one is Ready`,
      );
  }
  return { failures, notes };
}

function describeOverlap(service: string, first: string, second: string, overlap: SelectorOverlap): string {
  const selectors = `${first} selector ${formatSelector(overlap.first)} and ${second} selector ${formatSelector(overlap.second)}`;
  const how = overlap.identical ? 'are the same' : `both match pods ${overlap.pods.join(', ')}`;
  return `Service ${service}: ${selectors} ${how}; traffic is not moved until they select apart`;
}

/** The canary Deployment made, brought up to date, or (its selector being immutable) made again. */
function canaryWorkloadSteps(context: Context, workload: WorkloadPlan): Step[] {
  const name = workload.canary.metadata?.name ?? '';
  const live = context.observed.deployments.get(name);
  if (live === undefined)
    return [{ kind: 'createDeployment', reason: 'createCanaryWorkload', deployment: workload.canary }];
  switch (canaryDrift(live, workload.canary)) {
    case 'none':
      return [];
    case 'recreate':
      return [{ kind: 'deleteDeployment', reason: 'deleteCanaryWorkload', name, uid: live.metadata?.uid }];
    case 'update': {
      const metadata = { ...workload.canary.metadata, resourceVersion: live.metadata?.resourceVersion };
      return [
        { kind: 'replaceDeployment', reason: 'updateCanaryWorkload', deployment: { ...workload.canary, metadata } },
      ];
    }
  }
}

function saveStep(context: Context, plan: ServicePlan): Step[] {
  if (plan.state.kind === 'retargeted') return [];
  const service = plan.state.service;
  const fields = { ...liveFields(service), annotation: formatSaved(saveOriginal(service, context.name)) };
  const patch = originalPatch(service, fields);
  return patch === undefined ? [] : [{ kind: 'patchService', reason: 'saveOriginal', name: plan.name, patch }];
}

function copySteps(context: Context, plan: ServicePlan): Step[] {
  return COPY_ROLES.flatMap((role): Step[] => {
    const desired = desiredCopy(
      context.observed.release,
      plan.name,
      plan.saved,
      role,
      role === 'forked' ? plan.forkedSelector : plan.canarySelector,
    );
    const live = context.observed.services.get(copyName(plan.name, role));
    if (live === undefined) return [{ kind: 'createService', reason: 'createCopy', service: desired }];
    const patch = copyPatch(live, desired);
    return patch === undefined
      ? []
      : [{ kind: 'patchService', reason: 'updateCopy', name: copyName(plan.name, role), patch }];
  });
}

function planRetarget(
  context: Context,
  plan: ServicePlan,
  allocations: readonly Allocation[],
  mixing: boolean,
  takeover: TakeoverPlan,
): RetargetOutcome {
  const { listening } = context.observed;
  const mine = allocations.filter((allocation) => allocation.service === plan.name);
  const recordedIds = new Set(context.recorded.map((port) => `${portKeyId(port)}@${port.proxyPort}`));
  const unrecorded = mine.filter((allocation) => !recordedIds.has(`${portKeyId(allocation)}@${allocation.proxyPort}`));
  const silent = mine.filter((allocation) => !unrecorded.includes(allocation) && !listening.has(allocation.proxyPort));
  const targetPortOf = (port: V1ServicePort): number | string | undefined => {
    const allocation = mine.find((item) => item.port === port.port && item.protocol === portProtocol(port));
    return allocation === undefined || unrecorded.includes(allocation) || silent.includes(allocation)
      ? undefined
      : takeover.targetPortOf(plan, port, allocation.proxyPort);
  };
  const pods = podWait(context, plan, takeover);
  const portWaits = [
    ...(unrecorded.length > 0
      ? [`Service ${plan.name}: recording proxy ports ${listPorts(unrecorded)} in status`]
      : []),
    ...(silent.length > 0 ? [`Service ${plan.name}: waiting for the proxy to listen on ${listPorts(silent)}`] : []),
    ...(pods === undefined ? [] : [pods]),
  ];
  const service = plan.state.service;
  const fields = retargetFields(service, plan.saved, plan.takeover, targetPortOf);
  if (plan.state.kind === 'retargeted') {
    // A repair waits until every port is ready and a proxy pod can serve the selector, then takes
    // the whole Service back in one patch: one made earlier would leave a port on the owner's
    // targetPort where the proxy pods answer nothing, or select pods that are not there yet.
    // Meanwhile the Service selects the owner's pods (the takeover kept its keys): it answers.
    const patch = portWaits.length > 0 ? undefined : originalPatch(service, fields);
    return {
      steps: patch === undefined ? [] : [{ kind: 'patchService', reason: 'repair', name: plan.name, patch }],
      retargeted: true,
      waiting: portWaits,
    };
  }
  const noIp = COPY_ROLES.map((role) => copyName(plan.name, role)).filter(
    (name) => clusterIpOf(context.observed.services.get(name)) === undefined,
  );
  const waiting = [
    ...(plan.state.kind === 'free' || saveStep(context, plan).length > 0
      ? [`Service ${plan.name}: saving the original selector and ports`]
      : []),
    ...(noIp.length > 0 ? [`Service ${plan.name}: waiting for ${noIp.join(' and ')} to get a cluster IP`] : []),
    ...portWaits,
  ];
  if (waiting.length > 0 || mixing) return { steps: [], retargeted: false, waiting };
  const patch = originalPatch(service, fields);
  return {
    steps: patch === undefined ? [] : [{ kind: 'patchService', reason: 'retarget', name: plan.name, patch }],
    retargeted: true,
    waiting,
  };
}

/**
 * Why the proxy pods cannot serve the Service taken over yet, or undefined when they can. A proxy
 * outside a pod cannot check (it says so in Available), and a Service a 0.2 proxy took over selects
 * the proxy pods by the proxy selector, which they always carry.
 */
function podWait(context: Context, plan: ServicePlan, takeover: TakeoverPlan): string | undefined {
  if (context.options.inPod !== true || plan.takeover.design !== 'values') return undefined;
  const names = new Set(plan.saved.ports.map((port) => port.targetPort));
  const namedPorts = takeover.status.namedPorts.filter((named) => names.has(named.name));
  const readiness = proxyPodsReady(
    plan.takeover.selector,
    context.options.proxySelector,
    context.observed.pods,
    namedPorts,
  );
  return readiness.ready
    ? undefined
    : `Service ${plan.name}: waiting for a Ready proxy pod labelled ${formatSelector(plan.takeover.selector)} (${readiness.why}; the manager gives them status.takeover)`;
}

function listPorts(allocations: readonly Allocation[]): string {
  return allocations.map((allocation) => allocation.proxyPort).join(', ');
}

/** Available's message: the weights, the ports the takeover moves, and a takeover no pod could confirm. */
function describeServing(ports: readonly PortStatus[], context: Context, takeover: TakeoverPlan): string {
  return [
    describeWeights(ports, context),
    // Outside a pod every targetPort moves (status.takeover.movedPorts lists them): said once, with why.
    ...(context.options.inPod !== true
      ? [
          'the proxy runs outside a pod: every targetPort points at a proxy port, and it cannot check that a proxy pod the Services select is Ready',
        ]
      : takeover.status.movedPorts.length === 0
        ? []
        : [`targetPorts moved to proxy ports: ${takeover.status.movedPorts.join(', ')}`]),
  ].join('; ');
}

function describeWeights(ports: readonly PortStatus[], context: Context): string {
  const weights = ports.map(
    (port) =>
      `${port.service}:${port.port}/${port.protocol}=${servedWeight(port)}%` +
      (port.override == null ? '' : ` (--weight; spec ${port.weight}%)`) +
      (servedWeight(port) === askedWeight(port) ? '' : ` (held: asks ${askedWeight(port)}%)`),
  );
  const unmatched = context.options.weightOverrides
    .filter((item) => !ports.some((port) => port.service === item.service && port.port === item.port))
    .map((item) => `--weight ${item.service}:${item.port} matches no port of the release`);
  // Running at 0 % everywhere is legitimate (take over first, weigh later), but never silently.
  const idle =
    ports.length > 0 &&
    ports.every((port) => servedWeight(port) === 0 && askedWeight(port) === 0) &&
    context.observed.release.spec?.steps === undefined
      ? [
          'every port asks 0 %, so the canary gets no traffic: set spec.services[].ports[].config.weight (kubectl canary-l4 set-weight) or spec.steps',
        ]
      : [];
  return [`canary weights ${weights.join(', ')}`, ...unmatched, ...idle].join('; ');
}
