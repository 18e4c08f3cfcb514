// canaryShare: a canary that got far less than its weight's share of a port's new connections or
// flows over the time it was eligible is starved (refusing, or not reached). Pure.

import type { PortStatus, SignalResult } from '../../../api/status-types.ts';
import { listenerName, servedWeight } from '../../service/l4.ts';
import { portKeyId } from '../../service/ports.ts';
import { rateBound } from './confidence.ts';
import type { Evidence } from './evidence.ts';
import { newFlows, sides } from './pooling.ts';
import { roundRate } from './signals.ts';

/** Below this share of what its weight asks over the time it was eligible, a canary is starved (refusing, or not reached). */
const STARVED_SHARE = 0.5;

/**
 * A canary that got far less than its share of a port's new connections or flows over the time it
 * was eligible (not taken out by passive health): its weight asks `weight` % of them while eligible,
 * and it fails once the counts show it under half that. Not judged on a port whose weights moved
 * during the interval (its share then follows neither weight), nor on one with client affinity (its
 * share is its clients' hashes: a handful of clients can leave a healthy canary with none). Listed
 * only when it fails.
 */
export function shareSignals(
  evidence: Evidence,
  ports: readonly PortStatus[],
  affinity: ReadonlySet<string>,
  confidence: number,
): SignalResult[] {
  const results: SignalResult[] = [];
  const { byPort } = sides(evidence, ports);
  const moved = new Set(evidence.weightsMoved);
  for (const port of ports) {
    if (moved.has(listenerName(port)) || affinity.has(listenerName(port))) continue;
    const weight = servedWeight(port);
    const split = byPort.get(portKeyId(port));
    if (split === undefined || weight <= 0 || weight >= 100) continue;
    const eligible = Math.min(
      1,
      Math.max(0, 1 - split.canaryOutMs / (evidence.intervalMs * Math.max(1, evidence.replicas))),
    );
    const least = (weight / 100) * eligible * STARVED_SHARE;
    const counts = { count: newFlows(split.canary), of: newFlows(split.stable) + newFlows(split.canary) };
    if (counts.of === 0 || rateBound(counts, confidence, 'upper') >= least) continue;
    results.push({
      name: 'canaryShare',
      canary: roundRate(counts.count / counts.of),
      stable: null,
      verdict: 'Failed',
      counts: { canary: counts, stable: null },
      threshold: `at least ${Math.round(least * 1000) / 10}% of ${port.service}:${port.port}/${port.protocol} (weight ${weight}%, eligible ${Math.round(eligible * 100)}% of the interval)`,
    });
  }
  return results;
}
