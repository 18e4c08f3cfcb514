// What Adopted and Deprecated do to the workloads of spec.workloads, before the Services are
// handed back:
// - Adopted: once the canary has an available pod, the patch goes onto the stable Deployment (its
//   labels excepted: they are the pods' identity, and a Deployment's selector cannot change), and
//   the hand-back waits for that rollout; meanwhile the forked copy follows the stable ReplicaSet
//   with the most Ready pods, so it never selects none. The canary Deployment goes with the copies.
// - Deprecated: the canary Deployment goes first; the hand-back then waits until no canary pod
//   matches the restored selector (they carry every stable label unless the patch relabelled
//   them), so a rollback sends the canary nothing more.

import type { V1Deployment } from '@kubernetes/client-node';
import { sameJson } from '../../kube/canonical.ts';
import type { Context } from '../pass/context.ts';
import { copyName, desiredCopy } from '../service/copies.ts';
import type { Step } from '../pass/desired.ts';
import { copyPatch } from '../service/patches.ts';
import { selectorMatches } from '../service/selectors.ts';
import { applyOperations } from '../../api/labels.ts';
import { patchTemplate } from './strategic-merge.ts';
import { LABEL_TEMPLATE_HASH } from '../../api/names.ts';
import type { TransitionRecord, WorkloadStatus } from '../../api/status-types.ts';
import type { WorkloadSpec } from '../../api/spec-types.ts';
import {
  isCanaryWorkloadOf,
  patchedTemplate,
  readyCount,
  replicaSetsOf,
  rolledOut,
  rolloutStalled,
  stableSideSelector,
  templateHashOf,
} from './workloads.ts';

export interface WorkloadStage {
  readonly steps: readonly Step[];
  readonly waiting: readonly string[];
  readonly problems: readonly string[];
  /** status.workloads as this stage leaves them. */
  readonly workloads: readonly WorkloadStatus[] | undefined;
  /** The Services may be handed back now. */
  readonly done: boolean;
}

export function planWorkloadStage(context: Context, record: TransitionRecord): WorkloadStage {
  const recorded = context.observed.release.status?.workloads;
  if (recorded === undefined || recorded.length === 0)
    return { steps: [], waiting: [], problems: [], workloads: recorded, done: true };
  return record.type === 'Deprecated' ? deprecate(context, recorded) : adopt(context, recorded);
}

function withReady(context: Context, recorded: readonly WorkloadStatus[]): WorkloadStatus[] {
  return recorded.map((item) => ({ ...item, canaryReady: readyCount(context.observed.deployments.get(item.canary)) }));
}

/** Deletes the release's canary Deployments not already on their way out. */
export function deleteCanaryWorkloads(context: Context): Step[] {
  return [...context.observed.deployments.values()]
    .filter(
      (deployment) => isCanaryWorkloadOf(deployment, context.name) && deployment.metadata?.deletionTimestamp == null,
    )
    .map((deployment) => ({
      kind: 'deleteDeployment',
      reason: 'deleteCanaryWorkload',
      name: deployment.metadata?.name ?? '',
      uid: deployment.metadata?.uid,
    }));
}

function deprecate(context: Context, recorded: readonly WorkloadStatus[]): WorkloadStage {
  return {
    steps: deleteCanaryWorkloads(context),
    waiting: [],
    problems: [],
    workloads: withReady(context, recorded),
    done: true,
  };
}

function adopt(context: Context, recorded: readonly WorkloadStatus[]): WorkloadStage {
  const steps: Step[] = [];
  const waiting: string[] = [];
  const problems: string[] = [];
  const workloads = withReady(context, recorded).map((item): WorkloadStatus => {
    const spec = context.observed.release.spec?.workloads?.find((entry) => entry.name === item.name);
    const stable = context.observed.deployments.get(item.name);
    if (spec === undefined || stable === undefined) {
      problems.push(
        `Deployment ${item.name} ${stable === undefined ? 'is gone' : 'is no longer in spec.workloads'}: it cannot take the canary's patch; restore it, or delete the CanaryRelease`,
      );
      return item;
    }
    if (item.stablePatched !== true) {
      if ((context.observed.deployments.get(item.canary)?.status?.availableReplicas ?? 0) === 0) {
        waiting.push(
          `Deployment ${item.canary} has no available pod; the stable Deployment ${item.name} takes the patch once it has`,
        );
        return item;
      }
      // A patch edited since into one that leaves no valid pod template is not put on the stable Deployment.
      const invalid: string[] = [];
      patchedTemplate(
        stable,
        spec,
        `spec.workloads[${context.observed.release.spec?.workloads?.indexOf(spec) ?? 0}]`,
        invalid,
      );
      if (invalid.length > 0) {
        problems.push(
          ...invalid.map((problem) => `${problem}; Deployment ${item.name} takes no patch until it is fixed`),
        );
        return item;
      }
      // Already on it (a crash after the patch, before status said so): nothing to send again.
      const patch = withoutLabels(spec);
      if (!appliesNothing(stable, patch))
        steps.push({
          kind: 'patchDeployment',
          reason: 'adoptStable',
          name: item.name,
          patch: { spec: { template: patch } },
        });
      waiting.push(
        `Deployment ${item.name} takes the canary's patch; the Services are handed back once it has rolled out`,
      );
      return { ...item, stablePatched: true };
    }
    steps.push(...forkedRepins(context, stable, item));
    if (!rolledOut(stable)) {
      const stalled = rolloutStalled(stable);
      if (stalled !== undefined)
        problems.push(
          `the rollout of Deployment ${item.name} is stuck (${stalled}); fix it (kubectl rollout status deploy/${item.name}) and the adoption goes on`,
        );
      else
        waiting.push(
          `rolling out Deployment ${item.name}: ${stable.status?.updatedReplicas ?? 0}/${stable.spec?.replicas ?? 1} updated, ${stable.status?.availableReplicas ?? 0} available`,
        );
    }
    return item;
  });
  return { steps, waiting, problems, workloads, done: waiting.length === 0 && problems.length === 0 };
}

/** Whether the patch would change nothing of the live template (robust to the apiserver's defaults). */
function appliesNothing(stable: V1Deployment, patch: unknown): boolean {
  try {
    return sameJson(patchTemplate(stable.spec?.template ?? {}, patch), stable.spec?.template ?? {});
  } catch {
    return false;
  }
}

/** The patch for the stable Deployment: the canary's, without the labels (the pods' identity). */
function withoutLabels(spec: WorkloadSpec): unknown {
  const patch = (spec.patch ?? {}) as { metadata?: Record<string, unknown> };
  if (patch.metadata === undefined) return patch;
  const { labels: _labels, ...metadata } = patch.metadata;
  return { ...patch, metadata };
}

/** The hash of the stable ReplicaSet with the most Ready pods (the newer on a tie). */
function busiestHash(stable: V1Deployment, context: Context): string | undefined {
  const { ready } = context;
  let best: { hash: string; count: number; revision: number } | undefined;
  for (const replicaSet of replicaSetsOf(stable, context.observed.replicaSets)) {
    const hash = templateHashOf(replicaSet);
    if (hash === undefined) continue;
    const count = ready.filter((pod) => pod.metadata?.labels?.[LABEL_TEMPLATE_HASH] === hash).length;
    const revision = Number(replicaSet.metadata?.annotations?.['deployment.kubernetes.io/revision'] ?? 0);
    if (best === undefined || count > best.count || (count === best.count && revision > best.revision))
      best = { hash, count, revision };
  }
  return best?.hash;
}

/** While the stable Deployment rolls, its forked copies follow the ReplicaSet that has the most Ready pods. */
function forkedRepins(context: Context, stable: V1Deployment, item: WorkloadStatus): Step[] {
  const hash = busiestHash(stable, context) ?? item.stableHash;
  return [...context.originals].flatMap(([name, state]): Step[] => {
    if (state.kind !== 'retargeted' || !selectorMatches(state.saved.selector, stable.spec?.template?.metadata?.labels))
      return [];
    const live = context.observed.services.get(copyName(name, 'forked'));
    const entry = context.observed.release.spec?.services?.find((service) => service.service === name);
    if (live === undefined) return [];
    const selector = applyOperations(stableSideSelector(state.saved.selector, hash), entry?.forkedServiceOperations);
    const patch = copyPatch(live, desiredCopy(context.observed.release, name, state.saved, 'forked', selector));
    return patch === undefined
      ? []
      : [{ kind: 'patchService', reason: 'updateCopy', name: copyName(name, 'forked'), patch }];
  });
}
