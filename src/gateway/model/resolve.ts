// One Gateway and the world around it → what canary-l4 serves for it and the statuses it writes:
// the L4 config (a listener per served Gateway listener that has a route; the oldest route attached
// to a listener carries its traffic, by its weighted backendRefs), the Gateway's status (addresses,
// Accepted, Programmed, each listener's), and, for every route that names this Gateway, its
// status.parents entries for it. Pure: time comes in as `now`.
import type { V1Service } from '@kubernetes/client-node';
import { ConditionType, GATEWAY_CONTROLLER_NAME, Reason } from '../../api/gateway/names.ts';
import type {
  Gateway,
  GatewayAddress,
  GatewayStatus,
  L4Route,
  ListenerStatus,
  ReferenceGrant,
  RouteParentStatus,
} from '../../api/gateway/types.ts';
import type { BackendConfig, L4Config, ListenerConfig } from '../../config/types.ts';
import { controllerListener } from '../../config/controller-listener.ts';
import { type Attachment, attachRoute } from './attachment.ts';
import { type ResolvedBackend, resolveBackend } from './backends.ts';
import { conditionsOf, type Verdict, verdict } from './conditions.ts';
import { l4BackendName, l4ListenerName } from './l4-names.ts';
import { type JudgedListener, judgeListeners } from './listeners.ts';
import { refersToGateway, routeKey, spelledParentRef } from './refs.ts';

export interface GatewayWorld {
  readonly gateway: Gateway;
  /** Every TCPRoute and UDPRoute seen (those naming other Gateways are left alone). */
  readonly routes: readonly L4Route[];
  /** Services by ns/name. */
  readonly services: ReadonlyMap<string, V1Service>;
  readonly grants: readonly ReferenceGrant[];
  readonly namespaceLabels: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** Where this Gateway is reached; none yet: Programmed=False AddressNotAssigned. */
  readonly addresses: readonly GatewayAddress[];
  /** --listen-address; undefined: every address. */
  readonly listenHost: string | undefined;
  readonly reservedPorts: ReadonlySet<number>;
  /** Gateway listener name → why its port could not be bound. */
  readonly unbindable: ReadonlyMap<string, string>;
  /** ISO time, for the conditions that change now. */
  readonly now: string;
}

export interface RouteStatusPlan {
  readonly route: L4Route;
  /** The route's status.parents as they are to be: this Gateway's entries ours, every other kept. */
  readonly parents: readonly RouteParentStatus[];
}

export interface GatewayPlan {
  readonly config: L4Config;
  /** L4 listener name → the Gateway listener it serves. */
  readonly servedBy: ReadonlyMap<string, string>;
  readonly status: GatewayStatus;
  /** Keyed by routeKey(): every route with an entry for this Gateway, to be or to be removed. */
  readonly routes: ReadonlyMap<string, RouteStatusPlan>;
}

export function planGateway(world: GatewayWorld): GatewayPlan {
  const { gateway } = world;
  const generation = gateway.metadata.generation;
  const judged = judgeListeners(gateway.spec.listeners, world);
  const attachments = world.routes.flatMap((route) => attachRoute(route, gateway, judged, world));
  const backendsOf = new Map(world.routes.map((route) => [routeKey(route), resolveRoute(route, world)]));

  const listeners: ListenerConfig[] = [];
  const servedBy = new Map<string, string>();
  for (const listener of judged) {
    const winner = oldestAttached(listener, attachments);
    if (winner === undefined || listener.protocol === undefined) continue;
    const config = listenerConfig(listener, backendsOf.get(routeKey(winner)) ?? [], world.listenHost);
    listeners.push(config);
    servedBy.set(config.name, listener.listener.name);
  }

  const listenerStatuses: ListenerStatus[] = judged.map((listener) => ({
    name: listener.listener.name,
    supportedKinds: listener.supportedKinds,
    attachedRoutes: attachments.filter((a) => a.listeners.includes(listener.listener.name)).length,
    conditions: conditionsOf(
      listener.verdicts,
      gateway.status?.listeners?.find((s) => s.name === listener.listener.name)?.conditions,
      generation,
      world.now,
    ),
  }));
  const status: GatewayStatus = {
    addresses: world.addresses,
    conditions: conditionsOf(
      gatewayVerdicts(gateway, judged, world.addresses),
      gateway.status?.conditions,
      generation,
      world.now,
    ),
    listeners: listenerStatuses,
  };
  return { config: { listeners }, servedBy, status, routes: routeStatuses(world, attachments, backendsOf) };
}

/**
 * A Gateway that is gone (or no longer canary-l4's): the routes that name it lose the entries it
 * wrote for them; every other entry stays.
 */
export function forgetGateway(
  routes: readonly L4Route[],
  namespace: string,
  name: string,
): Map<string, RouteStatusPlan> {
  const gone: Gateway = { metadata: { name, namespace }, spec: { gatewayClassName: '', listeners: [] } };
  const plans = new Map<string, RouteStatusPlan>();
  for (const route of routes) {
    const parents = route.status?.parents ?? [];
    const kept = parents.filter((p) => !isOurEntryFor(p, route.metadata.namespace ?? '', gone));
    if (kept.length !== parents.length) plans.set(routeKey(route), { route, parents: kept });
  }
  return plans;
}

function resolveRoute(route: L4Route, world: GatewayWorld): ResolvedBackend[] {
  const namespace = route.metadata.namespace ?? '';
  return route.spec.rules
    .flatMap((rule) => rule.backendRefs ?? [])
    .map((ref) => resolveBackend(ref, route.kind, namespace, world));
}

/** The route that carries a listener's traffic: of those attached, the oldest, then by namespace/name (the spec's tie-break). */
function oldestAttached(listener: JudgedListener, attachments: readonly Attachment[]): L4Route | undefined {
  const attached = attachments.filter((a) => a.listeners.includes(listener.listener.name)).map((a) => a.route);
  return attached.sort(
    (a, b) =>
      (a.metadata.creationTimestamp ?? '').localeCompare(b.metadata.creationTimestamp ?? '') ||
      `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`),
  )[0];
}

function listenerConfig(
  judged: JudgedListener,
  backends: readonly ResolvedBackend[],
  listenHost: string | undefined,
): ListenerConfig {
  return controllerListener(
    l4ListenerName(judged.listener.name),
    judged.protocol === 'UDP' ? 'udp' : 'tcp',
    { host: listenHost, port: judged.listener.port },
    backendConfigs(backends),
  );
}

/** One backend per Service port (a ref listed twice adds its weights); a refused ref keeps its share, refused. */
function backendConfigs(backends: readonly ResolvedBackend[]): BackendConfig[] {
  const byName = new Map<string, BackendConfig>();
  for (const backend of backends) {
    const name = l4BackendName(backend.ref.name, backend.namespace, backend.ref.port);
    const before = byName.get(name);
    if (before !== undefined) {
      byName.set(name, { ...before, weight: before.weight + backend.weight });
      continue;
    }
    byName.set(
      name,
      backend.kind === 'service'
        ? { name, host: backend.host, port: backend.port, weight: backend.weight }
        : { name, host: '', port: 0, weight: backend.weight, refuse: true },
    );
  }
  return [...byName.values()];
}

function gatewayVerdicts(
  gateway: Gateway,
  judged: readonly JudgedListener[],
  addresses: readonly GatewayAddress[],
): Verdict[] {
  const refused = judged.filter(
    (listener) => !listener.verdicts.some((v) => v.type === ConditionType.Accepted && v.status === 'True'),
  );
  const unsupportedAddress = (gateway.spec.addresses ?? []).find(
    (address) => (address.type ?? 'IPAddress') !== 'IPAddress' && address.type !== 'Hostname',
  );
  const unusable = (gateway.spec.addresses ?? []).filter((asked) => !addresses.some((a) => a.value === asked.value));
  const none = refused.length === judged.length;
  const accepted =
    unsupportedAddress !== undefined
      ? verdict(
          ConditionType.Accepted,
          false,
          Reason.UnsupportedAddress,
          `spec.addresses type ${unsupportedAddress.type} is not supported: use IPAddress or Hostname`,
        )
      : refused.length > 0
        ? verdict(
            ConditionType.Accepted,
            !none,
            Reason.ListenersNotValid,
            none
              ? 'no listener can be served: see their conditions (canary-l4 serves TCP and UDP listeners)'
              : `listener${refused.length === 1 ? '' : 's'} ${refused.map((l) => l.listener.name).join(', ')} not served: see their conditions`,
          )
        : verdict(ConditionType.Accepted, true, Reason.Accepted, 'every listener is served');
  const programmed =
    accepted.status === 'False'
      ? verdict(ConditionType.Programmed, false, Reason.Invalid, 'not accepted: nothing to serve')
      : addresses.length === 0
        ? verdict(
            ConditionType.Programmed,
            false,
            Reason.AddressNotAssigned,
            'no address yet: waiting for the Service in front of this Gateway to have one',
          )
        : unusable.length > 0
          ? verdict(
              ConditionType.Programmed,
              false,
              Reason.AddressNotUsable,
              `spec.addresses ${unusable.map((a) => a.value).join(', ')} cannot be served here: this Gateway is reached at ${addresses.map((a) => a.value).join(', ')}`,
            )
          : verdict(
              ConditionType.Programmed,
              true,
              Reason.Programmed,
              `served at ${addresses.map((a) => a.value).join(', ')}`,
            );
  return [accepted, programmed];
}

function routeStatuses(
  world: GatewayWorld,
  attachments: readonly Attachment[],
  backendsOf: ReadonlyMap<string, readonly ResolvedBackend[]>,
): Map<string, RouteStatusPlan> {
  const plans = new Map<string, RouteStatusPlan>();
  for (const route of world.routes) {
    const namespace = route.metadata.namespace ?? '';
    const mine = attachments.filter((a) => a.route === route);
    const hadEntry = (route.status?.parents ?? []).some((p) => isOurEntryFor(p, namespace, world.gateway));
    if (mine.length === 0 && !hadEntry) continue;
    const resolved = resolvedRefs(backendsOf.get(routeKey(route)) ?? []);
    const generation = route.metadata.generation;
    const ours: RouteParentStatus[] = mine.map((attachment) => {
      const previous = route.status?.parents?.find(
        (p) =>
          p.controllerName === GATEWAY_CONTROLLER_NAME && sameParentRef(p.parentRef, attachment.parentRef, namespace),
      );
      return {
        parentRef: spelledParentRef(attachment.parentRef, namespace),
        controllerName: GATEWAY_CONTROLLER_NAME,
        conditions: conditionsOf([attachment.accepted, resolved], previous?.conditions, generation, world.now),
      };
    });
    const others = (route.status?.parents ?? []).filter((p) => !isOurEntryFor(p, namespace, world.gateway));
    plans.set(routeKey(route), { route, parents: [...others, ...ours] });
  }
  return plans;
}

function resolvedRefs(backends: readonly ResolvedBackend[]): Verdict {
  const refused = backends.filter((b) => b.kind === 'refused');
  const first = refused[0];
  if (first === undefined)
    return verdict(ConditionType.ResolvedRefs, true, Reason.ResolvedRefs, 'every backendRef resolves');
  return verdict(
    ConditionType.ResolvedRefs,
    false,
    first.reason,
    `${refused.map((b) => b.message).join('; ')}; ${refused.length === 1 ? 'its' : 'their'} share of the traffic is refused`,
  );
}

function isOurEntryFor(entry: RouteParentStatus, routeNamespace: string, gateway: Gateway): boolean {
  return entry.controllerName === GATEWAY_CONTROLLER_NAME && refersToGateway(entry.parentRef, routeNamespace, gateway);
}

function sameParentRef(
  a: RouteParentStatus['parentRef'],
  b: RouteParentStatus['parentRef'],
  routeNamespace: string,
): boolean {
  const x = spelledParentRef(a, routeNamespace);
  const y = spelledParentRef(b, routeNamespace);
  return (
    x.group === y.group &&
    x.kind === y.kind &&
    x.namespace === y.namespace &&
    x.name === y.name &&
    x.sectionName === y.sectionName &&
    x.port === y.port
  );
}
