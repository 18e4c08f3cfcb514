// Runs the manager's steps against the apiserver (controller-kit/steps.ts: in order, stopping at the
// first failure; the caller retries the whole pass, which plans only what is still missing). Nothing
// is read or diffed here: plan.ts built every body.

import {
  PolicyV1Api,
  RbacAuthorizationV1Api,
  type AppsV1Api,
  type CoreV1Api,
  type CustomObjectsApi,
  type KubeConfig,
  type KubernetesObject,
  type V1ClusterRoleBinding,
  type V1DeleteOptions,
} from '@kubernetes/client-node';
import { makeClients, type CallOptions } from '../kube/client.ts';
import { mergePatch } from '../kube/patch.ts';
import { ignoringNotFound, runSteps, type StepFailure as FailedStep } from '../controller-kit/steps.ts';
import { FIELD_MANAGER, GROUP, PLURAL, VERSION } from '../api/names.ts';
import { GATEWAY_GROUP, GATEWAY_VERSION } from '../api/gateway/names.ts';
import { KIND_OF, type ManagedKind, type Step } from './step.ts';

export interface ManagerApis {
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly policy: PolicyV1Api;
  readonly rbac: RbacAuthorizationV1Api;
  readonly custom: CustomObjectsApi;
}

/** The clients every command has (kube/client.ts), and the two only the manager writes with. */
export function makeManagerApis(kubeConfig: KubeConfig): ManagerApis {
  const { core, apps, custom } = makeClients(kubeConfig);
  return {
    core,
    apps,
    custom,
    policy: kubeConfig.makeApiClient(PolicyV1Api),
    rbac: kubeConfig.makeApiClient(RbacAuthorizationV1Api),
  };
}

/** What a write left: the object's resourceVersion, or undefined for one that is gone. */
export interface Written {
  readonly child: ManagedKind | 'release' | 'gatewayClass';
  readonly name: string;
  readonly resourceVersion: string | undefined;
}

interface Verbs {
  create(namespace: string, body: KubernetesObject): Promise<KubernetesObject>;
  replace(namespace: string, name: string, body: KubernetesObject): Promise<KubernetesObject>;
  delete(namespace: string, name: string, uid: string | undefined): Promise<unknown>;
}

type Call = CallOptions;
type Create<T> = (request: { namespace: string; body: T; fieldManager: string }, call: Call) => Promise<T>;
type Replace<T> = (
  request: { namespace: string; name: string; body: T; fieldManager: string },
  call: Call,
) => Promise<T>;
type Delete = (request: { namespace: string; name: string; body: V1DeleteOptions }, call: Call) => Promise<unknown>;

/** One kind's generated client methods, bound to its API object, as the three verbs the steps use. */
function verbs<T extends KubernetesObject>(
  api: object,
  create: Create<T>,
  replace: Replace<T>,
  remove: Delete,
  call: Call,
): Verbs {
  const fieldManager = FIELD_MANAGER;
  return {
    create: (namespace, body) => create.call(api, { namespace, body: body as T, fieldManager }, call),
    replace: (namespace, name, body) => replace.call(api, { namespace, name, body: body as T, fieldManager }, call),
    // The uid precondition: never an object of the same name made since.
    delete: (namespace, name, uid) =>
      remove.call(
        api,
        {
          namespace,
          name,
          body: { propagationPolicy: 'Background', ...(uid === undefined ? {} : { preconditions: { uid } }) },
        },
        call,
      ),
  };
}

function verbsOf({ core, rbac, apps, policy }: ManagerApis, child: ManagedKind, call: Call): Verbs {
  switch (child) {
    case 'serviceAccount':
      return verbs(
        core,
        core.createNamespacedServiceAccount,
        core.replaceNamespacedServiceAccount,
        core.deleteNamespacedServiceAccount,
        call,
      );
    case 'roleBinding':
      return verbs(
        rbac,
        rbac.createNamespacedRoleBinding,
        rbac.replaceNamespacedRoleBinding,
        rbac.deleteNamespacedRoleBinding,
        call,
      );
    case 'deployment':
      return verbs(
        apps,
        apps.createNamespacedDeployment,
        apps.replaceNamespacedDeployment,
        apps.deleteNamespacedDeployment,
        call,
      );
    case 'podDisruptionBudget':
      return verbs(
        policy,
        policy.createNamespacedPodDisruptionBudget,
        policy.replaceNamespacedPodDisruptionBudget,
        policy.deleteNamespacedPodDisruptionBudget,
        call,
      );
    case 'clusterRoleBinding':
      // Cluster-scoped: the namespace of the pass is not the object's.
      return {
        create: (_namespace, body) =>
          rbac.createClusterRoleBinding({ body: body as V1ClusterRoleBinding, fieldManager: FIELD_MANAGER }, call),
        replace: (_namespace, name, body) =>
          rbac.replaceClusterRoleBinding(
            { name, body: body as V1ClusterRoleBinding, fieldManager: FIELD_MANAGER },
            call,
          ),
        delete: (_namespace, name, uid) =>
          rbac.deleteClusterRoleBinding(
            {
              name,
              body: { propagationPolicy: 'Background', ...(uid === undefined ? {} : { preconditions: { uid } }) },
            },
            call,
          ),
      };
    case 'metricsService':
    case 'service':
      return verbs(
        core,
        core.createNamespacedService,
        core.replaceNamespacedService,
        core.deleteNamespacedService,
        call,
      );
  }
}

/** The first step that failed, and why. */
export type StepFailure = FailedStep<Step>;

/**
 * Runs the steps of the pass for `namespace/name` (a release, a Gateway; a GatewayClass: '' and its name) while `mayWrite()` holds; `onDone` hears of each
 * as it succeeds. Stops at the first failure and resolves with it (undefined: all done).
 */
export async function applyManagerSteps(
  apis: ManagerApis,
  namespace: string,
  name: string,
  steps: readonly Step[],
  call: CallOptions,
  onDone: (step: Step, written: Written) => void,
  mayWrite: () => boolean,
): Promise<StepFailure | undefined> {
  return runSteps(steps, (step) => applyStep(apis, namespace, name, step, call), onDone, mayWrite);
}

async function applyStep(
  apis: ManagerApis,
  namespace: string,
  name: string,
  step: Step,
  call: CallOptions,
): Promise<Written> {
  if (step.kind === 'writeClassStatus') {
    const patched = await apis.custom.patchClusterCustomObjectStatus(
      {
        group: GATEWAY_GROUP,
        version: GATEWAY_VERSION,
        plural: 'gatewayclasses',
        name,
        body: step.patch,
        fieldManager: FIELD_MANAGER,
      },
      mergePatch(call),
    );
    return {
      child: 'gatewayClass',
      name,
      resourceVersion: (patched as KubernetesObject).metadata?.resourceVersion,
    };
  }
  if (step.kind === 'writeStatus') {
    const patched = await apis.custom.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
        name,
        body: step.patch,
        fieldManager: FIELD_MANAGER,
      },
      mergePatch(call),
    );
    return {
      child: 'release',
      name,
      resourceVersion: (patched as KubernetesObject).metadata?.resourceVersion,
    };
  }
  const verbs = verbsOf(apis, step.child, call);
  switch (step.kind) {
    case 'create': {
      const created = await verbs.create(namespace, step.object);
      return {
        child: step.child,
        name: created.metadata?.name ?? '',
        resourceVersion: created.metadata?.resourceVersion,
      };
    }
    case 'replace': {
      const replaced = await verbs.replace(namespace, step.object.metadata?.name ?? '', step.object);
      return {
        child: step.child,
        name: replaced.metadata?.name ?? '',
        resourceVersion: replaced.metadata?.resourceVersion,
      };
    }
    case 'delete':
      await ignoringNotFound(verbs.delete(namespace, step.name, step.uid));
      return { child: step.child, name: step.name, resourceVersion: undefined };
  }
}

export function describeStep(step: Step): string {
  switch (step.kind) {
    case 'writeStatus':
      return 'write status.proxy';
    case 'writeClassStatus':
      return 'write the GatewayClass status';
    case 'delete':
      return `delete ${KIND_OF[step.child]} ${step.name}`;
    default:
      return `${step.kind} ${KIND_OF[step.child]} ${step.object.metadata?.name ?? ''}`;
  }
}
