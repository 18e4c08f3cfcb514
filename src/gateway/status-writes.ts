// The status writes a pass needs, and making them: the GatewayClass's Accepted (when the manager has
// not written it: a gateway run from a host has only itself), the Gateway's whole status (it has one
// writer, this Gateway's leader), and each route's status.parents (shared with other controllers and
// other Gateways: written with the resourceVersion read, so a concurrent write is retried, never
// overwritten). Only what differs from what the caches show is written.
import {
  ConditionType,
  GATEWAY_CONTROLLER_NAME,
  GATEWAY_GROUP,
  GATEWAY_VERSION,
  Reason,
  ROUTE_RESOURCES,
  type RouteKind,
} from '../api/gateway/names.ts';
import type { Gateway, GatewayClass, GatewayStatus, RouteParentStatus } from '../api/gateway/types.ts';
import type { CallOptions, KubeClients } from '../kube/client.ts';
import { sameJson } from '../kube/canonical.ts';
import { mergePatch } from '../kube/patch.ts';
import { conditionsOf, verdict } from './model/conditions.ts';
import type { GatewayPlan, RouteStatusPlan } from './model/resolve.ts';

export type StatusWrite =
  | { readonly kind: 'GatewayClass'; readonly name: string; readonly status: GatewayClass['status'] }
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
  const classStatus = acceptedClassStatus(gatewayClass, now);
  if (classStatus !== undefined)
    writes.push({ kind: 'GatewayClass', name: gatewayClass.metadata.name, status: classStatus });
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

/**
 * The class's status with Accepted=True at its generation, or undefined when it says so already.
 * canary-l4 takes no parameters: a class with a parametersRef is not accepted.
 */
export function acceptedClassStatus(gatewayClass: GatewayClass, now: string): GatewayClass['status'] | undefined {
  const previous = gatewayClass.status?.conditions ?? [];
  const parameters = gatewayClass.spec.parametersRef;
  const accepted =
    parameters === undefined
      ? verdict(ConditionType.Accepted, true, Reason.Accepted, `handled by ${GATEWAY_CONTROLLER_NAME}`)
      : verdict(
          ConditionType.Accepted,
          false,
          Reason.InvalidParameters,
          `spec.parametersRef (${parameters.kind} ${parameters.name}): canary-l4 takes no parameters; remove it`,
        );
  const [condition] = conditionsOf([accepted], previous, gatewayClass.metadata.generation, now);
  const before = previous.find((c) => c.type === ConditionType.Accepted);
  if (before !== undefined && sameJson(before, condition)) return undefined;
  return {
    ...gatewayClass.status,
    conditions: [...previous.filter((c) => c.type !== ConditionType.Accepted), condition!],
  };
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
      { ...api, plural: 'gatewayclasses', name: write.name, body: { status: write.status } },
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
