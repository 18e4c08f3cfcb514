// What every phase of reconcile reads: the observed world sorted once, and the status helpers.

import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { sameJson } from '../../kube/canonical.ts';
import { buildConditions, condition, type ConditionDraft, type ConditionDrafts } from '../../api/conditions.ts';
import { copySource, isCopyOf } from '../service/copies.ts';
import { achievedWith } from '../progress/achieved-split.ts';
import { judge } from '../progress/analysis/verdict.ts';
import type { Evidence } from '../progress/analysis/evidence.ts';
import { achievedAtStep } from '../progress/step-split.ts';
import { extendHistory } from '../progress/history.ts';
import { mirrorCountsWith } from '../progress/mirror-counts.ts';
import type { Observed, ReconcileOptions, Step } from './desired.ts';
import { portKeyId } from '../service/ports.ts';
import { beganInStep, type StepPlan } from '../progress/steps.ts';
import { affinityListeners, formatWeights } from '../service/l4.ts';
import { classifyOriginal, parseSaved, portIdOf, type OriginalState, type ProxyPortsOf } from '../service/originals.ts';
import { applyMergePatch, finalizerPatch } from '../service/patches.ts';
import { disagreeingReplicas } from './replicas.ts';
import { readyPods, selectorMatches } from '../service/selectors.ts';
import { selectsProxy } from '../service/takeover-selector.ts';
import { ANNOTATION_ORIGINAL, FINALIZER, type Labels } from '../../api/names.ts';
import type {
  AchievedSplit,
  AnalysisStatus,
  CanaryReleaseStatus,
  Phase,
  MirrorCounts,
  PortStatus,
  TakeoverStatus,
  TransitionRecord,
  WorkloadStatus,
} from '../../api/status-types.ts';
import type { CanaryRelease } from '../../api/release-types.ts';

export interface Context {
  readonly observed: Observed;
  readonly options: ReconcileOptions;
  readonly name: string;
  readonly generation: number;
  readonly deleting: boolean;
  /** Every original Service this release may have touched: named by the spec, annotated by this
   * release, with proxy ports in its status, or the source of one of its copies. Not every Service
   * that selects the proxy: the proxy's own (metrics-service.yaml) was never ours to hand back. */
  readonly originals: ReadonlyMap<string, OriginalState>;
  /** The copies this release made, found by label. */
  readonly copies: readonly V1Service[];
  /** status.ports as observed. */
  readonly recorded: readonly PortStatus[];
  /** Pods that are endpoints now: traffic only goes to a side that has one. */
  readonly ready: readonly V1Pod[];
  /** What this pass makes of the latest evidence (status.analysis, the achieved split). */
  readonly judged: Judged;
}

export interface Judged {
  /** status.analysis: judged now (new evidence), else as recorded. */
  readonly analysis: AnalysisStatus | undefined;
  /** Set when this pass counts a new interval. */
  readonly countedAt: string | undefined;
  /** ports[].achieved, by port key: brought up to date with new evidence, else as recorded. */
  readonly achieved: ReadonlyMap<string, AchievedSplit>;
  /** ports[].mirror, by port key, likewise. */
  readonly mirror: ReadonlyMap<string, MirrorCounts>;
}

/** New evidence (an interval not counted yet) is counted into the achieved split and, with spec.analysis, judged. */
function judgeEvidence(
  release: CanaryRelease,
  recorded: readonly PortStatus[],
  evidence: Evidence | undefined,
): Judged {
  const recordedAchieved = new Map(
    recorded.flatMap((port) => (port.achieved === undefined ? [] : [[portKeyId(port), port.achieved] as const])),
  );
  const countedAt = release.status?.countedAt;
  if (evidence === undefined || (countedAt !== undefined && Date.parse(evidence.at) <= Date.parse(countedAt))) {
    return {
      analysis: release.status?.analysis,
      countedAt: undefined,
      achieved: recordedAchieved,
      mirror: mirrorCountsWith(undefined, recorded),
    };
  }
  // Once a transition is recorded the verdict that decided it (or the last before it) stands.
  const spec = release.status?.transition == null ? release.spec?.analysis : undefined;
  return {
    analysis:
      spec === undefined
        ? release.status?.analysis
        : judge(evidence, spec, recorded, release.status?.analysis, affinityListeners(release.spec)),
    countedAt: evidence.at,
    achieved: achievedWith(evidence, recorded),
    mirror: mirrorCountsWith(evidence, recorded),
  };
}

export function observe(observed: Observed, options: ReconcileOptions): Context {
  const { release, services } = observed;
  const name = release.metadata.name;
  const copies = [...services.values()].filter((service) => isCopyOf(service, name));
  const names = new Set<string>((release.spec?.services ?? []).map((entry) => entry.service));
  for (const [serviceName, service] of services) {
    if (savedBy(service) === name) names.add(serviceName);
  }
  // A Service is retargeted only once its proxy ports are in status, and they stay there while it
  // selects the proxy: this finds a retargeted Service whose saved original someone removed.
  for (const port of release.status?.ports ?? []) names.add(port.service);
  for (const copy of copies) {
    const source = copySource(copy);
    if (source !== undefined) names.add(source);
  }
  const recorded = release.status?.ports ?? [];
  const proxyPortsOf = (service: string): ProxyPortsOf =>
    new Map(
      recorded
        .filter((port) => port.service === service)
        .map((port) => [
          port.proxyPort,
          { id: portIdOf(port.port, port.protocol), targetPortKept: port.targetPortKept === true },
        ]),
    );
  const originals = new Map(
    [...names]
      .sort()
      .map(
        (serviceName) =>
          [
            serviceName,
            classifyOriginal(services.get(serviceName), name, options.proxySelector, proxyPortsOf(serviceName)),
          ] as const,
      ),
  );
  return {
    observed,
    options,
    name,
    generation: release.metadata.generation ?? 0,
    deleting: release.metadata.deletionTimestamp != null,
    originals,
    copies,
    recorded,
    ready: readyPods(observed.pods),
    judged: judgeEvidence(release, recorded, observed.evidence),
  };
}

function savedBy(service: V1Service): string | undefined {
  const annotation = service.metadata?.annotations?.[ANNOTATION_ORIGINAL];
  if (annotation === undefined) return undefined;
  const parsed = parseSaved(annotation);
  return parsed.ok ? parsed.saved.release : undefined;
}

/** The Service sends its traffic to the proxy (or, taken over by a 0.2 proxy, will again once its drift is repaired). */
export function pointsAtProxy(context: Context, service: string): boolean {
  return selectsProxy(context.observed.services.get(service), context.name, context.options.proxySelector);
}

/**
 * Why spec.transition cannot take effect while another transition is recorded (the recorded one
 * wins: it may have outlived its trigger), or undefined when it can or asks nothing.
 */
export function ignoredTransition(release: CanaryRelease): string | undefined {
  const recorded = release.status?.transition;
  const asked = release.spec?.transition;
  if (recorded == null || asked === undefined || asked === '' || asked === recorded.type) return undefined;
  return (
    `spec.transition ${JSON.stringify(asked)} is ignored: the transition ${recorded.type} (${recorded.reason}) was recorded first and wins; ` +
    `set spec.transition back to ${recorded.type} so that spec and status agree`
  );
}

/** Whether some Ready pod matches the selector. */
export function hasReadyPod(context: Context, selector: Labels): boolean {
  return context.ready.some((pod) => selectorMatches(selector, pod.metadata?.labels));
}

/**
 * The status of a pass. The Failure condition also carries what is wrong outside the release's own
 * spec: the last API error of the controller, and replicas serving with other --weight flags. Ready
 * is derived from the others, so the columns and the conditions can never disagree.
 */
export function makeStatus(
  context: Context,
  phase: Phase,
  transition: TransitionRecord | null,
  drafts: Omit<ConditionDrafts, 'Ready'>,
  ports: readonly PortStatus[],
  extra: { workloads?: readonly WorkloadStatus[] | undefined; steps?: StepPlan; takeover?: TakeoverStatus } = {},
): CanaryReleaseStatus {
  const workloads = 'workloads' in extra ? extra.workloads : context.observed.release.status?.workloads;
  // Kept as recorded outside Running: the proxy pods keep their labels while they still serve.
  const takeover =
    extra.takeover ??
    (phase === 'Adopted' || phase === 'Deprecated' ? undefined : context.observed.release.status?.takeover);
  const outside = [
    ...(context.observed.apiError === undefined
      ? []
      : [{ reason: 'APIError', message: `the last API request failed: ${context.observed.apiError}` }]),
    ...disagreeingReplicas(context.observed.pods, context.options.proxySelector, context.options.weightOverrides).map(
      (message) => ({ reason: 'ReplicasDisagree', message }),
    ),
  ];
  const ignored = ignoredTransition(context.observed.release);
  const own =
    ignored === undefined
      ? drafts
      : {
          ...drafts,
          Progressing: {
            ...drafts.Progressing,
            message: [drafts.Progressing.message, ignored].filter((text) => text !== '').join('; '),
          },
        };
  const failure = outside.reduce(
    (draft: ConditionDraft, extra) =>
      draft.status === 'True'
        ? // biome-ignore lint/performance/noAccumulatingSpread: a condition per disagreeing replica, a handful at most
          { ...draft, message: `${draft.message}; ${extra.message}` }
        : condition(true, extra.reason, extra.message),
    own.Failure,
  );
  const all = { ...own, Failure: failure, Ready: readiness(phase, { ...own, Failure: failure }) };
  const conditions = buildConditions(
    context.observed.release.status?.conditions,
    all,
    context.generation,
    context.options.now,
  );
  const { judged } = context;
  const steps = extra.steps;
  const recordedStep = context.observed.release.status?.currentStep;
  // Without a plan of steps this pass the step in force is the recorded one.
  const stepInForce = steps?.currentStep ?? recordedStep;
  const { evidence } = context.observed;
  const stepStartedAt = context.observed.release.status?.stepStartedAt;
  const countedInStep =
    judged.countedAt !== undefined &&
    evidence !== undefined &&
    stepStartedAt !== undefined &&
    beganInStep(evidence, stepStartedAt);
  const counted = ports.map((port) => {
    const key = portKeyId(port);
    const achieved = judged.achieved.get(key);
    const recorded = context.recorded.find((other) => portKeyId(other) === key);
    const achievedStep =
      stepInForce === undefined || (context.observed.release.spec?.steps ?? []).length === 0
        ? undefined
        : achievedAtStep(
            { recordedStep: recorded?.achievedStep, before: recorded?.achieved, after: achieved },
            recordedStep,
            stepInForce,
            countedInStep,
          );
    const mirror = judged.mirror.get(key);
    return {
      ...port,
      ...(achieved === undefined ? {} : { achieved }),
      ...(achievedStep === undefined ? {} : { achievedStep }),
      ...(mirror === undefined ? {} : { mirror }),
    };
  });
  const status = {
    phase,
    observedGeneration: context.generation,
    transition,
    conditions,
    ports: counted,
    weights: formatWeights(ports),
    ...(workloads === undefined ? {} : { workloads }),
    ...(takeover === undefined ? {} : { takeover }),
    ...(judged.analysis === undefined ? {} : { analysis: judged.analysis }),
    ...(judged.countedAt === undefined ? {} : { countedAt: judged.countedAt }),
    // Without a plan of steps this pass (a hold, a transition) the step stays as recorded, but no pause runs.
    ...(steps === undefined
      ? context.observed.release.status?.step === undefined
        ? {}
        : { pause: null }
      : {
          currentStep: steps.currentStep,
          step: steps.step,
          pause: steps.pause,
          ...(steps.stepStartedAt === undefined ? {} : { stepStartedAt: steps.stepStartedAt }),
        }),
  };
  const history = extendHistory({
    recorded: context.observed.release.status?.history,
    recordedPorts: context.recorded,
    recordedStep,
    promotedStep: context.observed.release.spec?.promotedStep,
    status,
    counted: judged.countedAt === undefined || evidence === undefined ? undefined : evidence,
    now: context.options.now,
  });
  return { ...status, history };
}

/** Ready only while running as asked: retargeted, nothing failing, nothing waiting or held. */
function readiness(phase: Phase, drafts: Omit<ConditionDrafts, 'Ready'>): ConditionDraft {
  if (phase !== 'Running') {
    const cause = drafts.Failure.status === 'True' ? drafts.Failure : drafts.Progressing;
    return condition(false, phase, cause.message);
  }
  if (drafts.Failure.status === 'True') return condition(false, drafts.Failure.reason, drafts.Failure.message);
  if (drafts.Available.status !== 'True') return condition(false, drafts.Available.reason, drafts.Available.message);
  if (drafts.Progressing.status === 'True')
    return condition(false, drafts.Progressing.reason, drafts.Progressing.message);
  return condition(true, 'Serving', drafts.Available.message);
}

/** A status write, unless the observed status is already exactly this one. */
export function statusStep(
  context: Context,
  status: CanaryReleaseStatus,
  reason: 'recordTransition' | 'updateStatus' = 'updateStatus',
): Step[] {
  return statusWritten(context.observed.release, status) ? [] : [{ kind: 'writeStatus', reason, status }];
}

/** Whether the release already holds `status` as a merge patch of it would leave it: a null field
 * (`transition: null`) is stored as absent, so comparing the objects as they are would write forever. */
export function statusWritten(release: CanaryRelease, status: CanaryReleaseStatus): boolean {
  const observed = release.status ?? {};
  return sameJson(observed, applyMergePatch(observed, status));
}

export function deleteCopyStep(copy: V1Service): Step {
  return { kind: 'deleteService', reason: 'deleteCopy', name: copy.metadata?.name ?? '', uid: copy.metadata?.uid };
}

export function finalizerStep(context: Context, wanted: boolean): Step[] {
  const patch = finalizerPatch(context.observed.release, FINALIZER, wanted);
  return patch === undefined
    ? []
    : [{ kind: 'patchRelease', reason: wanted ? 'addFinalizer' : 'removeFinalizer', patch }];
}
