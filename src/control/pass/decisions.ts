// The decisions of a pass worth an Event on the CanaryRelease: each write that moves traffic or
// ends the release, each change of a served weight, and each new failure or wait. Pure: the
// controller sends them (the recorder drops repeats).

import { readStep } from '../../api/steps.ts';
import type { Desired, Step } from './desired.ts';
import { askedWeight, servedWeight } from '../service/l4.ts';
import { portKeyId } from '../service/ports.ts';
import { formatSelector } from '../../api/labels.ts';
import { LABEL_WORKLOAD } from '../../api/names.ts';
import type { CanaryReleaseCondition, CanaryReleaseStatus, ConditionType, PortStatus } from '../../api/status-types.ts';

export interface Decision {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly message: string;
}

/** Waits worth saying as they start; the rest of Progressing is ordinary progress. */
const WAIT_REASONS: ReadonlySet<string> = new Set(['WaitingForReadyPods', 'WaitingForOtherRelease']);

export function stepDecision(step: Step): Decision | undefined {
  switch (step.kind) {
    case 'patchService':
      switch (step.reason) {
        case 'retarget':
          return {
            type: 'Normal',
            reason: 'Retargeted',
            message: `Service ${step.name} now selects the proxy pods${describeTakeover(step)}`,
          };
        case 'repair':
          return {
            type: 'Normal',
            reason: 'DriftRepaired',
            message: `Service ${step.name} was changed by someone else (it selected the app's own pods meanwhile); it selects the proxy pods again${describeTakeover(step)} (their edits are kept for the hand-back)`,
          };
        case 'restore':
          return {
            type: 'Normal',
            reason: 'Restored',
            message: `Service ${step.name} is handed back as its owner left it`,
          };
        case 'adopt':
          return {
            type: 'Normal',
            reason: 'HandedBack',
            message: `Service ${step.name} is handed back, selecting the adopted version's pods`,
          };
        default:
          return undefined;
      }
    case 'createDeployment':
      return {
        type: 'Normal',
        reason: 'CanaryWorkloadCreated',
        message: `Deployment ${step.deployment.metadata?.name} made from ${step.deployment.metadata?.labels?.[LABEL_WORKLOAD]} with the release's patch`,
      };
    case 'patchDeployment':
      return {
        type: 'Normal',
        reason: 'StablePatched',
        message: `Deployment ${step.name} takes the canary's patch; the Services are handed back once it has rolled out`,
      };
    case 'deleteDeployment':
      return { type: 'Normal', reason: 'CanaryWorkloadDeleted', message: `Deployment ${step.name} deleted` };
    case 'writeStatus':
      return step.reason === 'recordTransition' && step.status.transition !== null
        ? {
            type: 'Normal',
            reason: step.status.transition.type === 'Adopted' ? 'Adopting' : 'Deprecating',
            message: step.status.transition.message,
          }
        : undefined;
    default:
      return undefined;
  }
}

/** What changed between the status a pass started from (undefined: the first pass) and the new one. */
export function statusDecisions(before: CanaryReleaseStatus | undefined, after: CanaryReleaseStatus): Decision[] {
  const decisions: Decision[] = [];
  const previous = new Map((before?.ports ?? []).map((port) => [portKeyId(port), port] as const));
  for (const port of after.ports) {
    const was = previous.get(portKeyId(port));
    if (was !== undefined && servedWeight(was) === servedWeight(port)) continue;
    if (servedWeight(port) !== askedWeight(port)) {
      decisions.push({
        type: 'Warning',
        reason: 'WeightHeld',
        message: `${describePort(port)}: canary weight held at ${servedWeight(port)}% (asks ${askedWeight(port)}%): a side has no Ready pod`,
      });
    } else if (was !== undefined) {
      decisions.push({
        type: 'Normal',
        reason: 'WeightChanged',
        message: `${describePort(port)}: canary weight ${servedWeight(was)}% → ${servedWeight(port)}%`,
      });
    }
  }
  const failure = changed(before, after, 'Failure');
  if (failure?.status === 'True') decisions.push({ type: 'Warning', reason: failure.reason, message: failure.message });
  const progressing = changed(before, after, 'Progressing');
  if (progressing?.status === 'True' && WAIT_REASONS.has(progressing.reason)) {
    decisions.push({ type: 'Normal', reason: progressing.reason, message: progressing.message });
  }
  if (after.currentStep !== undefined && before !== undefined && after.currentStep > (before.currentStep ?? 0)) {
    const complete = after.currentStep >= (readStep(after.step)?.count ?? Number.POSITIVE_INFINITY);
    decisions.push({
      type: 'Normal',
      reason: 'StepAdvanced',
      message: complete ? `every step is done: step ${after.step}` : `step ${after.step} begins`,
    });
  }
  if (after.pause != null && after.pause.reason !== before?.pause?.reason)
    decisions.push({ type: 'Normal', reason: 'StepHeld', message: after.pause.reason });
  if (
    after.analysis !== undefined &&
    after.analysis.at !== before?.analysis?.at &&
    after.analysis.verdict === 'Failed'
  ) {
    decisions.push({
      type: 'Warning',
      reason: 'AnalysisIntervalFailed',
      message: `${after.analysis.failures} in a row: ${after.analysis.message}`,
    });
  }
  const moved = (after.takeover?.movedPorts ?? []).filter(
    (item) => !(before?.takeover?.movedPorts ?? []).includes(item),
  );
  if (moved.length > 0) {
    decisions.push({
      type: 'Warning',
      reason: 'TargetPortMoved',
      message: `the takeover moves targetPorts to proxy ports (a re-apply that omits them leaves them there): ${moved.join(', ')}`,
    });
  }
  if (after.phase !== before?.phase && (after.phase === 'Adopted' || after.phase === 'Deprecated')) {
    decisions.push({
      type: 'Normal',
      reason: after.phase,
      message: `the release is over: ${after.transition?.message ?? after.phase}`,
    });
  }
  return decisions;
}

export function decisions(before: Desired | undefined, after: Desired, done: readonly Step[]): Decision[] {
  const ignored = (after.ignored ?? []).map((item): Decision => ({ type: 'Warning', ...item }));
  return [
    ...done.flatMap((step) => stepDecision(step) ?? []),
    ...statusDecisions(before?.status, after.status),
    ...ignored,
  ];
}

/** `: selector app=canary-l4.web-v2; targetPorts 8000, 9100`, as the patch sets them. */
function describeTakeover(step: Extract<Step, { kind: 'patchService' }>): string {
  const selector = step.patch.spec?.selector;
  const set =
    selector === undefined
      ? []
      : Object.entries(selector).filter((entry): entry is [string, string] => entry[1] !== null);
  const ports = step.patch.spec?.ports?.map((port) => String(port.targetPort ?? port.port));
  return [
    set.length === 0 ? '' : `: selector ${formatSelector(Object.fromEntries(set))}`,
    ports === undefined ? '' : `; targetPorts ${ports.join(', ')}`,
  ].join('');
}

function describePort(port: PortStatus): string {
  return `${port.service}:${port.port}/${port.protocol}`;
}

/** The condition of `type` in `after` when its status, reason or message differs from `before`'s. */
function changed(
  before: CanaryReleaseStatus | undefined,
  after: CanaryReleaseStatus,
  type: ConditionType,
): CanaryReleaseCondition | undefined {
  const now = after.conditions.find((item) => item.type === type);
  const was = before?.conditions.find((item) => item.type === type);
  if (now === undefined) return undefined;
  return was !== undefined && was.status === now.status && was.reason === now.reason && was.message === now.message
    ? undefined
    : now;
}
