// Where the attempts a side failed without serving them count (src/control/progress/attribution.ts):
// by which of connectErrorRate and resetRate the user gates on, one row per choice.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { attributed } from '../../../src/control/progress/analysis/attribution.ts';
import type { PooledSide } from '../../../src/api/status-types.ts';

// 10 connections offered while failed connects held it out, 5 while resets did, 3 UDP flows; of its
// 2 failed connects, 1 the backend reset.
const SIDE: PooledSide = {
  attempts: 100,
  errors: 2,
  established: 98,
  resets: 1,
  latency: [0],
  udpSessions: 20,
  udpReplied: 20,
  markedDown: 2,
  heldOut: 10,
  heldOutResets: 5,
  udpHeldOut: 3,
  connectResets: 1,
  mirrored: 0,
  mirrorCompared: 0,
  mirrorDifferent: 0,
  mirrorFailed: 0,
};

const cases: readonly [
  title: string,
  thresholds: Record<string, unknown>,
  side: Partial<PooledSide>,
  heldOutIn: Record<string, number>,
][] = [
  [
    'nothing gated: each take-out under its own cause',
    {},
    { attempts: 110, errors: 12, established: 103, resets: 6, udpSessions: 23 },
    { connectErrorRate: 10, resetRate: 5, udpReplyRate: 3 },
  ],
  [
    'connectErrorRate alone: the reset take-outs are failed connects too',
    { connectErrorRate: { max: 0.01 } },
    { attempts: 115, errors: 17, established: 98, resets: 1, udpSessions: 23 },
    { connectErrorRate: 15, resetRate: 0, udpReplyRate: 3 },
  ],
  [
    'resetRate alone: the connect take-outs and the failed connects are resets',
    { resetRate: { max: 0.01 } },
    { attempts: 100, errors: 2, established: 115, resets: 18, udpSessions: 23 },
    { connectErrorRate: 0, resetRate: 15, udpReplyRate: 3 },
  ],
  [
    'both: a connect the backend reset is a reset',
    { connectErrorRate: { max: 0.01 }, resetRate: { max: 0.01 } },
    { attempts: 110, errors: 11, established: 104, resets: 7, udpSessions: 23 },
    { connectErrorRate: 10, resetRate: 5, udpReplyRate: 3 },
  ],
];

describe('attributed', () => {
  for (const [title, thresholds, side, heldOutIn] of cases) {
    it(title, () => {
      const result = attributed(SIDE, thresholds);
      const { attempts, errors, established, resets, udpSessions } = result.side;
      assert.deepEqual({ attempts, errors, established, resets, udpSessions }, side);
      assert.deepEqual(result.heldOutIn, heldOutIn);
    });
  }

  it('a side nothing was kept from, and no connect failed, is left as it was', () => {
    const clean = { ...SIDE, attempts: 98, errors: 0, heldOut: 0, heldOutResets: 0, udpHeldOut: 0, connectResets: 0 };
    for (const [, thresholds] of cases) assert.deepEqual(attributed(clean, thresholds).side, clean);
  });
});
