// The L4 config of a release: one listener per allocated proxy port, splitting between the forked
// and canary copies at their cluster IPs (from the API, never DNS: seed defect D23) and the
// Service port.

import type { V1Service } from '@kubernetes/client-node';
import { readConnectionPolicies, type ConnectionPolicies } from '../../config/validate.ts';
import type { BackendConfig, L4Config, ListenerConfig } from '../../config/types.ts';
import { controllerListener } from '../../config/controller-listener.ts';
import { clusterIpOf, copyName, type CopyRole } from './copies.ts';
import { selectsProxy } from './takeover-selector.ts';
import { normalizeProtocol } from '../../api/spec.ts';
import type { CanaryReleaseSpec } from '../../api/spec-types.ts';
import type { Labels } from '../../api/names.ts';
import type { NamedProxyPort, PortStatus } from '../../api/status-types.ts';

export function listenerName(port: Pick<PortStatus, 'service' | 'port' | 'protocol'>): string {
  return `${port.service}-${port.port}-${port.protocol.toLowerCase()}`;
}

/** Canary share asked for a port: a --weight flag wins over the spec. */
export function askedWeight(port: PortStatus): number {
  return port.override ?? port.weight;
}

/** Canary share the data plane applies (the asked one unless a side has no Ready pod). */
export function servedWeight(port: PortStatus): number {
  return port.served ?? askedWeight(port);
}

/** Which sides of a Service have a Ready pod. */
export interface SideReadiness {
  readonly stable: boolean;
  readonly canary: boolean;
}

/**
 * The canary share the data plane applies: the asked one while both sides have a Ready pod; none
 * to a side that has no Ready pod while the other has one; the asked one when neither has (there is
 * nothing better to do, and the first pod up should not wait for a status write to get traffic).
 */
export function gatedWeight(asked: number, sides: SideReadiness): number {
  if (sides.stable === sides.canary) return asked;
  return sides.canary ? 100 : 0;
}

/** `web:80=20%,dns:53/UDP=5%`; a port held away from what it asks: `web:80=0% (asks 20%)`. */
export function formatWeights(ports: readonly PortStatus[]): string {
  return ports
    .map((port) => {
      const served = servedWeight(port);
      const held = served === askedWeight(port) ? '' : ` (asks ${askedWeight(port)}%)`;
      return `${port.service}:${port.port}${port.protocol === 'TCP' ? '' : `/${port.protocol}`}=${served}%${held}`;
    })
    .join(',');
}

/**
 * A listener for each port whose copies have cluster IPs. A missing copy leaves its backend out (the
 * other keeps its weight, so a port at 100 % canary with no canary refuses, as it should) rather than
 * closing a port the original Service may target; a port with neither copy gets no listener.
 */
export function buildL4Config(
  ports: readonly PortStatus[],
  services: ReadonlyMap<string, V1Service>,
  listenHost?: string,
): L4Config {
  const listeners = ports.flatMap((port): ListenerConfig[] => {
    const backends = (['forked', 'canary'] as const).flatMap((role) => backendFor(port, role, services));
    return backends.length === 0 ? [] : [listenerFor(port, backends, listenHost)];
  });
  return { listeners };
}

function backendFor(port: PortStatus, role: CopyRole, services: ReadonlyMap<string, V1Service>): BackendConfig[] {
  const host = clusterIpOf(services.get(copyName(port.service, role)));
  if (host === undefined) return [];
  const share = (weight: number): number => (role === 'canary' ? weight : 100 - weight);
  const backend = { name: role, host, port: port.port, weight: share(servedWeight(port)) };
  return [port.override == null ? backend : { ...backend, overriddenFrom: share(port.weight) }];
}

function listenerFor(
  port: PortStatus,
  backends: readonly BackendConfig[],
  listenHost: string | undefined,
): ListenerConfig {
  return controllerListener(
    listenerName(port),
    port.protocol === 'UDP' ? 'udp' : 'tcp',
    { host: listenHost, port: port.proxyPort },
    backends,
  );
}

/**
 * With the CanaryRelease gone, the listeners some Service still sends traffic to (it selects the
 * proxy and targets the port, by number or, in a pod, by a name the proxy container declares: a
 * finalizer removed by hand); the others can close.
 */
export function listenersStillTargeted(
  config: L4Config,
  services: Iterable<V1Service>,
  release: string,
  proxySelector: Labels,
  namedPorts: readonly NamedProxyPort[] = [],
): L4Config {
  const targeted = new Set<number>();
  for (const service of services) {
    if (!selectsProxy(service, release, proxySelector)) continue;
    for (const port of service.spec?.ports ?? []) {
      const target = port.targetPort ?? port.port;
      if (typeof target === 'number') targeted.add(target);
      else for (const named of namedPorts) if (named.name === target) targeted.add(named.containerPort);
    }
  }
  return { listeners: config.listeners.filter((listener) => targeted.has(listener.listen.port)) };
}

/**
 * The listeners of `config` with the connection policies their port's `config` asks for
 * (maxConnectionAgeMs, rebalanceWindowMs, drainTimeoutMs, affinity), read as a listener's are; what
 * a port leaves out is the default, which cuts nothing.
 */
export function withPortPolicies(config: L4Config, spec: CanaryReleaseSpec | undefined): L4Config {
  const byListener = policiesByListener(spec);
  if (byListener.size === 0) return config;
  return { listeners: config.listeners.map((listener) => ({ ...listener, ...byListener.get(listener.name) })) };
}

/** The listed ports' policies by listener; a port whose policies are out of bounds holds the release (spec.ts says why). */
function policiesByListener(spec: CanaryReleaseSpec | undefined): Map<string, ConnectionPolicies> {
  const byListener = new Map<string, ConnectionPolicies>();
  for (const entry of spec?.services ?? []) {
    for (const port of entry.ports ?? []) {
      byListener.set(
        listenerName({ service: entry.service, port: port.port, protocol: normalizeProtocol(port.protocol) }),
        readConnectionPolicies(port.config ?? {}, (key) => key, []),
      );
    }
  }
  return byListener;
}

/** Listeners whose port asks for `affinity: clientIP`: their clients, not the weights alone, decide each side's share. */
export function affinityListeners(spec: CanaryReleaseSpec | undefined): ReadonlySet<string> {
  return new Set(
    [...policiesByListener(spec)].flatMap(([listener, policies]) =>
      policies.affinity === 'clientIP' ? [listener] : [],
    ),
  );
}
