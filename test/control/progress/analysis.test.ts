// The judgement of an interval (src/control/progress/analysis.ts), signal by signal.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { judge, type Evidence } from '../../../src/control/progress/analysis.ts';
import type { PortStatus } from '../../../src/api/types.ts';
import type { BackendCounters } from '../../../src/dataplane/counters.ts';

const BUCKETS_MS = [1, 10];
const PORT: PortStatus = { service: 'web', port: 80, protocol: 'TCP', proxyPort: 8080, weight: 10, override: null, served: 10 };

function counters(values: Partial<BackendCounters>): BackendCounters {
  return { connections: 0, connectErrors: 0, resets: 0, connectLatency: [0, 0], sessionsReplied: 0, markedDown: 0, ...values };
}

function evidence(stable: Partial<BackendCounters>, canary: Partial<BackendCounters>): Evidence {
  return { at: '2026-01-01T00:00:00.000Z', intervalMs: 30_000, replicas: 1, latencyBucketsMs: BUCKETS_MS, listeners: { 'web-80-tcp': { forked: counters(stable), canary: counters(canary) } }, weightsMoved: [] };
}

describe('connectErrorRate.maxAboveStable', () => {
  const spec = { minSamples: 10, thresholds: { connectErrorRate: { maxAboveStable: 0.02 } } };
  // The stable side fails 10 % of its attempts (5 000 of 50 000), and resets none.
  const stable = { connections: 45_000, connectErrors: 5_000 };
  const signalOf = (canary: Partial<BackendCounters>) => judge(evidence(stable, canary), spec, [PORT], undefined).signals.find((item) => item.name === 'connectErrorRate');

  it('is judged against the stable side\'s own connect-error rate over the same interval, which it reports', () => {
    const same = signalOf({ connections: 4_500, connectErrors: 500 });
    assert.equal(same?.stable, 0.1, 'the stable side\'s connect errors of its attempts');
    assert.equal(same?.canary, 0.1);
    assert.notEqual(same?.verdict, 'Failed', 'a canary failing as often as its stable is within maxAboveStable');
    const worse = signalOf({ connections: 3_500, connectErrors: 1_500 });
    assert.deepEqual([worse?.canary, worse?.stable, worse?.verdict], [0.3, 0.1, 'Failed']);
  });
});
