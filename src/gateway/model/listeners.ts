// A Gateway's listeners judged as an L4 implementation must: TCP and UDP are served, every other
// protocol is refused by name; the route kinds a listener allows (its supportedKinds, and
// InvalidRouteKinds for the rest); two listeners on one port and protocol conflict (the first keeps
// it); a port the process keeps for itself (the admin port) or could not bind is unavailable.
import {
  ConditionType,
  GATEWAY_GROUP,
  type L4Protocol,
  Reason,
  type RouteKind,
  servedProtocol,
} from '../../api/gateway/names.ts';
import type { GatewayListener, RouteGroupKind } from '../../api/gateway/types.ts';
import { type Verdict, verdict } from './conditions.ts';

const KIND_OF: Readonly<Record<L4Protocol, RouteKind>> = { TCP: 'TCPRoute', UDP: 'UDPRoute' };

export interface JudgedListener {
  readonly listener: GatewayListener;
  /** TCP or UDP when this listener is served; undefined when refused. */
  readonly protocol: L4Protocol | undefined;
  readonly supportedKinds: readonly RouteGroupKind[];
  /** Routes may attach to it (it is served, and allows at least its own kind). */
  readonly attachable: boolean;
  readonly verdicts: readonly Verdict[];
}

export interface ListenerContext {
  readonly reservedPorts: ReadonlySet<number>;
  /** Listener name → why its port could not be bound (from the last apply). */
  readonly unbindable: ReadonlyMap<string, string>;
}

export function judgeListeners(listeners: readonly GatewayListener[], context: ListenerContext): JudgedListener[] {
  const portHolders = new Map<string, string>();
  return listeners.map((listener) => {
    const protocol = servedProtocol(listener.protocol);
    if (protocol === undefined) return refusedProtocol(listener);
    const own = KIND_OF[protocol];
    const asked = listener.allowedRoutes?.kinds ?? [{ group: GATEWAY_GROUP, kind: own }];
    const supportedKinds = asked
      .filter((kind) => (kind.group ?? GATEWAY_GROUP) === GATEWAY_GROUP && kind.kind === own)
      .map((kind) => ({ group: GATEWAY_GROUP, kind: kind.kind }));
    const invalidKinds = asked.filter((kind) => !supportedKinds.some((s) => s.kind === kind.kind && sameGroup(kind)));
    const portKey = `${listener.port}/${protocol}`;
    const holder = portHolders.get(portKey);
    if (holder === undefined) portHolders.set(portKey, listener.name);
    const unavailable = context.reservedPorts.has(listener.port)
      ? `port ${listener.port} is this process's admin port; choose another port for the listener (or --admin-port)`
      : context.unbindable.get(listener.name);
    const accepted = holder === undefined && unavailable === undefined;
    const verdicts = [
      holder !== undefined
        ? verdict(ConditionType.Accepted, false, Reason.PortUnavailable, `listener ${holder} already serves ${portKey}`)
        : unavailable !== undefined
          ? verdict(ConditionType.Accepted, false, Reason.PortUnavailable, unavailable)
          : verdict(ConditionType.Accepted, true, Reason.Accepted, `serves ${protocol} on port ${listener.port}`),
      holder === undefined
        ? verdict(ConditionType.Conflicted, false, Reason.NoConflicts, 'no other listener has this port and protocol')
        : verdict(
            ConditionType.Conflicted,
            true,
            Reason.HostnameConflict,
            `listener ${holder} has port ${listener.port} and protocol ${protocol} too, and L4 has no hostname to tell them apart`,
          ),
      invalidKinds.length === 0
        ? verdict(ConditionType.ResolvedRefs, true, Reason.ResolvedRefs, 'every route kind allowed is supported')
        : verdict(
            ConditionType.ResolvedRefs,
            false,
            Reason.InvalidRouteKinds,
            `a ${protocol} listener takes ${own} only, not ${invalidKinds.map(formatKind).join(', ')}`,
          ),
      accepted
        ? verdict(ConditionType.Programmed, true, Reason.Programmed, `listening on ${protocol} port ${listener.port}`)
        : verdict(ConditionType.Programmed, false, Reason.Invalid, 'not served: see Accepted'),
    ];
    return { listener, protocol, supportedKinds, attachable: accepted && supportedKinds.length > 0, verdicts };
  });
}

function refusedProtocol(listener: GatewayListener): JudgedListener {
  const message = `protocol ${listener.protocol} is not served by canary-l4, an L4 implementation: use TCP or UDP (with a TCPRoute or a UDPRoute)`;
  return {
    listener,
    protocol: undefined,
    supportedKinds: [],
    attachable: false,
    verdicts: [
      verdict(ConditionType.Accepted, false, Reason.UnsupportedProtocol, message),
      verdict(ConditionType.Conflicted, false, Reason.NoConflicts, 'not served'),
      verdict(ConditionType.ResolvedRefs, true, Reason.ResolvedRefs, 'not served'),
      verdict(ConditionType.Programmed, false, Reason.Invalid, message),
    ],
  };
}

function sameGroup(kind: RouteGroupKind): boolean {
  return (kind.group ?? GATEWAY_GROUP) === GATEWAY_GROUP;
}

function formatKind(kind: RouteGroupKind): string {
  return (kind.group ?? GATEWAY_GROUP) === GATEWAY_GROUP ? kind.kind : `${kind.group}/${kind.kind}`;
}
