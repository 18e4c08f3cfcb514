// How the manager lists and watches each kind it reads (its sources), in one namespace or all of them:
// the CanaryReleases, the Gateways and GatewayClasses, and what it keeps for them (found by its
// managed-by label). Which reconciler an event wakes is watches.ts's; the caches are caches.ts's.

import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import type { CallOptions } from '../kube/client.ts';
import { GROUP, PLURAL, VERSION } from '../api/names.ts';
import { GATEWAY_GROUP, GATEWAY_VERSION } from '../api/gateway/names.ts';
import type { ManagerApis } from './apply.ts';
import type { ChildKind } from './plan.ts';
import { LABEL_MANAGED_BY, MANAGED_BY } from './names.ts';

const MANAGED_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY}`;

/** Every kind the manager caches. */
export type Watched = ChildKind | 'release' | 'pod' | GatewayWatched;
/** Watched once the Gateway API is served; the classes and the ClusterRoleBindings cluster-wide. */
export type GatewayWatched = 'gateway' | 'gatewayClass' | 'clusterRoleBinding';
export const GATEWAY_WATCHED: readonly GatewayWatched[] = ['gateway', 'gatewayClass', 'clusterRoleBinding'];

type List = KubernetesListObject<KubernetesObject>;
type ListIn = (request: { namespace: string; labelSelector: string }, call: CallOptions) => Promise<List>;
type ListAll = (request: { labelSelector: string }, call: CallOptions) => Promise<List>;

export interface Source {
  readonly path: string;
  readonly labelSelector?: string;
  readonly list: () => Promise<List>;
}

/** How each watched kind is listed and watched, in one namespace ('' for all of them). */
export function source(
  { core, apps, policy, rbac, custom }: ManagerApis,
  kind: Watched,
  namespace: string,
  call: CallOptions,
): Source {
  const at = (base: string, plural: string) => `${base}${namespace === '' ? '' : `/namespaces/${namespace}`}/${plural}`;
  // What the manager keeps, by its label; the generated client's two list methods of the kind.
  const kept = (api: object, base: string, plural: string, inNamespace: ListIn, everywhere: ListAll): Source => ({
    path: at(base, plural),
    labelSelector: MANAGED_SELECTOR,
    list: () =>
      namespace === ''
        ? everywhere.call(api, { labelSelector: MANAGED_SELECTOR }, call)
        : inNamespace.call(api, { namespace, labelSelector: MANAGED_SELECTOR }, call),
  });
  const releases = { group: GROUP, version: VERSION };
  switch (kind) {
    case 'release':
      return {
        path: at(`/apis/${GROUP}/${VERSION}`, PLURAL),
        list: () =>
          (namespace === ''
            ? custom.listCustomObjectForAllNamespaces({ ...releases, resourcePlural: PLURAL }, call)
            : custom.listNamespacedCustomObject({ ...releases, plural: PLURAL, namespace }, call)) as Promise<List>,
      };
    case 'deployment':
      return kept(
        apps,
        '/apis/apps/v1',
        'deployments',
        apps.listNamespacedDeployment,
        apps.listDeploymentForAllNamespaces,
      );
    case 'podDisruptionBudget':
      return kept(
        policy,
        '/apis/policy/v1',
        'poddisruptionbudgets',
        policy.listNamespacedPodDisruptionBudget,
        policy.listPodDisruptionBudgetForAllNamespaces,
      );
    case 'roleBinding':
      return kept(
        rbac,
        '/apis/rbac.authorization.k8s.io/v1',
        'rolebindings',
        rbac.listNamespacedRoleBinding,
        rbac.listRoleBindingForAllNamespaces,
      );
    case 'serviceAccount':
      return kept(
        core,
        '/api/v1',
        'serviceaccounts',
        core.listNamespacedServiceAccount,
        core.listServiceAccountForAllNamespaces,
      );
    case 'metricsService':
      return kept(core, '/api/v1', 'services', core.listNamespacedService, core.listServiceForAllNamespaces);
    case 'pod':
      return kept(core, '/api/v1', 'pods', core.listNamespacedPod, core.listPodForAllNamespaces);
    case 'gateway': {
      const gateways = { group: GATEWAY_GROUP, version: GATEWAY_VERSION };
      return {
        path: at(`/apis/${GATEWAY_GROUP}/${GATEWAY_VERSION}`, 'gateways'),
        list: () =>
          (namespace === ''
            ? custom.listCustomObjectForAllNamespaces({ ...gateways, resourcePlural: 'gateways' }, call)
            : custom.listNamespacedCustomObject({ ...gateways, plural: 'gateways', namespace }, call)) as Promise<List>,
      };
    }
    case 'gatewayClass':
      return {
        path: `/apis/${GATEWAY_GROUP}/${GATEWAY_VERSION}/gatewayclasses`,
        list: () =>
          custom.listClusterCustomObject(
            { group: GATEWAY_GROUP, version: GATEWAY_VERSION, plural: 'gatewayclasses' },
            call,
          ) as Promise<List>,
      };
    case 'clusterRoleBinding':
      return {
        path: '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
        labelSelector: MANAGED_SELECTOR,
        list: () => rbac.listClusterRoleBinding({ labelSelector: MANAGED_SELECTOR }, call),
      };
  }
}
