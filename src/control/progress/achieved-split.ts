// The split achieved since the release began (status.ports[].achieved): the new connections and
// flows each side got, as status held them plus one interval's. Pure.

import type { AchievedSplit, PortStatus } from '../../api/status-types.ts';
import { portKeyId } from '../service/ports.ts';
import type { Evidence } from './analysis/evidence.ts';
import { newFlows, sides } from './analysis/pooling.ts';

/** The split achieved since the release began: what status held, plus this interval. */
export function achievedWith(evidence: Evidence, ports: readonly PortStatus[]): Map<string, AchievedSplit> {
  const { byPort } = sides(evidence, ports);
  return new Map(
    ports.map((port) => {
      const delta = byPort.get(portKeyId(port));
      const stable = (port.achieved?.stable ?? 0) + (delta === undefined ? 0 : newFlows(delta.stable));
      const canary = (port.achieved?.canary ?? 0) + (delta === undefined ? 0 : newFlows(delta.canary));
      return [portKeyId(port), { stable, canary, canaryPercent: percent(canary, stable + canary) }];
    }),
  );
}

function percent(part: number, whole: number): number {
  return whole === 0 ? 0 : Math.round((part / whole) * 1000) / 10;
}
