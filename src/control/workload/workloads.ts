// Managed canary workloads (spec.workloads): for each stable Deployment, the canary Deployment
// `<name>-canary` the release keeps — the stable pod template with the patch applied and the label
// `canary-l4.io/track: canary`, owned by the release — and the pod-template-hash of the stable
// pods, which pins the forked copy to them (canary pods carry every stable label otherwise). Pure.

import type { V1Deployment, V1PodTemplateSpec, V1ReplicaSet } from '@kubernetes/client-node';
import { canonicalDigest, sameJson } from '../../kube/canonical.ts';
import { labelProblems } from '../../api/labels.ts';
import { podTemplateProblems } from '../../api/validate.ts';
import { addedItemProblems } from './added-items.ts';
import { mergeTemplate, PatchProblem, type UnmatchedItem } from './strategic-merge.ts';
import {
  ANNOTATION_SPEC_HASH,
  API_VERSION,
  KIND,
  LABEL_RELEASE,
  LABEL_TEMPLATE_HASH,
  LABEL_TRACK,
  LABEL_WORKLOAD,
  TRACK_CANARY,
  type Labels,
} from '../../api/names.ts';
import type { CanaryRelease } from '../../api/release-types.ts';
import type { WorkloadSpec } from '../../api/spec-types.ts';
import type { WorkloadStatus } from '../../api/status-types.ts';

export interface WorkloadPlan {
  readonly spec: WorkloadSpec;
  /** `spec.workloads[i]`, for messages. */
  readonly at: string;
  readonly stable: V1Deployment;
  /** The stable pods' pod-template-hash: as recorded when the release began, else the current one. */
  readonly stableHash: string;
  /** The stable template's labels, which the Service selectors were written for. */
  readonly stableLabels: Labels;
  /** The canary template's labels (patched, plus the track label). */
  readonly canaryLabels: Labels;
  /** The canary Deployment as the release wants it. */
  readonly canary: V1Deployment;
}

export type WorkloadsPlan =
  | { readonly ok: true; readonly plans: readonly WorkloadPlan[] }
  | { readonly ok: false; readonly problems: readonly string[]; readonly waiting: readonly string[] };

function canaryDeploymentName(stable: string): string {
  return `${stable}-canary`;
}

/** Whether a Deployment is the canary workload this release made. */
export function isCanaryWorkloadOf(deployment: V1Deployment, release: string): boolean {
  return (
    deployment.metadata?.labels?.[LABEL_RELEASE] === release && deployment.metadata.labels[LABEL_WORKLOAD] !== undefined
  );
}

function withoutHash(template: V1PodTemplateSpec | undefined): unknown {
  const labels = { ...template?.metadata?.labels };
  delete labels[LABEL_TEMPLATE_HASH];
  return { ...template, metadata: { ...template?.metadata, labels } };
}

function ownedBy(replicaSet: V1ReplicaSet, deployment: V1Deployment): boolean {
  return replicaSet.metadata?.ownerReferences?.some((owner) => owner.uid === deployment.metadata?.uid) === true;
}

export function templateHashOf(replicaSet: V1ReplicaSet | undefined): string | undefined {
  return replicaSet?.metadata?.labels?.[LABEL_TEMPLATE_HASH];
}

/** The ReplicaSet of the Deployment's current template (its "new" one, as the Deployment controller tells). */
function currentReplicaSet(deployment: V1Deployment, replicaSets: readonly V1ReplicaSet[]): V1ReplicaSet | undefined {
  return replicaSets.find(
    (replicaSet) =>
      ownedBy(replicaSet, deployment) &&
      sameJson(withoutHash(replicaSet.spec?.template), withoutHash(deployment.spec?.template)),
  );
}

/** The Deployment's ReplicaSets, by hash. */
export function replicaSetsOf(deployment: V1Deployment, replicaSets: readonly V1ReplicaSet[]): V1ReplicaSet[] {
  return replicaSets.filter((replicaSet) => ownedBy(replicaSet, deployment));
}

/** Whether the Deployment has rolled out its current template: every replica updated and available. */
export function rolledOut(deployment: V1Deployment): boolean {
  const wanted = deployment.spec?.replicas ?? 1;
  const status = deployment.status;
  return (
    (status?.observedGeneration ?? 0) >= (deployment.metadata?.generation ?? 0) &&
    (status?.updatedReplicas ?? 0) === wanted &&
    (status?.availableReplicas ?? 0) === wanted &&
    (status?.replicas ?? 0) === wanted
  );
}

/** The Deployment's own verdict on a stuck rollout (progressDeadlineSeconds passed), if any. */
export function rolloutStalled(deployment: V1Deployment): string | undefined {
  const progressing = deployment.status?.conditions?.find((condition) => condition.type === 'Progressing');
  return progressing?.status === 'False' && progressing.reason === 'ProgressDeadlineExceeded'
    ? (progressing.message ?? 'ProgressDeadlineExceeded')
    : undefined;
}

export function readyCount(deployment: V1Deployment | undefined): string {
  return `${deployment?.status?.availableReplicas ?? 0}/${deployment?.spec?.replicas ?? 0}`;
}

/**
 * The stable Deployment's pod template with the workload's patch applied, or undefined with the
 * problems (at `at`.patch) when the patch cannot apply, adds or deletes an item it likely did not
 * mean to (added-items.ts), or leaves no valid pod template for a Deployment with the stable one's
 * selector. What `kubectl canary-l4 plan` shows too.
 */
export function patchedTemplate(
  stable: V1Deployment,
  spec: WorkloadSpec,
  at: string,
  problems: string[],
): V1PodTemplateSpec | undefined {
  let merged: { template: V1PodTemplateSpec; unmatched: readonly UnmatchedItem[] };
  try {
    merged = mergeTemplate(stable.spec?.template ?? {}, spec.patch ?? {});
  } catch (err) {
    if (!(err instanceof PatchProblem)) throw err;
    problems.push(`${at}.patch: ${err.message}`);
    return undefined;
  }
  const { template, unmatched } = merged;
  const found = [
    ...addedItemProblems(unmatched, spec.adds, at),
    ...podTemplateProblems(template, stable.spec?.selector?.matchLabels ?? {}, `${at}.patch`),
  ];
  problems.push(...found);
  return found.length === 0 ? template : undefined;
}

/**
 * The workloads of the spec, each with its stable Deployment and the canary Deployment it asks for;
 * or the problems (fix the spec) and waits (the stable Deployment has no current ReplicaSet yet).
 */
export function planWorkloads(
  release: CanaryRelease,
  deployments: ReadonlyMap<string, V1Deployment>,
  replicaSets: readonly V1ReplicaSet[],
): WorkloadsPlan {
  const problems: string[] = [];
  const waiting: string[] = [];
  const plans: WorkloadPlan[] = [];
  const seen = new Set<string>();
  const recorded = release.status?.workloads ?? [];
  (release.spec?.workloads ?? []).forEach((spec, index) => {
    const at = `spec.workloads[${index}]`;
    const before = problems.length;
    // The spec's own problems (kind, name, replicas) are validate.ts's; a workload that has them is not planned.
    if (spec.kind !== undefined && spec.kind !== 'Deployment') return;
    if (seen.has(spec.name)) return;
    seen.add(spec.name);
    const replicas = spec.replicas ?? 1;
    const stable = deployments.get(spec.name);
    if (stable === undefined) {
      problems.push(`${at}.name: Deployment ${spec.name} not found in the namespace`);
      return;
    }
    const existing = deployments.get(canaryDeploymentName(spec.name));
    if (existing !== undefined && !isCanaryWorkloadOf(existing, release.metadata.name)) {
      problems.push(
        `${at}: Deployment ${canaryDeploymentName(spec.name)} exists and is not the canary this release made; rename or remove it`,
      );
    }
    const template = patchedTemplate(stable, spec, at, problems);
    if (template === undefined) return;
    const canaryLabels: Record<string, string> = { ...template.metadata?.labels, [LABEL_TRACK]: TRACK_CANARY };
    delete canaryLabels[LABEL_TEMPLATE_HASH];
    for (const problem of labelProblems(canaryLabels)) problems.push(`${at}.patch.metadata.labels: ${problem}`);
    if (canaryLabels[LABEL_RELEASE] !== undefined) {
      problems.push(
        `${at}.patch.metadata.labels: ${LABEL_RELEASE} is the proxy pods' label; canary pods must not carry it`,
      );
    }
    const stableHash =
      recorded.find((item) => item.name === spec.name)?.stableHash ??
      templateHashOf(currentReplicaSet(stable, replicaSets));
    if (problems.length > before) return;
    if (stableHash === undefined) {
      waiting.push(
        `Deployment ${spec.name} has no ReplicaSet for its current template yet; the release starts once it has`,
      );
      return;
    }
    plans.push({
      spec,
      at,
      stable,
      stableHash,
      canaryLabels,
      stableLabels: stable.spec?.template?.metadata?.labels ?? {},
      canary: desiredCanary(
        release,
        stable,
        { ...template, metadata: { ...template.metadata, labels: canaryLabels } },
        replicas,
      ),
    });
  });
  return problems.length === 0 && waiting.length === 0 ? { ok: true, plans } : { ok: false, problems, waiting };
}

/**
 * The canary Deployment: the stable one's selector with the patched labels' values and the track
 * label (a Deployment's selector must match its template), the patched template, `replicas`.
 */
function desiredCanary(
  release: CanaryRelease,
  stable: V1Deployment,
  template: V1PodTemplateSpec,
  replicas: number,
): V1Deployment {
  const stableSelector = stable.spec?.selector;
  const labels = template.metadata?.labels ?? {};
  const matchLabels = Object.fromEntries(
    Object.keys(stableSelector?.matchLabels ?? {}).map((key) => [
      key,
      labels[key] ?? stableSelector?.matchLabels?.[key] ?? '',
    ]),
  );
  const spec = {
    replicas,
    selector: { ...stableSelector, matchLabels: { ...matchLabels, [LABEL_TRACK]: TRACK_CANARY } },
    template,
    ...(stable.spec?.strategy === undefined ? {} : { strategy: stable.spec.strategy }),
    ...(stable.spec?.minReadySeconds === undefined ? {} : { minReadySeconds: stable.spec.minReadySeconds }),
    ...(stable.spec?.progressDeadlineSeconds === undefined
      ? {}
      : { progressDeadlineSeconds: stable.spec.progressDeadlineSeconds }),
  };
  const { name, namespace, uid } = release.metadata;
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {
      name: canaryDeploymentName(stable.metadata?.name ?? ''),
      ...(namespace === undefined ? {} : { namespace }),
      labels: { [LABEL_RELEASE]: name, [LABEL_WORKLOAD]: stable.metadata?.name ?? '' },
      annotations: { [ANNOTATION_SPEC_HASH]: canonicalDigest(spec) },
      ownerReferences: [{ apiVersion: API_VERSION, kind: KIND, name, uid, controller: true }],
    },
    spec,
  };
}

/** The canary Deployment needs writing: its spec hash differs (an update) or its selector, which is immutable (delete, then create). */
export function canaryDrift(live: V1Deployment, desired: V1Deployment): 'none' | 'update' | 'recreate' {
  if (!sameJson(live.spec?.selector, desired.spec?.selector)) return 'recreate';
  return live.metadata?.annotations?.[ANNOTATION_SPEC_HASH] === desired.metadata?.annotations?.[ANNOTATION_SPEC_HASH]
    ? 'none'
    : 'update';
}

/**
 * The Service selector for the canary side: the original's, each key taking the canary template's
 * value where the patch relabelled it (so the canary pods match), plus the track label.
 */
export function canarySideSelector(original: Labels, workload: WorkloadPlan): Labels {
  const relabelled = Object.fromEntries(
    Object.entries(original).map(([key, value]) => [key, workload.canaryLabels[key] ?? value]),
  );
  return { ...relabelled, [LABEL_TRACK]: TRACK_CANARY };
}

/** The Service selector for the stable side: the original's, pinned to the stable pods' hash. */
export function stableSideSelector(original: Labels, hash: string): Labels {
  return { ...original, [LABEL_TEMPLATE_HASH]: hash };
}

/**
 * What changed a stable Deployment under a running release, if anything did: its template is no
 * longer the one whose pods the forked copy is pinned to (a rollout underneath), or it is gone.
 */
export function stableChanged(
  release: CanaryRelease,
  deployments: ReadonlyMap<string, V1Deployment>,
  replicaSets: readonly V1ReplicaSet[],
): string | undefined {
  for (const recorded of release.status?.workloads ?? []) {
    const stable = deployments.get(recorded.name);
    if (stable === undefined) return `the stable Deployment ${recorded.name} was deleted`;
    const pinned = replicaSetsOf(stable, replicaSets).find(
      (replicaSet) => templateHashOf(replicaSet) === recorded.stableHash,
    );
    if (pinned === undefined || !sameJson(withoutHash(pinned.spec?.template), withoutHash(stable.spec?.template))) {
      const now = templateHashOf(currentReplicaSet(stable, replicaSets));
      return (
        `the stable Deployment ${recorded.name} was changed during the release (pod-template-hash ${recorded.stableHash} → ${now ?? 'a new one'}); ` +
        'its new pods are not what the canary was compared with'
      );
    }
  }
  return undefined;
}

export function workloadStatuses(
  plans: readonly WorkloadPlan[],
  deployments: ReadonlyMap<string, V1Deployment>,
  recorded: readonly WorkloadStatus[],
): WorkloadStatus[] {
  return plans.map((plan) => {
    const canary = plan.canary.metadata?.name ?? '';
    const patched = recorded.find((item) => item.name === plan.spec.name)?.stablePatched;
    return {
      name: plan.spec.name,
      canary,
      stableHash: plan.stableHash,
      canaryReady: readyCount(deployments.get(canary)),
      ...(patched === undefined ? {} : { stablePatched: patched }),
    };
  });
}
