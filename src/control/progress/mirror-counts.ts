// What mirroring to the canary did on each port since the release began (status.ports[].mirror):
// the recorded counts plus a new interval's, every replica summed. Pure.

import type { MirrorCounts, PortStatus } from '../../api/status-types.ts';
import { MIRROR_OUTCOMES } from '../../counters/snapshot.ts';
import { listenerName } from '../service/l4.ts';
import { portKeyId } from '../service/ports.ts';
import type { Evidence } from './analysis/evidence.ts';

/** The mirror's counts of one interval on a port (its listener's canary backend), or undefined. */
export function intervalMirrorCounts(evidence: Evidence, port: PortStatus): MirrorCounts | undefined {
  return evidence.listeners[listenerName(port)]?.canary?.mirror;
}

/**
 * By port key: the recorded counts plus the interval's; a port that never mirrored anything gets
 * none (its status stays as it was before mirroring existed).
 */
export function mirrorCountsWith(
  evidence: Evidence | undefined,
  ports: readonly PortStatus[],
): Map<string, MirrorCounts> {
  const counts = new Map<string, MirrorCounts>();
  for (const port of ports) {
    const delta = evidence === undefined ? undefined : intervalMirrorCounts(evidence, port);
    const recorded = port.mirror;
    if (recorded === undefined && (delta === undefined || delta.mirrored === 0)) continue;
    counts.set(
      portKeyId(port),
      Object.fromEntries(
        MIRROR_OUTCOMES.map((outcome) => [outcome, (recorded?.[outcome] ?? 0) + (delta?.[outcome] ?? 0)]),
      ) as unknown as MirrorCounts,
    );
  }
  return counts;
}
