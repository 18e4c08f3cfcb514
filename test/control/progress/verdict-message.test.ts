// The message of an interval's verdict (src/control/progress/verdict-message.ts): one row per kind
// of verdict, with counts grouped by thousands and what passive health took from the canary.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { verdictMessage, type Findings } from '../../../src/control/progress/analysis/verdict-message.ts';
import type { PooledSide, SignalResult } from '../../../src/api/status-types.ts';

const side = (values: Partial<PooledSide>): PooledSide => ({
  attempts: 0,
  errors: 0,
  established: 0,
  resets: 0,
  latency: [0],
  udpSessions: 0,
  udpReplied: 0,
  markedDown: 0,
  mirrored: 0,
  mirrorCompared: 0,
  mirrorDifferent: 0,
  mirrorFailed: 0,
  ...values,
});

const FAILED: SignalResult = {
  name: 'connectErrorRate',
  canary: 0.2,
  stable: 0.01,
  threshold: 'max 0.05',
  verdict: 'Failed',
  counts: { canary: { count: 400, of: 2_000 }, stable: { count: 100, of: 10_000 } },
};
const OPEN: SignalResult = {
  name: 'resetRate',
  canary: 0.05,
  stable: 0,
  threshold: 'max 0.01',
  verdict: 'Inconclusive',
  counts: { canary: { count: 1, of: 20 }, stable: null },
};
const base: Findings = {
  verdict: 'Passed',
  failed: [],
  open: [],
  minSamples: 50,
  confidence: 0.99,
  pooled: { intervals: 3, stable: side({ attempts: 10_000 }), canary: side({ attempts: 2_700 }) },
};
const withCanary = (canary: Partial<PooledSide>, intervals = 1): Findings['pooled'] => ({
  intervals,
  stable: side({}),
  canary: side(canary),
});

const cases: readonly [title: string, findings: Findings, message: string][] = [
  [
    'passed: the samples it rests on',
    base,
    '2 700 canary connections/flows judged (3 interval(s) judged together), every threshold within at 99 % confidence',
  ],
  [
    'failed: each failed signal with its counts',
    { ...base, verdict: 'Failed', failed: [FAILED] },
    'connectErrorRate: canary 400 of 2 000, stable 100 of 10 000, threshold max 0.05, 99 % confidence',
  ],
  [
    'failed, with take-outs: what its weight offered it meanwhile',
    {
      ...base,
      verdict: 'Failed',
      failed: [{ ...FAILED, heldOut: 1_500 }],
      pooled: withCanary({ attempts: 2_000, markedDown: 2, heldOut: 1_500 }),
    },
    'connectErrorRate: canary 400 of 2 000 (1 500 of them while passive health held it out), stable 100 of 10 000, ' +
      'threshold max 0.05, 99 % confidence; passive health took the canary out 2 time(s), and the 1 500 ' +
      'connections/flows its weight offered it meanwhile count as attempts it failed ' +
      '(it was still failing a passive-health timeout after it first failed)',
  ],
  [
    'failed, taken out with nothing offered meanwhile',
    { ...base, verdict: 'Failed', failed: [FAILED], pooled: withCanary({ markedDown: 1 }) },
    'connectErrorRate: canary 400 of 2 000, stable 100 of 10 000, threshold max 0.05, 99 % confidence; ' +
      'passive health took the canary out 1 time(s)',
  ],
  [
    'still dead: the message it failed with',
    { ...base, verdict: 'Failed', stillDeadAfter: 'resetRate: canary 9 of 10' },
    'no canary sample since it failed (passive health holds it out): resetRate: canary 9 of 10',
  ],
  [
    'inconclusive: too few samples, and what an open signal lacks',
    { ...base, verdict: 'Inconclusive', open: [{ result: OPEN, lacks: 1_234 }], pooled: withCanary({ attempts: 20 }) },
    'too few samples: 20 canary connections/flows over 1 interval(s), minSamples 50; ' +
      'resetRate: canary 1 of 20, stable -, threshold max 0.01, 99 % confidence: ' +
      'about 1 234 more canary samples to decide',
  ],
  [
    'inconclusive on enough samples: a signal no count would decide',
    { ...base, verdict: 'Inconclusive', open: [{ result: OPEN, lacks: Infinity }] },
    'resetRate: canary 1 of 20, stable -, threshold max 0.01, 99 % confidence: not decided yet',
  ],
  [
    'a signal without counts shows its rates',
    {
      ...base,
      verdict: 'Failed',
      failed: [{ name: 'connectLatencyP99', canary: 12.5, stable: null, threshold: 'maxMs 10', verdict: 'Failed' }],
    },
    'connectLatencyP99: canary 12.5, stable -, threshold maxMs 10, 99 % confidence',
  ],
];

describe('verdictMessage', () => {
  for (const [title, findings, message] of cases) it(title, () => assert.equal(verdictMessage(findings), message));
});
