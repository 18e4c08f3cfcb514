// A route's backendRefs resolved to what the data plane can reach: a Service's cluster IP and port
// (never DNS), or, for a ref that cannot be resolved, a refusing backend that keeps its share, as the
// spec requires ("connection rejections must respect weight"). Each unresolved ref says why, with the
// reason the spec names: InvalidKind, RefNotPermitted, BackendNotFound.
import type { V1Service } from '@kubernetes/client-node';
import { Reason, type RouteKind } from '../../api/gateway/names.ts';
import type { BackendRef, ReferenceGrant } from '../../api/gateway/types.ts';
import { backendNamespace, backendWeight, namesService, objectKey, referencePermitted } from './refs.ts';

export type ResolvedBackend =
  | {
      readonly kind: 'service';
      readonly ref: BackendRef;
      readonly host: string;
      readonly port: number;
      readonly weight: number;
      readonly namespace: string;
    }
  | {
      readonly kind: 'refused';
      readonly ref: BackendRef;
      readonly weight: number;
      readonly namespace: string;
      readonly reason: string;
      readonly message: string;
    };

export interface BackendWorld {
  /** Services by ns/name. */
  readonly services: ReadonlyMap<string, V1Service>;
  readonly grants: readonly ReferenceGrant[];
}

export function resolveBackend(
  ref: BackendRef,
  routeKind: RouteKind,
  routeNamespace: string,
  world: BackendWorld,
): ResolvedBackend {
  const namespace = backendNamespace(ref, routeNamespace);
  const weight = backendWeight(ref);
  const refused = (reason: string, message: string): ResolvedBackend => ({
    kind: 'refused',
    ref,
    weight,
    namespace,
    reason,
    message,
  });
  const where = `${namespace}/${ref.name}`;
  if (!namesService(ref)) {
    const kind = `${ref.group ? `${ref.group}/` : ''}${ref.kind ?? 'Service'}`;
    return refused(Reason.InvalidKind, `backendRef ${kind} ${where}: canary-l4 routes to Services only`);
  }
  if (!referencePermitted(routeKind, routeNamespace, namespace, ref.name, world.grants)) {
    return refused(
      Reason.RefNotPermitted,
      `backendRef Service ${where}: another namespace; a ReferenceGrant in ${namespace} must allow ${routeKind}s from ${routeNamespace}`,
    );
  }
  const service = world.services.get(objectKey(namespace, ref.name));
  if (service === undefined) return refused(Reason.BackendNotFound, `backendRef Service ${where} does not exist`);
  if (ref.port === undefined) return refused(Reason.BackendNotFound, `backendRef Service ${where}: port is required`);
  const protocol = routeKind === 'UDPRoute' ? 'UDP' : 'TCP';
  const servicePort = service.spec?.ports?.find((p) => p.port === ref.port && (p.protocol ?? 'TCP') === protocol);
  if (servicePort === undefined) {
    return refused(Reason.BackendNotFound, `backendRef Service ${where} has no ${protocol} port ${ref.port}`);
  }
  const clusterIp = service.spec?.clusterIP;
  if (clusterIp === undefined || clusterIp === '' || clusterIp === 'None') {
    return refused(
      Reason.BackendNotFound,
      `backendRef Service ${where} has no cluster IP (${service.spec?.type === 'ExternalName' ? 'ExternalName' : 'headless'}): canary-l4 routes to a Service's cluster IP`,
    );
  }
  return { kind: 'service', ref, host: clusterIp, port: ref.port, weight, namespace };
}
