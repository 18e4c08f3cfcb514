// The plugin's view of the cluster: the kubeconfig as kubectl would use it (--kubeconfig, else
// KUBECONFIG or ~/.kube/config; --context; -n, else the context's namespace), one CanaryRelease
// read and patched, and for `plan` the namespace's Services, Pods, Deployments and ReplicaSets.

import type { KubeConfig, V1Deployment, V1ObjectMeta, V1Service } from '@kubernetes/client-node';
import { loadKubeConfig, makeClients, type KubeClients } from '../kube/client.ts';
import {
  type ApiFailure,
  apiFailure,
  type FieldCause,
  describeError,
  isNotFound,
  jsonPatch,
  mergePatch,
  serverSideApply,
} from '../kube/patch.ts';
import type { Observed } from '../control/index.ts';
import { GROUP, PLURAL, VERSION } from '../api/names.ts';
import type { CanaryRelease } from '../api/release-types.ts';
import type { PatchType } from './actions.ts';

export interface Cluster {
  readonly namespace: string;
  release(name: string): Promise<CanaryRelease>;
  patchRelease(name: string, type: PatchType, patch: unknown): Promise<void>;
  /**
   * What the API server makes of `release` (from a file) on a dry-run server-side apply with strict
   * field validation, as `kubectl apply` would: its schema refuses unknown fields and values out of
   * range before any controller sees them.
   */
  admission(release: CanaryRelease): Promise<Admission>;
  /** The world the controller would see, with `release` (from a file) in place of the live one's spec. */
  observe(release: CanaryRelease): Promise<Observed>;
}

/**
 * `refused`: the API server's words, and the fields it named (`causes`, of an Invalid answer);
 * `unchecked`: why it could not be asked (e.g. no write access: plan needs none).
 */
export type Admission = {
  readonly refused?: string;
  readonly causes?: readonly FieldCause[];
  readonly unchecked?: string;
};

/**
 * The API server's answer to a release its schema refuses: 400 (undecodable), 422 (Invalid), or the
 * 500 with no reason kube-apiserver answers a server-side apply whose typed patch cannot be built
 * (`failed to create typed patch object (…): .spec…protocl: field not declared in schema`).
 */
function isSchemaRefusal(failure: ApiFailure): boolean {
  if (failure.code === 400 || failure.code === 422) return true;
  return (
    failure.code === 500 && failure.reason === '' && failure.message.startsWith('failed to create typed patch object')
  );
}

/** The manager of plan's dry-run applies: none is ever stored, but the API server wants a name. */
const PLAN_FIELD_MANAGER = 'kubectl-canary-l4-plan';

export interface KubeconfigFlags {
  kubeconfig?: string | undefined;
  context?: string | undefined;
  namespace?: string | undefined;
}

/** The kubeconfig as kubectl would use it, and the namespace: -n, else the context's, else default. */
export function userKubeConfig(flags: KubeconfigFlags): { kubeConfig: KubeConfig; namespace: string } {
  const kubeConfig = loadKubeConfig(flags.kubeconfig);
  if (flags.context !== undefined) {
    if (kubeConfig.getContextObject(flags.context) === null)
      throw new Error(`--context ${flags.context}: no such context in the kubeconfig`);
    kubeConfig.setCurrentContext(flags.context);
  }
  const namespace =
    flags.namespace ?? kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace ?? 'default';
  return { kubeConfig, namespace };
}

export function connect(flags: KubeconfigFlags): Cluster {
  const { kubeConfig, namespace } = userKubeConfig(flags);
  return connectAs(kubeConfig, namespace);
}

/** The plugin's view of `namespace` with a kubeconfig already loaded (the dashboard's, for any namespace). */
export function connectAs(kubeConfig: KubeConfig, namespace: string): Cluster {
  const clients = makeClients(kubeConfig);
  const where = (name: string) => `CanaryRelease ${name} in namespace ${namespace}`;
  const read = async (name: string): Promise<CanaryRelease | undefined> => {
    try {
      return (await clients.custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
        name,
      })) as CanaryRelease;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw new Error(`cannot read ${where(name)}: ${describeError(err)}`, { cause: err });
    }
  };
  return {
    namespace,
    async release(name) {
      const found = await read(name);
      if (found === undefined)
        throw new Error(`${where(name)} not found (kubectl get canaryreleases -n ${namespace} lists them)`);
      return found;
    },
    async patchRelease(name, type, patch) {
      try {
        await clients.custom.patchNamespacedCustomObject(
          { group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body: patch },
          type === 'merge' ? mergePatch() : jsonPatch(),
        );
      } catch (err) {
        throw new Error(
          `cannot patch ${where(name)}: ${describeError(err)}${type === 'json' ? ' (it changed meanwhile? run the command again)' : ''}`,
          { cause: err },
        );
      }
    },
    async admission(release) {
      // The file's metadata less what only a stored object has (a stale resourceVersion would conflict).
      const { labels, annotations } = release.metadata as V1ObjectMeta;
      const name = release.metadata.name;
      const body = { ...release, metadata: { name, namespace, labels, annotations } };
      try {
        await clients.custom.patchNamespacedCustomObject(
          {
            group: GROUP,
            version: VERSION,
            namespace,
            plural: PLURAL,
            name,
            body,
            dryRun: 'All',
            fieldManager: PLAN_FIELD_MANAGER,
            fieldValidation: 'Strict',
            force: true,
          },
          serverSideApply(),
        );
        return {};
      } catch (err) {
        const failure = apiFailure(err);
        if (failure !== undefined && isSchemaRefusal(failure))
          return { refused: failure.message, causes: failure.causes };
        return { unchecked: describeError(err) };
      }
    },
    async observe(release) {
      const live = await read(release.metadata.name);
      return observeNamespace(clients, namespace, {
        ...release,
        // A release that runs keeps its uid and status (recorded proxy ports, the step): the plan starts from them.
        metadata: { ...release.metadata, namespace, uid: live?.metadata.uid ?? '' },
        ...(live?.status === undefined ? {} : { status: live.status }),
      });
    },
  };
}

async function observeNamespace(clients: KubeClients, namespace: string, release: CanaryRelease): Promise<Observed> {
  try {
    const [services, pods, deployments, replicaSets] = await Promise.all([
      clients.core.listNamespacedService({ namespace }),
      clients.core.listNamespacedPod({ namespace }),
      clients.apps.listNamespacedDeployment({ namespace }),
      clients.apps.listNamespacedReplicaSet({ namespace }),
    ]);
    const byName = <T extends V1Service | V1Deployment>(items: readonly T[]) =>
      new Map(items.map((item) => [item.metadata?.name ?? '', item] as const));
    return {
      release,
      services: byName(services.items),
      pods: pods.items,
      deployments: byName(deployments.items),
      replicaSets: replicaSets.items,
      listening: new Set(),
    };
  } catch (err) {
    throw new Error(
      `cannot read the Services, Pods, Deployments and ReplicaSets of namespace ${namespace}: ${describeError(err)}`,
    );
  }
}
