// The counts of both sides, canary and stable, pooled: an interval's per-side counters summed
// over the release's ports (and kept by port), added to the pool of the intervals still
// undecided before it, and what a side's pooled counts say of its samples. Pure.

import type { AnalysisStatus, PooledSide, PortStatus } from '../../../api/status-types.ts';
import type { BackendCounters } from '../../../counters/snapshot.ts';
import { listenerName } from '../../service/l4.ts';
import { portKeyId } from '../../service/ports.ts';
import type { Evidence } from './evidence.ts';

type Side = { -readonly [Key in keyof PooledSide]: PooledSide[Key] extends readonly number[] ? number[] : number };

const emptySide = (buckets: number): Side => ({
  attempts: 0,
  errors: 0,
  established: 0,
  resets: 0,
  latency: new Array<number>(buckets).fill(0),
  udpSessions: 0,
  udpReplied: 0,
  markedDown: 0,
  heldOut: 0,
  heldOutResets: 0,
  udpHeldOut: 0,
  connectResets: 0,
  mirrored: 0,
  mirrorCompared: 0,
  mirrorDifferent: 0,
  mirrorFailed: 0,
});

/** New connections (TCP) and flows (UDP) a side got. */
export const newFlows = (side: PooledSide) => side.established + side.udpSessions;
/** What passive health kept from a side: the connections and flows its weight offered it while it was held out. */
export const heldOutOf = (side: PooledSide) => (side.heldOut ?? 0) + (side.heldOutResets ?? 0) + (side.udpHeldOut ?? 0);
/** What a side was asked: connection attempts (TCP) and flows (UDP), those it was held out of included. */
const asked = (side: PooledSide) => side.attempts + side.udpSessions + heldOutOf(side);
/** The canary's samples: what it was asked, and (a dark canary at weight 0) the flows mirrored to it. */
export const samplesOf = (side: PooledSide) => asked(side) + side.mirrored;

function add(side: Side, counters: BackendCounters | undefined, udp: boolean): void {
  if (counters === undefined) return;
  side.markedDown += counters.markedDown;
  const held = counters.heldOut ?? { connect: 0, reset: 0 };
  if (udp) side.udpHeldOut! += held.connect + held.reset;
  else {
    side.heldOut! += held.connect;
    side.heldOutResets! += held.reset;
  }
  const mirror = counters.mirror;
  if (mirror !== undefined) {
    side.mirrored += mirror.mirrored;
    side.mirrorCompared += mirror.compared;
    side.mirrorDifferent += mirror.different;
    side.mirrorFailed += mirror.missing + mirror.dropped;
  }
  if (udp) {
    side.udpSessions += counters.connections;
    side.udpReplied += counters.sessionsReplied;
    return;
  }
  side.attempts += counters.connections + counters.connectErrors;
  side.errors += counters.connectErrors;
  side.connectResets! += counters.connectResets ?? 0;
  side.established += counters.connections;
  side.resets += counters.resets;
  counters.connectLatency.forEach((count, index) => {
    side.latency[index] = (side.latency[index] ?? 0) + count;
  });
}

export function addSides(into: Side, from: PooledSide): void {
  // A pool written before mirroring was counted has no mirror fields: 0.
  for (const key of [
    'attempts',
    'errors',
    'established',
    'resets',
    'udpSessions',
    'udpReplied',
    'markedDown',
    'heldOut',
    'heldOutResets',
    'udpHeldOut',
    'connectResets',
    'mirrored',
    'mirrorCompared',
    'mirrorDifferent',
    'mirrorFailed',
  ] as const)
    into[key] = (into[key] ?? 0) + (from[key] ?? 0);
  from.latency.forEach((count, index) => {
    into.latency[index] = (into.latency[index] ?? 0) + count;
  });
}

interface PortSides {
  readonly stable: Side;
  readonly canary: Side;
  /** Milliseconds passive health held the canary out, every replica summed. */
  readonly canaryOutMs: number;
}

export function sides(
  evidence: Evidence,
  ports: readonly PortStatus[],
): { stable: Side; canary: Side; byPort: Map<string, PortSides> } {
  const buckets = evidence.latencyBucketsMs.length;
  const total = { stable: emptySide(buckets), canary: emptySide(buckets) };
  const byPort = new Map<string, PortSides>();
  for (const port of ports) {
    const counters = evidence.listeners[listenerName(port)];
    const udp = port.protocol === 'UDP';
    const own = { stable: emptySide(buckets), canary: emptySide(buckets) };
    for (const [side, backend] of [
      ['stable', 'forked'],
      ['canary', 'canary'],
    ] as const) {
      add(total[side], counters?.[backend], udp);
      add(own[side], counters?.[backend], udp);
    }
    byPort.set(portKeyId(port), { ...own, canaryOutMs: counters?.canary?.outMs ?? 0 });
  }
  return { ...total, byPort };
}

/** The pool this interval adds to: the previous one while it was inconclusive (same buckets), else none. */
export function poolOf(
  previous: AnalysisStatus | undefined,
  buckets: number,
): { intervals: number; stable: Side; canary: Side } {
  const pool = { intervals: 0, stable: emptySide(buckets), canary: emptySide(buckets) };
  const before = previous?.verdict === 'Inconclusive' ? previous.pooled : undefined;
  if (before === undefined || before.canary.latency.length !== buckets || before.stable.latency.length !== buckets)
    return pool;
  addSides(pool.stable, before.stable);
  addSides(pool.canary, before.canary);
  return { ...pool, intervals: before.intervals };
}
