// The names and labels of what the manager keeps for a Gateway of canary-l4's class, and the
// ClusterRoles (deploy/gateway-rbac.yaml) its pods are bound to. The objects themselves are named
// by api/gateway/names.ts (gatewayProxyName), which the gateway command shares.

import type { Labels } from '../../api/names.ts';
import { GROUP } from '../../api/names.ts';
import { GATEWAY_PROXY_PREFIX } from '../../api/gateway/names.ts';
import { LABEL_MANAGED_BY, MANAGED_BY } from '../names.ts';

/** On every object kept for a Gateway (and its pods): the Gateway's name; its pods are selected by it. */
export const LABEL_GATEWAY = `${GROUP}/gateway`;
/** On the cluster-scoped ClusterRoleBinding only: the Gateway's namespace (a namespaced object has its own). */
export const LABEL_GATEWAY_NAMESPACE = `${GROUP}/gateway-namespace`;
/** A Gateway's annotation: the type of its Service, ClusterIP (the default) or LoadBalancer. */
export const ANNOTATION_SERVICE_TYPE = `${GROUP}/service-type`;
export const SERVICE_TYPES = ['ClusterIP', 'LoadBalancer'] as const;
/** What the gateway pods may do in every namespace (routes, ReferenceGrants, Services, statuses, Events). */
export const GATEWAY_CLUSTER_ROLE = 'canary-l4-gateway';
/** What they may do in their own namespace only: their leader election Lease. */
export const GATEWAY_LEASE_ROLE = 'canary-l4-gateway-leases';
/** Gateway names the manager can serve: the name labels what it makes (LABEL_GATEWAY), and a label value holds 63 characters. */
export const MAX_GATEWAY_NAME = 63;

/**
 * The ClusterRoleBinding of one Gateway's pods, unique across namespaces: a namespace holds no '.',
 * so the first one after the prefix ends it, whatever dots the Gateway's name has.
 */
export function gatewayClusterBindingName(namespace: string, gateway: string): string {
  return `${GATEWAY_PROXY_PREFIX.replace(/-$/, '')}.${namespace}.${gateway}`;
}

export function gatewayLabels(gateway: string): Labels {
  return {
    'app.kubernetes.io/name': 'canary-l4',
    'app.kubernetes.io/instance': gateway,
    'app.kubernetes.io/component': 'gateway',
    [LABEL_MANAGED_BY]: MANAGED_BY,
    [LABEL_GATEWAY]: gateway,
  };
}
