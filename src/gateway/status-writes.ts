// The status writes a pass needs, and making them: the GatewayClass's Accepted (when the manager has
// not written it: a gateway run from a host has only itself), the Gateway's whole status (it has one
// writer, this Gateway's leader), and each route's status.parents (shared with other controllers and
// other Gateways: written with the resourceVersion read, so a concurrent write is retried, never
// overwritten). Only what differs from what the caches show is written.
import { GATEWAY_GROUP, GATEWAY_VERSION, ROUTE_RESOURCES, type RouteKind } from '../api/gateway/names.ts';
import type { Gateway, GatewayClass, GatewayStatus, RouteParentStatus } from '../api/gateway/types.ts';
import { type ClassStatusPatch, classStatusPatch } from '../api/gateway/class-status.ts';
import type { CallOptions, KubeClients } from '../kube/client.ts';
import { sameJson } from '../kube/canonical.ts';
import { mergePatch } from '../kube/patch.ts';
import type { GatewayPlan, RouteStatusPlan } from './model/resolve.ts';

export type StatusWrite =
  | { readonly kind: 'GatewayClass'; readonly name: string; readonly patch: ClassStatusPatch }
  | { readonly kind: 'Gateway'; readonly namespace: string; readonly name: string; readonly status: GatewayStatus }
  | {
      readonly kind: 'TCPRoute' | 'UDPRoute';
      /** v1, or v1alpha2 where only that is served. */
      readonly version: string;
      readonly namespace: string;
      readonly name: string;
      readonly resourceVersion: string | undefined;
      readonly parents: readonly RouteParentStatus[];
    };

/** The writes that bring the statuses the caches show to what `plan` says. */
export function statusWrites(
  gateway: Gateway,
  gatewayClass: GatewayClass,
  plan: GatewayPlan,
  routeVersion: (kind: RouteKind) => string,
  now: string,
): StatusWrite[] {
  const writes: StatusWrite[] = [];
  const classPatch = classStatusPatch(gatewayClass, new Date(now));
  if (classPatch !== undefined)
    writes.push({ kind: 'GatewayClass', name: gatewayClass.metadata.name, patch: classPatch });
  const current = gateway.status ?? {};
  if (
    !sameJson(
      { addresses: current.addresses ?? [], conditions: current.conditions ?? [], listeners: current.listeners ?? [] },
      plan.status,
    )
  ) {
    writes.push({
      kind: 'Gateway',
      namespace: gateway.metadata.namespace ?? '',
      name: gateway.metadata.name,
      status: plan.status,
    });
  }
  return [...writes, ...routeStatusWrites(plan.routes, routeVersion)];
}

/** The writes of the routes whose status.parents are not yet as planned. */
export function routeStatusWrites(
  routes: ReadonlyMap<string, RouteStatusPlan>,
  routeVersion: (kind: RouteKind) => string,
): StatusWrite[] {
  return [...routes.values()]
    .filter(({ route, parents }) => !sameJson(route.status?.parents ?? [], parents))
    .map(({ route, parents }) => ({
      kind: route.kind,
      version: routeVersion(route.kind),
      namespace: route.metadata.namespace ?? '',
      name: route.metadata.name,
      resourceVersion: route.metadata.resourceVersion,
      parents,
    }));
}

/** Makes one write; resolves to the object's new resourceVersion. */
export async function writeStatus(
  write: StatusWrite,
  clients: KubeClients,
  call: CallOptions,
): Promise<string | undefined> {
  const api = { group: GATEWAY_GROUP, version: GATEWAY_VERSION };
  let written: unknown;
  if (write.kind === 'GatewayClass') {
    written = await clients.custom.patchClusterCustomObjectStatus(
      { ...api, plural: 'gatewayclasses', name: write.name, body: write.patch },
      mergePatch(call),
    );
  } else if (write.kind === 'Gateway') {
    written = await clients.custom.patchNamespacedCustomObjectStatus(
      { ...api, namespace: write.namespace, plural: 'gateways', name: write.name, body: { status: write.status } },
      mergePatch(call),
    );
  } else {
    written = await clients.custom.patchNamespacedCustomObjectStatus(
      {
        ...api,
        version: write.version,
        namespace: write.namespace,
        plural: ROUTE_RESOURCES[write.kind],
        name: write.name,
        body: { metadata: { resourceVersion: write.resourceVersion }, status: { parents: write.parents } },
      },
      mergePatch(call),
    );
  }
  return (written as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion;
}

export function describeWrite(write: StatusWrite): string {
  return write.kind === 'GatewayClass'
    ? `GatewayClass ${write.name} status`
    : `${write.kind} ${write.namespace}/${write.name} status`;
}
