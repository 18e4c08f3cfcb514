// Gateway API's names as canary-l4 implements them: the group and versions it reads, its controller
// name, the condition types and reasons it writes (the spec's own strings, gateway.networking.k8s.io v1.6),
// and the names of what the manager provisions for a Gateway.
import { createHash } from 'node:crypto';

export const GATEWAY_GROUP = 'gateway.networking.k8s.io';
/** Gateway, GatewayClass, TCPRoute, UDPRoute, ReferenceGrant: all GA (standard channel) since v1.6. */
export const GATEWAY_VERSION = 'v1';
/** The experimental channel's version of TCPRoute and UDPRoute, read where v1 is not served. */
export const GATEWAY_ROUTE_ALPHA_VERSION = 'v1alpha2';
/** spec.controllerName of the GatewayClasses canary-l4 implements. */
export const GATEWAY_CONTROLLER_NAME = 'canary-l4.io/gateway-controller';

export type RouteKind = 'TCPRoute' | 'UDPRoute';

/** The listener protocols canary-l4 serves; a listener of any other is refused, and its port is in no Service. */
export type L4Protocol = 'TCP' | 'UDP';

/** The protocol a listener is served by, or undefined: the one place that decides which listeners are served. */
export function servedProtocol(protocol: string): L4Protocol | undefined {
  return protocol === 'TCP' || protocol === 'UDP' ? protocol : undefined;
}
/** The plural resource of each route kind. */
export const ROUTE_RESOURCES: Readonly<Record<RouteKind, string>> = { TCPRoute: 'tcproutes', UDPRoute: 'udproutes' };

/** The condition types and reasons of the spec, those canary-l4 writes. */
export const ConditionType = {
  Accepted: 'Accepted',
  Programmed: 'Programmed',
  ResolvedRefs: 'ResolvedRefs',
  Conflicted: 'Conflicted',
} as const;

export const Reason = {
  Accepted: 'Accepted',
  Programmed: 'Programmed',
  Pending: 'Pending',
  Invalid: 'Invalid',
  InvalidParameters: 'InvalidParameters',
  ListenersNotValid: 'ListenersNotValid',
  AddressNotAssigned: 'AddressNotAssigned',
  AddressNotUsable: 'AddressNotUsable',
  UnsupportedAddress: 'UnsupportedAddress',
  UnsupportedProtocol: 'UnsupportedProtocol',
  PortUnavailable: 'PortUnavailable',
  ProtocolConflict: 'ProtocolConflict',
  HostnameConflict: 'HostnameConflict',
  NoConflicts: 'NoConflicts',
  ResolvedRefs: 'ResolvedRefs',
  InvalidRouteKinds: 'InvalidRouteKinds',
  NotAllowedByListeners: 'NotAllowedByListeners',
  NoMatchingParent: 'NoMatchingParent',
  NoMatchingListenerHostname: 'NoMatchingListenerHostname',
  UnsupportedValue: 'UnsupportedValue',
  BackendNotFound: 'BackendNotFound',
  RefNotPermitted: 'RefNotPermitted',
  InvalidKind: 'InvalidKind',
} as const;

/** What the name of everything the manager makes for a Gateway begins with. */
export const GATEWAY_PROXY_PREFIX = 'canary-l4-gateway-';
/** A Service's name: a DNS-1035 label of at most 63 characters. */
const SERVICE_NAME = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

/**
 * The Deployment, Service, PodDisruptionBudget and ServiceAccount the manager makes for a Gateway:
 * `canary-l4-gateway-<gateway>`, or, when that is no Service name (a Gateway name may be 253
 * characters and hold dots), its first characters made one, with a hash of the whole name, so that
 * two Gateways never share one.
 */
export function gatewayProxyName(gateway: string): string {
  const plain = `${GATEWAY_PROXY_PREFIX}${gateway}`;
  if (SERVICE_NAME.test(plain)) return plain;
  const hash = createHash('sha256').update(gateway).digest('hex').slice(0, 8);
  const kept = gateway
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 63 - GATEWAY_PROXY_PREFIX.length - hash.length - 1)
    .replace(/-+$/, '');
  return `${GATEWAY_PROXY_PREFIX}${kept}${kept === '' ? '' : '-'}${hash}`;
}

/** The Lease the replicas of one Gateway's proxy elect their writer with. */
export function gatewayLeaseName(gateway: string): string {
  return `canary-l4-gateway-${gateway}`;
}
