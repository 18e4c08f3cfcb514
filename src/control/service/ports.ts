// Proxy port allocation. A proxy in a pod of its own listens on each Service port's own targetPort
// where it can, so the takeover leaves the targetPorts alone; otherwise (a proxy on a host, a
// number two ports need) the Service's targetPort points at an allocated port, which must never
// move while its key stays (the seed numbered them by position: defect D9).

import type { PortProtocol } from '../../api/spec-types.ts';

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
  return a.service < b.service
    ? -1
    : a.service > b.service
      ? 1
      : a.port - b.port || (a.protocol < b.protocol ? -1 : a.protocol > b.protocol ? 1 : 0);
}

/** A port the release serves, and the proxy port it would rather have: the Service's own targetPort. */
export interface WantedPort extends PortKey {
  /** Set when the proxy runs in a pod of its own and the port's targetPort is a number: listening on
   * it lets the takeover leave the targetPort as its owner wrote it. */
  readonly preferred?: number;
}

/**
 * One proxy port per wanted key. A key without a preferred port keeps its recorded one first (a
 * Service targets it). A key gets its preferred port when no key before it (sorted) took
 * it and it is not reserved (the admin port); a key that cannot have it — another Service port
 * of the release needs the same number for another backend — and every key without one keeps its
 * recorded port, else gets the lowest port ≥ portBase that nothing holds. A recorded port thus
 * moves only to follow a preferred one (a targetPort the owner moved). Recorded keys no longer
 * wanted free their port. Keys are served in sorted order so a retry after a lost status write
 * gives the same answer. A recorded port claimed twice (a hand-edited status) stays with the first.
 */
export function allocatePorts(
  recorded: readonly Allocation[],
  wanted: readonly WantedPort[],
  portBase: number,
  reserved: ReadonlySet<number> = new Set(),
): AllocationResult {
  const recordedById = new Map(recorded.map((allocation) => [portKeyId(allocation), allocation]));
  const sorted = [...wanted].sort(comparePortKeys);
  const taken = new Set<number>(reserved);
  const placed = new Map<string, Allocation>();
  const place = (key: WantedPort, proxyPort: number) => {
    taken.add(proxyPort);
    placed.set(portKeyId(key), { service: key.service, port: key.port, protocol: key.protocol, proxyPort });
  };
  const keepRecorded = (keys: readonly WantedPort[]) => {
    for (const key of keys) {
      const previous = recordedById.get(portKeyId(key));
      if (!placed.has(portKeyId(key)) && previous !== undefined && !taken.has(previous.proxyPort))
        place(key, previous.proxyPort);
    }
  };
  // A Service targets the recorded port of a key without a preferred one: it comes first.
  keepRecorded(sorted.filter((key) => key.preferred === undefined));
  // A key already on its preferred port keeps it: a Service selects it there now.
  keepRecorded(
    sorted.filter(
      (key) => key.preferred !== undefined && recordedById.get(portKeyId(key))?.proxyPort === key.preferred,
    ),
  );
  for (const key of sorted) {
    if (key.preferred !== undefined && !taken.has(key.preferred)) place(key, key.preferred);
  }
  keepRecorded(sorted);
  let candidate = portBase;
  for (const key of sorted) {
    if (placed.has(portKeyId(key))) continue;
    while (taken.has(candidate)) candidate += 1;
    if (candidate > MAX_PORT) {
      return { ok: false, message: `no free proxy port from ${portBase} to ${MAX_PORT} for ${portKeyId(key)}` };
    }
    place(key, candidate);
  }
  return { ok: true, allocations: [...placed.values()].sort(comparePortKeys) };
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
    const renumbered = live.find(
      (port) =>
        port.service === allocation.service &&
        port.targetPort === allocation.proxyPort &&
        !recordedIds.has(portKeyId(port)),
    );
    return renumbered === undefined
      ? allocation
      : { ...allocation, port: renumbered.port, protocol: renumbered.protocol };
  });
}
