// What the takeover of a release's Services asks of the proxy pods, and what it changes on each
// Service port: the labels the pods carry (every selector key of the Services, with the release's
// value), the named targetPorts the proxy container declares, and the ports whose targetPort must
// move to a proxy port all the same (outside a pod; a number or name two ports need). Pure.

import type { V1ServicePort } from '@kubernetes/client-node';
import { portIdOf, portProtocol } from '../service/originals.ts';
import { comparePortKeys, portKeyId, type Allocation } from '../service/ports.ts';
import { takeoverKeys, takeoverValue } from '../service/takeover-selector.ts';
import { PROXY_ADMIN_PORT_NAME } from '../../api/names.ts';
import type { NamedProxyPort, TakeoverStatus } from '../../api/status-types.ts';
import type { ServicePlan } from './plan.ts';

export interface TakeoverPlan {
  readonly status: TakeoverStatus;
  /** The targetPort a Service port gets once taken over with `proxyPort`. */
  targetPortOf(plan: ServicePlan, port: V1ServicePort, proxyPort: number): number | string;
  /** Whether the takeover leaves the port's targetPort as its owner wrote it. */
  keepsTargetPort(plan: ServicePlan, allocation: Allocation): boolean;
}

export function planTakeover(
  release: string,
  plans: readonly ServicePlan[],
  allocations: readonly Allocation[],
  inPod: boolean,
  reservedPorts: ReadonlySet<number>,
): TakeoverPlan {
  const values = plans.filter((plan) => plan.takeover.design === 'values');
  const savedTarget = (plan: ServicePlan, port: number, protocol: string) =>
    plan.saved.ports.find((saved) => portIdOf(saved.port, saved.protocol) === portIdOf(port, protocol))?.targetPort;
  const planOf = new Map(values.map((plan) => [plan.name, plan] as const));
  // Named targetPorts, first come (sorted) first served: a container port name is unique in a pod.
  const namedPorts: NamedProxyPort[] = [];
  const nameHolder = new Map<string, string>([[PROXY_ADMIN_PORT_NAME, "the proxy's admin port"]]);
  if (inPod) {
    for (const allocation of [...allocations].sort(comparePortKeys)) {
      const plan = planOf.get(allocation.service);
      const target = plan === undefined ? undefined : savedTarget(plan, allocation.port, allocation.protocol);
      if (typeof target !== 'string' || nameHolder.has(target)) continue;
      nameHolder.set(target, portKeyId(allocation));
      namedPorts.push({ name: target, containerPort: allocation.proxyPort, protocol: allocation.protocol });
    }
  }
  const portHolder = new Map(allocations.map((allocation) => [allocation.proxyPort, portKeyId(allocation)] as const));
  const keeps = (plan: ServicePlan, port: number, protocol: string, proxyPort: number): boolean => {
    const target = savedTarget(plan, port, protocol);
    return (
      target === proxyPort || namedPorts.some((named) => named.name === target && named.containerPort === proxyPort)
    );
  };
  const movedPorts = values.flatMap((plan) =>
    allocations
      .filter((allocation) => allocation.service === plan.name)
      .flatMap((allocation) => {
        const target = savedTarget(plan, allocation.port, allocation.protocol) ?? allocation.port;
        if (keeps(plan, allocation.port, allocation.protocol, allocation.proxyPort)) return [];
        const why = !inPod
          ? 'the proxy runs outside a pod'
          : typeof target === 'string'
            ? `the name ${target} is ${nameHolder.get(target)}'s on the proxy container`
            : reservedPorts.has(target)
              ? `${target} is the proxy's own port`
              : `${target} is ${portHolder.get(target) ?? 'another port'}'s on the proxy pods`;
        return [`${portKeyId(allocation)}: targetPort ${target} → ${allocation.proxyPort} (${why})`];
      }),
  );
  return {
    status: {
      keys: takeoverKeys(values.map((plan) => plan.takeover.selector)),
      value: takeoverValue(release),
      namedPorts,
      movedPorts,
    },
    keepsTargetPort: (plan, allocation) =>
      plan.takeover.design === 'values' && keeps(plan, allocation.port, allocation.protocol, allocation.proxyPort),
    targetPortOf: (plan, port, proxyPort) => {
      if (plan.takeover.design !== 'values' || !keeps(plan, port.port, portProtocol(port), proxyPort)) return proxyPort;
      return savedTarget(plan, port.port, portProtocol(port)) ?? proxyPort;
    },
  };
}
