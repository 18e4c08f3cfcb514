// Adopted and Deprecated, whether requested, automatic or for a deleted release. Order:
// record the transition → hand each original back in ONE patch that also drops the saved original
// → delete the copies → status.phase → drop the finalizer. A crash between any two leaves a state
// the next reconcile finishes: a handed-back Service has no annotation (adopting one again is a
// no-op: remove-then-add operations are idempotent), the
// copies are found by label, and the recorded transition outlives its trigger.

import type { V1Service } from '@kubernetes/client-node';
import { condition, formatTime, type ConditionDraft } from '../../api/conditions.ts';
import {
  deleteCopyStep,
  finalizerStep,
  hasReadyPod,
  makeStatus,
  pointsAtProxy,
  statusStep,
  type Context,
} from '../pass/context.ts';
import { copyName, COPY_ROLES } from '../service/copies.ts';
import type { L4Config } from '../../config/types.ts';
import type { Desired, Step } from '../pass/desired.ts';
import { buildL4Config, gatedWeight } from '../service/l4.ts';
import { originalPatch } from '../service/patches.ts';
import {
  releaseFields,
  saveOriginal,
  type OriginalFields,
  type OriginalState,
  type SavedOriginal,
} from '../service/originals.ts';
import { livePods, selectorMatches } from '../service/selectors.ts';
import { applyOperations, formatSelector } from '../../api/labels.ts';
import { LABEL_TRACK, TRACK_CANARY } from '../../api/names.ts';
import type { CanaryReleaseStatus, PortStatus, TransitionRecord } from '../../api/status-types.ts';
import type { CanaryServiceSpec, TransitionType } from '../../api/spec-types.ts';
import { deleteCanaryWorkloads, planWorkloadStage } from '../workload/transition.ts';

const HANDED_BACK_LATER: ReadonlySet<OriginalState['kind']> = new Set([
  'saved',
  'retargeted',
  'hijacked',
  'lost',
  'unreadable',
]);

export type HandBack =
  | { readonly kind: 'nothing' }
  | { readonly kind: 'patch'; readonly reason: 'restore' | 'adopt'; readonly fields: OriginalFields }
  | { readonly kind: 'blocked'; readonly problem: string }
  /** The hand-back would move the Service from pods that answer to pods that do not (yet). */
  | { readonly kind: 'waiting'; readonly message: string };

/**
 * The fields that give an original Service back. Deprecated: the saved selector and targetPorts.
 * Adopted: the canary selector, computed from the saved selector (never read from the canary copy).
 * A Service whose selector someone else changed keeps their selector, and gets back only the
 * targetPorts that still point at our proxy ports: the change was a hand-over, not drift.
 * A hand-back waits while the pods it would send the Service to have no Ready one and the pods it
 * reaches now do: it never turns a Service that answers into one that does not.
 */
export function handBack(context: Context, name: string, state: OriginalState, type: TransitionType): HandBack {
  const result = handBackFields(context, name, state, type);
  if (result.kind !== 'patch') return result;
  if (type === 'Deprecated') {
    // A rollback must not hand the Service to canary pods that still match it (a canary workload's
    // pods carry every stable label): the canary Deployment is deleted first, then this waits.
    const canary = livePods(context.observed.pods).filter(
      (pod) =>
        pod.metadata?.labels?.[LABEL_TRACK] === TRACK_CANARY &&
        selectorMatches(result.fields.selector, pod.metadata.labels),
    );
    if (canary.length > 0) {
      return {
        kind: 'waiting',
        message: `Service ${name}: canary pods ${canary.map((pod) => pod.metadata?.name).join(', ')} still match its original selector; it is handed back once they are gone`,
      };
    }
  }
  if (hasReadyPod(context, result.fields.selector)) return result;
  const reachesReadyNow = pointsAtProxy(context, name)
    ? COPY_ROLES.some((role) =>
        hasReadyPod(context, context.observed.services.get(copyName(name, role))?.spec?.selector ?? {}),
      )
    : hasReadyPod(context, state.kind === 'missing' ? {} : (state.service.spec?.selector ?? {}));
  if (!reachesReadyNow) return result;
  const side = result.reason === 'adopt' ? 'canary' : 'original';
  return {
    kind: 'waiting',
    message:
      `Service ${name}: the ${side} selector ${formatSelector(result.fields.selector)} matches no Ready pod; ` +
      'its traffic stays where it is until one is Ready',
  };
}

function handBackFields(context: Context, name: string, state: OriginalState, type: TransitionType): HandBack {
  switch (state.kind) {
    case 'missing':
    case 'foreign':
      return { kind: 'nothing' };
    case 'free': {
      // Adopted before the release touched the Service: the canary still becomes the version.
      // Idempotent, as remove-then-add operations are: adopting twice changes nothing.
      const entry = specEntry(context, name);
      if (type !== 'Adopted' || entry === undefined) return { kind: 'nothing' };
      return adopt(context, name, state.service, saveOriginal(state.service, context.name), entry, false);
    }
    case 'lost':
      return {
        kind: 'blocked',
        problem: `Service ${name} selects the proxy but its saved original is gone; set its selector by hand`,
      };
    case 'unreadable':
      return {
        kind: 'blocked',
        problem: `the saved original on Service ${name} is unreadable (${state.error}); repair it by hand`,
      };
    case 'hijacked':
      // The saved targetPorts differ from the live ones only where those are our proxy ports.
      return {
        kind: 'patch',
        reason: 'restore',
        fields: releaseFields(state.service, state.saved, state.service.spec?.selector ?? {}, () => true),
      };
    case 'saved':
    case 'retargeted': {
      const entry = specEntry(context, name);
      const retargeted = state.kind === 'retargeted';
      if (type === 'Adopted' && entry !== undefined)
        return adopt(context, name, state.service, state.saved, entry, retargeted);
      // Not yet retargeted: the Service is as its owner left it; only the annotation goes.
      const selector = retargeted ? state.saved.selector : (state.service.spec?.selector ?? {});
      return {
        kind: 'patch',
        reason: 'restore',
        fields: releaseFields(state.service, state.saved, selector, () => retargeted),
      };
    }
  }
}

export interface HandBackPlan {
  readonly steps: readonly Step[];
  readonly problems: readonly string[];
  /** Hand-backs that wait for a Ready pod (not a failure). */
  readonly waiting: readonly string[];
  /** Services that cannot be handed back yet: their copies and listeners must stay. */
  readonly blocked: ReadonlySet<string>;
}

function specEntry(context: Context, name: string): CanaryServiceSpec | undefined {
  return context.observed.release.spec?.services?.find((item) => item.service === name);
}

/**
 * Adopted: the canary selector becomes the Service's. With workloads, the stable Deployment has
 * become the new version instead, and the Service gets its own selector back.
 */
function adopt(
  context: Context,
  name: string,
  service: V1Service,
  saved: SavedOriginal,
  entry: CanaryServiceSpec,
  retargeted: boolean,
): HandBack {
  const workloads = (context.observed.release.spec?.workloads?.length ?? 0) > 0;
  const selector = workloads ? saved.selector : applyOperations(saved.selector, entry.canaryServiceOperations);
  if (Object.keys(selector).length === 0) {
    return {
      kind: 'blocked',
      problem: `the canary selector of Service ${name} is empty; fix canaryServiceOperations to adopt`,
    };
  }
  return { kind: 'patch', reason: 'adopt', fields: releaseFields(service, saved, selector, () => retargeted) };
}

/** Hand-back steps for some originals, and what blocks the others. */
export function handBackSteps(context: Context, names: readonly string[], type: TransitionType): HandBackPlan {
  const steps: Step[] = [];
  const problems: string[] = [];
  const waiting: string[] = [];
  const blocked = new Set<string>();
  for (const name of names) {
    const state = context.originals.get(name) ?? { kind: 'missing' };
    const result = handBack(context, name, state, type);
    if (result.kind === 'blocked' || result.kind === 'waiting') {
      if (result.kind === 'blocked') problems.push(result.problem);
      else waiting.push(result.message);
      blocked.add(name);
    }
    if (result.kind !== 'patch') continue;
    const service = context.observed.services.get(name);
    const patch = service === undefined ? undefined : originalPatch(service, result.fields);
    if (patch !== undefined) steps.push({ kind: 'patchService', reason: result.reason, name, patch });
  }
  return { steps, problems, waiting, blocked };
}

export function planTransition(context: Context, record: TransitionRecord): Desired {
  const verb = record.type === 'Adopted' ? 'Adopting' : 'Deprecating';
  const ports = servedWhileHandingBack(context, record);
  const l4Config = buildL4Config(
    ports.filter((port) => pointsAtProxy(context, port.service)),
    context.observed.services,
    context.options.listenHost,
  );
  // Kept until handed back: a hijacked Service's restore needs them to tell our targetPorts.
  const notHandedBack = ports.filter((port) =>
    HANDED_BACK_LATER.has(context.originals.get(port.service)?.kind ?? 'missing'),
  );
  const stage = planWorkloadStage(context, record);
  const inProgress = (
    reason: string,
    problems: readonly string[],
    waiting: readonly string[],
    workloads = context.observed.release.status?.workloads,
  ) =>
    makeStatus(
      context,
      verb,
      record,
      {
        Available: condition(false, verb, 'traffic is being handed back to the original Services'),
        Progressing:
          waiting.length === 0
            ? condition(true, verb, record.message)
            : condition(true, reason, `${record.message}; ${waiting.join('; ')}`),
        Failure:
          problems.length === 0 ? rollbackFailure(record) : condition(true, 'CannotRestore', problems.join('; ')),
        Archived: condition(false, verb),
      },
      notHandedBack,
      { workloads },
    );
  // The transition is recorded before its first step (it must outlive its trigger), with the
  // workloads as they are: a stage's news (stablePatched) is written only after its steps.
  const recordStep =
    context.observed.release.status?.transition?.type === record.type
      ? []
      : statusStep(context, inProgress(verb, [], []), 'recordTransition');
  if (!stage.done) {
    const status = inProgress('RollingOutStable', stage.problems, stage.waiting, stage.workloads);
    return {
      mode: 'transition',
      l4Config,
      status,
      steps: [...recordStep, ...stage.steps, ...statusStep(context, status)],
    };
  }
  const handBacks = handBackSteps(context, [...context.originals.keys()], record.type);
  const before = [...recordStep, ...stage.steps, ...handBacks.steps];
  if (handBacks.blocked.size > 0) {
    const status = inProgress('WaitingForReadyPods', handBacks.problems, handBacks.waiting, stage.workloads);
    return { mode: 'transition', l4Config, status, steps: [...before, ...statusStep(context, status)] };
  }
  const grace = planGrace(context, record, verb);
  if (grace !== undefined) {
    return {
      mode: 'transition',
      l4Config: grace.l4Config,
      status: grace.status,
      requeueAfterMs: grace.remainingMs,
      steps: [...before, ...statusStep(context, grace.status)],
    };
  }
  // Adopted: the canary workloads served until now; Deprecated took them away first.
  const deletions: Step[] = [
    ...context.copies.map(deleteCopyStep),
    ...(record.type === 'Adopted' ? deleteCanaryWorkloads(context) : []),
  ];
  const status = archivedStatus(context, record);
  return {
    mode: 'transition',
    l4Config,
    status,
    steps: [...before, ...deletions, ...statusStep(context, status), ...finalizerStep(context, false)],
  };
}

/**
 * The ports as served while the Services are handed back: a rollback (Deprecated) sends the canary
 * no new traffic from the moment it is decided, unless the stable side has no Ready pod.
 */
function servedWhileHandingBack(context: Context, record: TransitionRecord): readonly PortStatus[] {
  if (record.type !== 'Deprecated') return context.recorded;
  const ready = (service: string, role: 'forked' | 'canary') =>
    hasReadyPod(context, context.observed.services.get(copyName(service, role))?.spec?.selector ?? {});
  return context.recorded.map((port) => ({
    ...port,
    served: gatedWeight(0, { stable: ready(port.service, 'forked'), canary: ready(port.service, 'canary') }),
  }));
}

/**
 * Every Service is handed back (or is, once this pass's patches are done). Clients that kube-proxy
 * still routes through the proxy for a moment must find it serving: the listeners, the copies and
 * status.ports stay until the hand-back grace has run out since the hand-back (recorded in status,
 * so a restart neither waits again nor skips it). Undefined once it has run out, or when nothing
 * was ever routed through the proxy.
 */
function planGrace(
  context: Context,
  record: TransitionRecord,
  verb: 'Adopting' | 'Deprecating',
): { l4Config: L4Config; status: CanaryReleaseStatus; remainingMs: number } | undefined {
  const graceMs = context.options.handBackGraceMs;
  if (graceMs <= 0 || context.copies.length === 0) return undefined;
  const now = context.options.now.getTime();
  const handedBackAt = record.handedBackAt ?? context.options.now.toISOString();
  const remainingMs = Date.parse(handedBackAt) + graceMs - now;
  if (remainingMs <= 0) return undefined;
  const status = makeStatus(
    context,
    verb,
    { ...record, handedBackAt },
    {
      Available: condition(false, verb, 'the original Services are handed back'),
      // An absolute time, not a countdown: the status stays the same while the grace runs.
      Progressing: condition(
        true,
        'HandBackGrace',
        `${record.message}; the proxy keeps serving until ` +
          `${formatTime(new Date(Date.parse(handedBackAt) + graceMs))} for clients still routed through it, then the copies go`,
      ),
      Failure: rollbackFailure(record),
      Archived: condition(false, verb),
    },
    context.recorded,
  );
  return {
    l4Config: buildL4Config(context.recorded, context.observed.services, context.options.listenHost),
    status,
    remainingMs,
  };
}

export function archivedStatus(context: Context, record: TransitionRecord): CanaryReleaseStatus {
  return makeStatus(
    context,
    record.type,
    record,
    {
      Available: condition(false, record.type, 'the release is over; the original Services are served directly'),
      Progressing: condition(false, record.type),
      Failure: rollbackFailure(record),
      Archived: condition(true, record.type, record.message),
    },
    [],
  );
}

/** A rollback the analysis decided stays a Failure (reason AnalysisFailed) through the hand-back and after. */
function rollbackFailure(record: TransitionRecord): ConditionDraft {
  return record.reason === 'AnalysisFailed'
    ? condition(true, 'AnalysisFailed', record.message)
    : condition(false, 'None');
}

export function describeSelectorChange(name: string, state: Extract<OriginalState, { kind: 'hijacked' }>): string {
  return `Service ${name} selector was changed by someone else to ${formatSelector(state.service.spec?.selector ?? {})}`;
}
