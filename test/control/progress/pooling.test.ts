// The counts of both sides pooled (src/control/progress/pooling.ts): an interval summed over the
// release's ports and kept by port, the pool it adds to, and what a side's counts say of its samples.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  addSides,
  heldOutOf,
  newFlows,
  poolOf,
  samplesOf,
  sides,
} from '../../../src/control/progress/analysis/pooling.ts';
import type { Evidence } from '../../../src/control/progress/analysis/evidence.ts';
import type { AnalysisStatus, PooledSide, PortStatus } from '../../../src/api/status-types.ts';
import type { BackendCounters } from '../../../src/counters/snapshot.ts';

const TCP: PortStatus = {
  service: 'web',
  port: 80,
  protocol: 'TCP',
  proxyPort: 8080,
  weight: 10,
  override: null,
  served: 10,
};
const UDP: PortStatus = {
  service: 'dns',
  port: 53,
  protocol: 'UDP',
  proxyPort: 8053,
  weight: 10,
  override: null,
  served: 10,
};

function counters(values: Partial<BackendCounters>): BackendCounters {
  return {
    connections: 0,
    connectErrors: 0,
    resets: 0,
    connectLatency: [0, 0],
    sessionsReplied: 0,
    markedDown: 0,
    ...values,
  };
}

const EVIDENCE: Evidence = {
  at: '2026-01-01T00:00:00.000Z',
  intervalMs: 2_000,
  replicas: 1,
  latencyBucketsMs: [1, 10],
  weightsMoved: [],
  listeners: {
    'web-80-tcp': {
      forked: counters({ connections: 90, connectErrors: 10, resets: 2, connectLatency: [5, 85] }),
      canary: counters({
        connections: 8,
        connectErrors: 1,
        connectResets: 1,
        markedDown: 1,
        outMs: 500,
        heldOut: { connect: 3, reset: 1 },
        mirror: { mirrored: 4, compared: 3, equal: 2, different: 1, missing: 1, dropped: 0 },
      }),
    },
    'dns-53-udp': {
      forked: counters({ connections: 30, sessionsReplied: 29 }),
      canary: counters({ connections: 7, sessionsReplied: 6, heldOut: { connect: 2, reset: 0 } }),
    },
    // Not a port of the release: left out.
    'other-1-tcp': { canary: counters({ connections: 1_000 }) },
  },
};

const zero = (latency: number[]): PooledSide => ({
  attempts: 0,
  errors: 0,
  established: 0,
  resets: 0,
  latency,
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

describe('sides', () => {
  const { stable, canary, byPort } = sides(EVIDENCE, [TCP, UDP]);
  const cases: readonly [title: string, actual: PooledSide, expected: PooledSide][] = [
    [
      'the stable side: TCP attempts are connections and failed connects, UDP flows its sessions',
      stable,
      { ...zero([5, 85]), attempts: 100, errors: 10, established: 90, resets: 2, udpSessions: 30, udpReplied: 29 },
    ],
    [
      'the canary: its take-outs, held-out offers by cause (UDP apart) and its mirror',
      canary,
      {
        ...zero([0, 0]),
        attempts: 9,
        errors: 1,
        established: 8,
        connectResets: 1,
        udpSessions: 7,
        udpReplied: 6,
        markedDown: 1,
        heldOut: 3,
        heldOutResets: 1,
        udpHeldOut: 2,
        mirrored: 4,
        mirrorCompared: 3,
        mirrorDifferent: 1,
        mirrorFailed: 1,
      },
    ],
    [
      "the TCP port's own canary",
      byPort.get('web:80/TCP')?.canary ?? zero([]),
      {
        ...zero([0, 0]),
        attempts: 9,
        errors: 1,
        established: 8,
        connectResets: 1,
        markedDown: 1,
        heldOut: 3,
        heldOutResets: 1,
        mirrored: 4,
        mirrorCompared: 3,
        mirrorDifferent: 1,
        mirrorFailed: 1,
      },
    ],
    [
      "the UDP port's own stable side",
      byPort.get('dns:53/UDP')?.stable ?? zero([]),
      { ...zero([0, 0]), udpSessions: 30, udpReplied: 29 },
    ],
  ];
  for (const [title, actual, expected] of cases) it(title, () => assert.deepEqual(actual, expected));

  it('keeps the time passive health held the canary out, by port', () => {
    assert.deepEqual(
      [...byPort].map(([key, port]) => [key, port.canaryOutMs]),
      [
        ['web:80/TCP', 500],
        ['dns:53/UDP', 0],
      ],
    );
  });
});

describe("what a side's counts say", () => {
  const side: PooledSide = {
    ...zero([0]),
    attempts: 9,
    established: 8,
    udpSessions: 7,
    heldOut: 3,
    heldOutResets: 1,
    udpHeldOut: 2,
    mirrored: 4,
  };
  const cases: readonly [name: string, value: number, expected: number][] = [
    ['newFlows: connections established and flows', newFlows(side), 15],
    ['heldOutOf: what passive health kept from it', heldOutOf(side), 6],
    ['samplesOf: asked, held out included, and mirrored', samplesOf(side), 9 + 7 + 6 + 4],
    [
      'heldOutOf a pool written before they were counted',
      heldOutOf({ ...side, heldOut: undefined, heldOutResets: undefined, udpHeldOut: undefined }),
      0,
    ],
  ];
  for (const [name, value, expected] of cases) it(name, () => assert.equal(value, expected));
});

describe('poolOf', () => {
  const pooled = { intervals: 2, stable: { ...zero([1, 2]), attempts: 50 }, canary: { ...zero([3, 4]), attempts: 5 } };
  const status = (verdict: AnalysisStatus['verdict'], pool = pooled): AnalysisStatus => ({
    at: '2026-01-01T00:00:00.000Z',
    intervalMs: 2_000,
    replicas: 1,
    samples: 5,
    verdict,
    confidence: 0.99,
    signals: [],
    failures: 0,
    message: '',
    // A pool on a decisive verdict too: the verdict, not the pool's presence, decides.
    pooled: pool,
  });
  const fresh = { intervals: 0, stable: zero([0, 0]), canary: zero([0, 0]) };
  const cases: readonly [title: string, previous: AnalysisStatus | undefined, expected: typeof fresh][] = [
    ['no interval before: a fresh pool', undefined, fresh],
    ['after an inconclusive interval: its pool', status('Inconclusive'), pooled],
    ['after a pass: afresh', status('Passed'), fresh],
    ['after a failure: afresh', status('Failed'), fresh],
    [
      'a pool of other latency buckets: afresh',
      status('Inconclusive', { ...pooled, canary: { ...pooled.canary, latency: [1] } }),
      fresh,
    ],
  ];
  for (const [title, previous, expected] of cases) it(title, () => assert.deepEqual(poolOf(previous, 2), expected));

  it('a pool written before mirroring and take-outs were counted adds as zeros', () => {
    const into = { ...zero([0]), latency: [0] };
    // As status held it before those fields existed.
    const older = {
      attempts: 3,
      errors: 0,
      established: 0,
      resets: 0,
      latency: [2],
      udpSessions: 0,
      udpReplied: 0,
      markedDown: 0,
    } as unknown as PooledSide;
    addSides(into, older);
    assert.deepEqual(into, { ...zero([2]), attempts: 3 });
  });
});
