// References between Gateway API objects with the defaults the schema gives them filled in (a watch
// delivers what was stored, and a client may omit group, kind and namespace): a route's parentRefs,
// its backendRefs, and the ReferenceGrants that let a route reach a Service in another namespace.
import { GATEWAY_GROUP, type RouteKind } from '../../api/gateway/names.ts';
import type { BackendRef, Gateway, L4Route, ParentReference, ReferenceGrant } from '../../api/gateway/types.ts';

/** Whether `ref`, a parentRef of a route in `routeNamespace`, names `gateway`. */
export function refersToGateway(ref: ParentReference, routeNamespace: string, gateway: Gateway): boolean {
  return (
    (ref.group ?? GATEWAY_GROUP) === GATEWAY_GROUP &&
    (ref.kind ?? 'Gateway') === 'Gateway' &&
    (ref.namespace ?? routeNamespace) === gateway.metadata.namespace &&
    ref.name === gateway.metadata.name
  );
}

/** A parentRef as the route's status repeats it: group, kind and namespace spelled out. */
export function spelledParentRef(ref: ParentReference, routeNamespace: string): ParentReference {
  return {
    group: ref.group ?? GATEWAY_GROUP,
    kind: ref.kind ?? 'Gateway',
    namespace: ref.namespace ?? routeNamespace,
    name: ref.name,
    ...(ref.sectionName === undefined ? {} : { sectionName: ref.sectionName }),
    ...(ref.port === undefined ? {} : { port: ref.port }),
  };
}

/** A backendRef's Service, when it names one: core group ('' or absent), kind Service (or absent). */
export function namesService(ref: BackendRef): boolean {
  return (ref.group ?? '') === '' && (ref.kind ?? 'Service') === 'Service';
}

export function backendNamespace(ref: BackendRef, routeNamespace: string): string {
  return ref.namespace ?? routeNamespace;
}

/** absent = 1, as the schema defaults it. */
export function backendWeight(ref: BackendRef): number {
  return ref.weight ?? 1;
}

/**
 * Whether a route of `kind` in `fromNamespace` may refer to Service `name` in `toNamespace`: the
 * same namespace always, another only through a ReferenceGrant in the target namespace.
 */
export function referencePermitted(
  kind: RouteKind,
  fromNamespace: string,
  toNamespace: string,
  name: string,
  grants: readonly ReferenceGrant[],
): boolean {
  if (fromNamespace === toNamespace) return true;
  return grants.some(
    (grant) =>
      grant.metadata.namespace === toNamespace &&
      grant.spec.from.some(
        (from) => from.group === GATEWAY_GROUP && from.kind === kind && from.namespace === fromNamespace,
      ) &&
      grant.spec.to.some(
        (to) => to.group === '' && to.kind === 'Service' && (to.name === undefined || to.name === name),
      ),
  );
}

/** ns/name, the key of a namespaced object in the world's maps. */
export function objectKey(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

export function routeKey(route: L4Route): string {
  return `${route.kind}/${objectKey(route.metadata.namespace, route.metadata.name)}`;
}
