// Proxy port allocation. The original Service's targetPorts point at these ports, so a port, once
// given, must never move while its key stays (the seed numbered them by position: defect D9).

import type { PortProtocol } from '../../api/types.ts';

export interface PortKey {
  readonly service: string;
  readonly port: number;
  readonly protocol: PortProtocol;
}

export interface Allocation extends PortKey {
  readonly proxyPort: number;
}

export type AllocationResult =
  | { readonly ok: true; readonly allocations: readonly Allocation[] }
  | { readonly ok: false; readonly message: string };

const MAX_PORT = 65_535;

/** A port of a live Service, as far as allocation cares. */
export interface LivePort extends PortKey {
  readonly targetPort: number | string | undefined;
}

export function portKeyId(key: PortKey): string {
  return `${key.service}:${key.port}/${key.protocol}`;
}

export function comparePortKeys(a: PortKey, b: PortKey): number {
  return a.service < b.service ? -1 : a.service > b.service ? 1 : a.port - b.port || (a.protocol < b.protocol ? -1 : a.protocol > b.protocol ? 1 : 0);
}

/**
 * One proxy port per wanted key: a key already recorded keeps its port; a new key gets the lowest
 * port ≥ portBase that no kept allocation holds. Recorded keys no longer wanted are dropped and free
 * their port. New keys are served in sorted order so a retry after a lost status write gives the same
 * answer. A recorded port claimed twice (a hand-edited status) stays with the first claimant.
 */
export function allocatePorts(recorded: readonly Allocation[], wanted: readonly PortKey[], portBase: number): AllocationResult {
  const recordedById = new Map(recorded.map((allocation) => [portKeyId(allocation), allocation]));
  const taken = new Set<number>();
  const kept: Allocation[] = [];
  const fresh: PortKey[] = [];
  for (const key of [...wanted].sort(comparePortKeys)) {
    const previous = recordedById.get(portKeyId(key));
    if (previous !== undefined && !taken.has(previous.proxyPort)) {
      taken.add(previous.proxyPort);
      kept.push({ ...key, proxyPort: previous.proxyPort });
    } else {
      fresh.push(key);
    }
  }
  let candidate = portBase;
  for (const key of fresh) {
    while (taken.has(candidate)) candidate += 1;
    if (candidate > MAX_PORT) {
      return { ok: false, message: `no free proxy port from ${portBase} to ${MAX_PORT} for ${portKeyId(key)}` };
    }
    taken.add(candidate);
    kept.push({ ...key, proxyPort: candidate });
  }
  return { ok: true, allocations: kept.sort(comparePortKeys) };
}

/**
 * Recorded allocations with their Service port renumbered since (`kubectl patch` of
 * spec.ports[i].port on a retargeted Service): the old number is gone and a new one targets the
 * recorded proxy port. The allocation moves to the new number, keeping its proxy port, so the
 * listener the Service already sends to keeps serving it.
 */
export function followRenumbered<T extends Allocation>(recorded: readonly T[], live: readonly LivePort[]): T[] {
  const liveIds = new Set(live.map(portKeyId));
  const recordedIds = new Set(recorded.map(portKeyId));
  return recorded.map((allocation) => {
    if (liveIds.has(portKeyId(allocation))) return allocation;
    const renumbered = live.find((port) => port.service === allocation.service && port.targetPort === allocation.proxyPort
      && !recordedIds.has(portKeyId(port)));
    return renumbered === undefined ? allocation : { ...allocation, port: renumbered.port, protocol: renumbered.protocol };
  });
}
