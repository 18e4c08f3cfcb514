// The applier: runs reconcile's steps against the apiserver (controller-kit/steps.ts: in order,
// stopping at the first failure; the caller retries the whole reconcile, which lists only what is
// still missing). Every write is what reconcile built: merge patches carrying their own preconditions, so nothing here
// reads or diffs an object.

import type { AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import type { CallOptions } from '../../kube/client.ts';
import { describeError, mergePatch, strategicMergePatch } from '../../kube/patch.ts';
import { ignoringNotFound, runSteps } from '../../controller-kit/steps.ts';
import type { Step } from '../pass/desired.ts';
import { FIELD_MANAGER, GROUP, PLURAL, VERSION } from '../../api/names.ts';

export interface ApplyTarget {
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly custom: CustomObjectsApi;
  readonly namespace: string;
  /** The CanaryRelease's name. */
  readonly release: string;
  /** Bounds every call (deadline, shutdown). */
  readonly callOptions: CallOptions;
}

/** What a step left in the cluster, so the caller can wait for its caches to show it. */
export type Written =
  | { readonly kind: 'service'; readonly name: string; readonly resourceVersion: string | undefined }
  | { readonly kind: 'serviceGone'; readonly name: string; readonly uid: string | undefined }
  | { readonly kind: 'deployment'; readonly name: string; readonly resourceVersion: string | undefined }
  | { readonly kind: 'deploymentGone'; readonly name: string; readonly uid: string | undefined }
  | { readonly kind: 'release'; readonly resourceVersion: string | undefined };

export class StepError extends Error {
  readonly step: Step;

  constructor(step: Step, cause: unknown) {
    super(`${describeStep(step)}: ${describeError(cause)}`, { cause });
    this.name = 'StepError';
    this.step = step;
  }
}

/** Runs the steps as runSteps does; rejects with a StepError naming the first step that failed. */
export async function applySteps(
  target: ApplyTarget,
  steps: readonly Step[],
  onDone: (step: Step, written: Written) => void,
  mayWrite: () => boolean = () => true,
): Promise<void> {
  const failure = await runSteps(steps, (step) => applyStep(target, step), onDone, mayWrite);
  if (failure !== undefined) throw new StepError(failure.step, failure.error);
}

async function applyStep(target: ApplyTarget, step: Step): Promise<Written> {
  const { core, apps, custom, namespace, release, callOptions } = target;
  const releaseRef = {
    group: GROUP,
    version: VERSION,
    namespace,
    plural: PLURAL,
    name: release,
    fieldManager: FIELD_MANAGER,
  };
  switch (step.kind) {
    case 'patchRelease': {
      const patched = await custom.patchNamespacedCustomObject(
        { ...releaseRef, body: step.patch },
        mergePatch(callOptions),
      );
      return { kind: 'release', resourceVersion: resourceVersionOf(patched) };
    }
    case 'writeStatus': {
      const patched = await custom.patchNamespacedCustomObjectStatus(
        { ...releaseRef, body: { status: step.status } },
        mergePatch(callOptions),
      );
      return { kind: 'release', resourceVersion: resourceVersionOf(patched) };
    }
    case 'patchService': {
      const patched = await core.patchNamespacedService(
        { name: step.name, namespace, body: step.patch, fieldManager: FIELD_MANAGER },
        mergePatch(callOptions),
      );
      return { kind: 'service', name: step.name, resourceVersion: patched.metadata?.resourceVersion };
    }
    case 'createService': {
      // AlreadyExists fails the pass: the cache is behind, and the retry sees the Service.
      const created = await core.createNamespacedService(
        { namespace, body: step.service, fieldManager: FIELD_MANAGER },
        callOptions,
      );
      return {
        kind: 'service',
        name: created.metadata?.name ?? '',
        resourceVersion: created.metadata?.resourceVersion,
      };
    }
    case 'deleteService': {
      // The uid precondition: never delete a Service of the same name made since by someone else.
      await ignoringNotFound(
        core.deleteNamespacedService(
          { name: step.name, namespace, body: { preconditions: uidPrecondition(step.uid) } },
          callOptions,
        ),
      );
      return { kind: 'serviceGone', name: step.name, uid: step.uid };
    }
    case 'createDeployment': {
      const created = await apps.createNamespacedDeployment(
        { namespace, body: step.deployment, fieldManager: FIELD_MANAGER },
        callOptions,
      );
      return {
        kind: 'deployment',
        name: created.metadata?.name ?? '',
        resourceVersion: created.metadata?.resourceVersion,
      };
    }
    case 'replaceDeployment': {
      const name = step.deployment.metadata?.name ?? '';
      const replaced = await apps.replaceNamespacedDeployment(
        { name, namespace, body: step.deployment, fieldManager: FIELD_MANAGER },
        callOptions,
      );
      return { kind: 'deployment', name, resourceVersion: replaced.metadata?.resourceVersion };
    }
    case 'patchDeployment': {
      const patched = await apps.patchNamespacedDeployment(
        { name: step.name, namespace, body: step.patch, fieldManager: FIELD_MANAGER },
        strategicMergePatch(callOptions),
      );
      return { kind: 'deployment', name: step.name, resourceVersion: patched.metadata?.resourceVersion };
    }
    case 'deleteDeployment': {
      await ignoringNotFound(
        apps.deleteNamespacedDeployment(
          { name: step.name, namespace, body: { preconditions: uidPrecondition(step.uid) } },
          callOptions,
        ),
      );
      return { kind: 'deploymentGone', name: step.name, uid: step.uid };
    }
  }
}

function uidPrecondition(uid: string | undefined): { uid: string } | undefined {
  return uid === undefined ? undefined : { uid };
}

export function describeStep(step: Step): string {
  switch (step.kind) {
    case 'patchRelease':
    case 'writeStatus':
      return step.reason;
    case 'patchService':
    case 'deleteService':
    case 'patchDeployment':
    case 'deleteDeployment':
      return `${step.reason} ${step.name}`;
    case 'createService':
      return `${step.reason} ${step.service.metadata?.name ?? ''}`;
    case 'createDeployment':
    case 'replaceDeployment':
      return `${step.reason} ${step.deployment.metadata?.name ?? ''}`;
  }
}

function resourceVersionOf(object: unknown): string | undefined {
  return (object as { metadata?: { resourceVersion?: string } } | undefined)?.metadata?.resourceVersion;
}
