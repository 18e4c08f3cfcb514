// Runs the manager's steps against the apiserver, in order, stopping at the first failure (the
// caller retries the whole pass, which plans only what is still missing). Nothing is read or
// diffed here: plan.ts built every body.

import {
  AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, PolicyV1Api, RbacAuthorizationV1Api,
  type KubernetesObject, type V1Deployment, type V1PodDisruptionBudget, type V1RoleBinding, type V1Service, type V1ServiceAccount,
} from '@kubernetes/client-node';
import type { CallOptions } from '../kube/client.ts';
import { describeError, isNotFound, mergePatch } from '../kube/patch.ts';
import { FIELD_MANAGER } from '../control/apply.ts';
import { GROUP, PLURAL, VERSION } from '../control/types.ts';
import { KIND_OF, type ChildKind, type Step } from './plan.ts';

export interface ManagerApis {
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly policy: PolicyV1Api;
  readonly rbac: RbacAuthorizationV1Api;
  readonly custom: CustomObjectsApi;
}

export function makeManagerApis(kubeConfig: KubeConfig): ManagerApis {
  return {
    core: kubeConfig.makeApiClient(CoreV1Api),
    apps: kubeConfig.makeApiClient(AppsV1Api),
    policy: kubeConfig.makeApiClient(PolicyV1Api),
    rbac: kubeConfig.makeApiClient(RbacAuthorizationV1Api),
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
  };
}

/** What a write left: the object's resourceVersion, or undefined for one that is gone. */
export interface Written {
  readonly child: ChildKind | 'release';
  readonly name: string;
  readonly resourceVersion: string | undefined;
}

interface Verbs {
  create(namespace: string, body: KubernetesObject): Promise<KubernetesObject>;
  replace(namespace: string, name: string, body: KubernetesObject): Promise<KubernetesObject>;
  delete(namespace: string, name: string, uid: string | undefined): Promise<unknown>;
}

/** The generated client's methods for each kind the manager keeps. */
function verbsOf(apis: ManagerApis, child: ChildKind, call: CallOptions): Verbs {
  const fieldManager = FIELD_MANAGER;
  const deleteBody = (uid: string | undefined) => ({ propagationPolicy: 'Background', ...(uid === undefined ? {} : { preconditions: { uid } }) });
  switch (child) {
    case 'serviceAccount':
      return {
        create: (namespace, body) => apis.core.createNamespacedServiceAccount({ namespace, body: body as V1ServiceAccount, fieldManager }, call),
        replace: (namespace, name, body) => apis.core.replaceNamespacedServiceAccount({ namespace, name, body: body as V1ServiceAccount, fieldManager }, call),
        delete: (namespace, name, uid) => apis.core.deleteNamespacedServiceAccount({ namespace, name, body: deleteBody(uid) }, call),
      };
    case 'roleBinding':
      return {
        create: (namespace, body) => apis.rbac.createNamespacedRoleBinding({ namespace, body: body as V1RoleBinding, fieldManager }, call),
        replace: (namespace, name, body) => apis.rbac.replaceNamespacedRoleBinding({ namespace, name, body: body as V1RoleBinding, fieldManager }, call),
        delete: (namespace, name, uid) => apis.rbac.deleteNamespacedRoleBinding({ namespace, name, body: deleteBody(uid) }, call),
      };
    case 'deployment':
      return {
        create: (namespace, body) => apis.apps.createNamespacedDeployment({ namespace, body: body as V1Deployment, fieldManager }, call),
        replace: (namespace, name, body) => apis.apps.replaceNamespacedDeployment({ namespace, name, body: body as V1Deployment, fieldManager }, call),
        delete: (namespace, name, uid) => apis.apps.deleteNamespacedDeployment({ namespace, name, body: deleteBody(uid) }, call),
      };
    case 'podDisruptionBudget':
      return {
        create: (namespace, body) => apis.policy.createNamespacedPodDisruptionBudget({ namespace, body: body as V1PodDisruptionBudget, fieldManager }, call),
        replace: (namespace, name, body) => apis.policy.replaceNamespacedPodDisruptionBudget({ namespace, name, body: body as V1PodDisruptionBudget, fieldManager }, call),
        delete: (namespace, name, uid) => apis.policy.deleteNamespacedPodDisruptionBudget({ namespace, name, body: deleteBody(uid) }, call),
      };
    case 'metricsService':
      return {
        create: (namespace, body) => apis.core.createNamespacedService({ namespace, body: body as V1Service, fieldManager }, call),
        replace: (namespace, name, body) => apis.core.replaceNamespacedService({ namespace, name, body: body as V1Service, fieldManager }, call),
        delete: (namespace, name, uid) => apis.core.deleteNamespacedService({ namespace, name, body: deleteBody(uid) }, call),
      };
  }
}

export class ManagerStepError extends Error {
  readonly step: Step;

  constructor(step: Step, cause: unknown) {
    super(`${describeStep(step)}: ${describeError(cause)}`, { cause });
    this.name = 'ManagerStepError';
    this.step = step;
  }
}

/**
 * Runs the steps for the release `namespace/name` while `mayWrite()` holds; `onDone` hears of each
 * as it succeeds. Rejects with a ManagerStepError naming the first step that failed.
 */
export async function applyManagerSteps(apis: ManagerApis, namespace: string, name: string, steps: readonly Step[], call: CallOptions,
  onDone: (step: Step, written: Written) => void, mayWrite: () => boolean): Promise<void> {
  for (const step of steps) {
    if (!mayWrite()) return;
    try {
      onDone(step, await applyStep(apis, namespace, name, step, call));
    } catch (err) {
      throw new ManagerStepError(step, err);
    }
  }
}

async function applyStep(apis: ManagerApis, namespace: string, release: string, step: Step, call: CallOptions): Promise<Written> {
  if (step.kind === 'writeStatus') {
    const patched = await apis.custom.patchNamespacedCustomObjectStatus(
      { group: GROUP, version: VERSION, namespace, plural: PLURAL, name: release, body: step.patch, fieldManager: FIELD_MANAGER }, mergePatch(call));
    return { child: 'release', name: release, resourceVersion: (patched as KubernetesObject).metadata?.resourceVersion };
  }
  const verbs = verbsOf(apis, step.child, call);
  switch (step.kind) {
    case 'create': {
      const created = await verbs.create(namespace, step.object);
      return { child: step.child, name: created.metadata?.name ?? '', resourceVersion: created.metadata?.resourceVersion };
    }
    case 'replace': {
      const replaced = await verbs.replace(namespace, step.object.metadata?.name ?? '', step.object);
      return { child: step.child, name: replaced.metadata?.name ?? '', resourceVersion: replaced.metadata?.resourceVersion };
    }
    case 'delete':
      try {
        await verbs.delete(namespace, step.name, step.uid);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
      return { child: step.child, name: step.name, resourceVersion: undefined };
  }
}

export function describeStep(step: Step): string {
  switch (step.kind) {
    case 'writeStatus':
      return 'write status.proxy';
    case 'delete':
      return `delete ${KIND_OF[step.child]} ${step.name}`;
    default:
      return `${step.kind} ${KIND_OF[step.child]} ${step.object.metadata?.name ?? ''}`;
  }
}
