// The judgement of an interval (src/control/progress/verdict.ts), signal by signal, with confidence
// on the counts: a threshold fails only when the counts show the canary beyond it, evidence
// accumulates over inconclusive intervals, take-outs are their failed attempts, the share is judged
// over the time the canary was eligible, and a dead canary is still rolled back.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { judge } from '../../../src/control/progress/analysis/verdict.ts';
import type { Evidence } from '../../../src/control/progress/analysis/evidence.ts';
import type { AnalysisSpec } from '../../../src/api/spec-types.ts';
import type { AnalysisStatus, PortStatus } from '../../../src/api/status-types.ts';
import type { BackendCounters } from '../../../src/counters/snapshot.ts';

const BUCKETS_MS = [1, 10];
const PORT: PortStatus = {
  service: 'web',
  port: 80,
  protocol: 'TCP',
  proxyPort: 8080,
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

function evidence(
  stable: Partial<BackendCounters>,
  canary: Partial<BackendCounters>,
  listener = 'web-80-tcp',
): Evidence {
  return {
    at: '2026-01-01T00:00:00.000Z',
    intervalMs: 2_000,
    replicas: 1,
    latencyBucketsMs: BUCKETS_MS,
    listeners: { [listener]: { forked: counters(stable), canary: counters(canary) } },
    weightsMoved: [],
  };
}

/** Judges the intervals in turn, each with the status the previous one left. */
function judgeAll(spec: AnalysisSpec, intervals: readonly Evidence[], port = PORT): AnalysisStatus[] {
  const statuses: AnalysisStatus[] = [];
  for (const item of intervals) statuses.push(judge(item, spec, [port], statuses.at(-1)));
  return statuses;
}

describe('connectErrorRate.maxAboveStable', () => {
  const spec = { minSamples: 10, thresholds: { connectErrorRate: { maxAboveStable: 0.02 } } };
  // The stable side fails 10 % of its attempts (5 000 of 50 000), and resets none.
  const stable = { connections: 45_000, connectErrors: 5_000 };
  const signalOf = (canary: Partial<BackendCounters>) =>
    judge(evidence(stable, canary), spec, [PORT], undefined).signals.find((item) => item.name === 'connectErrorRate');

  it("is judged against the stable side's own connect-error rate over the same interval, which it reports", () => {
    const same = signalOf({ connections: 4_500, connectErrors: 500 });
    assert.equal(same?.stable, 0.1, "the stable side's connect errors of its attempts");
    assert.equal(same?.canary, 0.1);
    assert.notEqual(same?.verdict, 'Failed', 'a canary failing as often as its stable is within maxAboveStable');
    const worse = signalOf({ connections: 3_500, connectErrors: 1_500 });
    assert.deepEqual([worse?.canary, worse?.stable, worse?.verdict], [0.3, 0.1, 'Failed']);
  });
});

describe('judged with confidence on the counts', () => {
  const spec: AnalysisSpec = {
    minSamples: 10,
    failureLimit: 2,
    thresholds: { connectErrorRate: { max: 0.05 }, resetRate: { maxAboveStable: 0.01 } },
  };

  it('says the failure with counts: canary 41 of 300, stable 30 of 2 700', () => {
    const result = judge(
      evidence({ connections: 2_700, resets: 30 }, { connections: 300, resets: 41 }),
      { thresholds: { resetRate: { maxAboveStable: 0.01 } } },
      [PORT],
      undefined,
    );
    assert.equal(result.verdict, 'Failed');
    assert.equal(
      result.message,
      'resetRate: canary 41 of 300, stable 30 of 2 700, threshold maxAboveStable 0.01, 99 % confidence',
    );
    assert.deepEqual(result.signals[0]?.counts, { canary: { count: 41, of: 300 }, stable: { count: 30, of: 2_700 } });
    assert.equal(result.confidence, 0.99);
  });

  it('a raw ratio over the threshold is not a failure until the counts show it: 1 reset in 25 against 3 in 225 is inconclusive, and says what it lacks', () => {
    const result = judge(
      evidence({ connections: 225, resets: 3 }, { connections: 25, resets: 1 }),
      spec,
      [PORT],
      undefined,
    );
    assert.equal(result.verdict, 'Inconclusive');
    assert.match(
      result.message,
      /resetRate: canary 1 of 25, stable 3 of 225, threshold maxAboveStable 0.01, 99 % confidence: about [\d ]+ more canary samples to decide/,
    );
  });

  it('evidence accumulates over inconclusive intervals until it decides; a decisive verdict starts afresh', () => {
    const worse = evidence({ connections: 225, resets: 7 }, { connections: 25, resets: 4 });
    const statuses = judgeAll(spec, [worse, worse, worse, worse, worse, worse]);
    const firstFailure = statuses.findIndex((status) => status.verdict === 'Failed');
    assert.ok(firstFailure >= 1, `not on one interval alone: ${statuses[0]?.message}`);
    assert.deepEqual(
      statuses.slice(0, firstFailure).map((status) => status.pooled?.intervals),
      Array.from({ length: firstFailure }, (_, index) => index + 1),
    );
    assert.match(
      statuses[firstFailure]!.message,
      new RegExp(
        `resetRate: canary ${4 * (firstFailure + 1)} of ${25 * (firstFailure + 1)}, stable ${7 * (firstFailure + 1)} of`,
      ),
    );
    assert.equal(
      statuses[firstFailure]!.pooled,
      undefined,
      'a failure is judged on its own evidence; the next one needs fresh',
    );
  });

  it('a canary that turns bad after a long undecided stretch fails on that interval: the good counts before it do not hide it', () => {
    const healthy = evidence({ connections: 180 }, { connections: 20 });
    const statuses = judgeAll(spec, [
      ...Array.from({ length: 20 }, () => healthy),
      evidence({ connections: 180 }, { connections: 20, resets: 5 }),
    ]);
    assert.deepEqual(
      statuses.slice(0, 20).map((status) => status.verdict),
      Array.from({ length: 20 }, () => 'Inconclusive'),
      'resets judged against a one-point margin stay undecided on 400 samples',
    );
    assert.equal(statuses.at(-1)?.verdict, 'Failed');
    assert.match(statuses.at(-1)!.message, /^resetRate: canary 5 of 20, stable 0 of 180/);
  });

  it('a blip: one refused connection, then out of rotation for a while, then fine, is never a failed interval', () => {
    const statuses = judgeAll(spec, [
      evidence({ connections: 180 }, { connectErrors: 1, markedDown: 1, outMs: 1_900 }),
      ...Array.from({ length: 4 }, () => evidence({ connections: 200 }, { outMs: 2_000 })),
      evidence({ connections: 180 }, { connections: 20, outMs: 500 }),
      evidence({ connections: 180 }, { connections: 20 }),
    ]);
    assert.deepEqual(
      statuses.map((status) => status.failures),
      [0, 0, 0, 0, 0, 0, 0],
    );
    assert.ok(
      statuses.every((status) => status.verdict !== 'Failed'),
      statuses.map((status) => status.message).join('\n'),
    );
    assert.match(statuses[0]!.message, /passive health took the canary out 1 time\(s\)$/);
  });

  it('a dead canary (every attempt fails, recovery probes too) fails once the attempts show it, and stays failed while held out', () => {
    const refused = evidence({ connections: 200 }, { connectErrors: 1, markedDown: 1, outMs: 1_500 });
    const out = evidence({ connections: 200 }, { outMs: 2_000 });
    const statuses = judgeAll(spec, [refused, out, out, out, out, refused, out]);
    assert.deepEqual(
      statuses.map((status) => status.verdict),
      ['Inconclusive', 'Inconclusive', 'Inconclusive', 'Inconclusive', 'Inconclusive', 'Failed', 'Failed'],
    );
    assert.deepEqual(
      statuses.map((status) => status.failures),
      [0, 0, 0, 0, 0, 1, 2],
    );
    assert.match(
      statuses[5]!.message,
      /^connectErrorRate: canary 2 of 2, stable 0 of 1 200, threshold max 0.05, 99 % confidence/,
    );
    assert.match(
      statuses[6]!.message,
      /^no canary sample since it failed \(passive health holds it out\): connectErrorRate: canary 2 of 2/,
    );
  });

  it('the share is judged over the time the canary was eligible: held out all the interval, getting nothing is no failure', () => {
    const shareOf = (outMs: number) =>
      judge(evidence({ connections: 1_000 }, { outMs }), { minSamples: 0 }, [PORT], undefined).signals.find(
        (item) => item.name === 'canaryShare',
      );
    assert.equal(shareOf(2_000), undefined);
    assert.equal(shareOf(0)?.verdict, 'Failed');
    assert.match(
      shareOf(0)?.threshold ?? '',
      /at least 5% of web:80\/TCP \(weight 10%, eligible 100% of the interval\)/,
    );
  });

  it('every threshold within on enough samples passes; fewer than minSamples never does', () => {
    assert.equal(
      judge(evidence({ connections: 18_000, resets: 180 }, { connections: 2_000, resets: 20 }), spec, [PORT], undefined)
        .verdict,
      'Passed',
    );
    assert.equal(
      judge(evidence({ connections: 9_000 }, { connections: 1_000 }), { ...spec, minSamples: 2_000 }, [PORT], undefined)
        .verdict,
      'Inconclusive',
    );
  });

  it("an interval's events never outnumber its samples: resets of connections begun the interval before", () => {
    const result = judge(evidence({ connections: 5 }, { connections: 5, resets: 6 }), spec, [PORT], undefined);
    assert.deepEqual(result.signals.find((item) => item.name === 'resetRate')?.counts?.canary, { count: 5, of: 5 });
    assert.match(result.message, /resetRate: canary 5 of 5, stable 0 of 5/);
  });

  it('low traffic still decides: a canary under minSamples in every interval passes once the pooled intervals reach it, and not before', () => {
    const quiet = evidence({ connections: 27 }, { connections: 3 });
    const statuses = judgeAll({ minSamples: 10, thresholds: { connectErrorRate: { max: 0.5 } } }, [
      quiet,
      quiet,
      quiet,
      quiet,
      quiet,
    ]);
    assert.deepEqual(
      statuses.map((status) => status.verdict),
      ['Inconclusive', 'Inconclusive', 'Inconclusive', 'Passed', 'Inconclusive'],
    );
    assert.match(
      statuses[2]!.message,
      /too few samples: 9 canary connections\/flows over 3 interval\(s\), minSamples 10/,
    );
    assert.match(statuses[3]!.message, /^12 canary connections\/flows judged \(4 interval\(s\) judged together\)/);
  });

  it('low traffic still decides the other way: failing 1 in 3 each interval is no failure on one interval, and is once pooled', () => {
    const failing = evidence({ connections: 27 }, { connections: 2, connectErrors: 1 });
    const statuses = judgeAll(
      { minSamples: 10, thresholds: { connectErrorRate: { max: 0.05 } } },
      Array.from({ length: 6 }, () => failing),
    );
    const first = statuses.findIndex((status) => status.verdict === 'Failed');
    assert.ok(first >= 1, `not on one interval of 3 samples: ${statuses[0]?.message}`);
    assert.match(statuses[first]!.message, new RegExp(`^connectErrorRate: canary ${first + 1} of ${3 * (first + 1)}`));
  });

  it('several replicas: held out on one replica of three for a whole interval, the canary was eligible for two thirds of it, and its share is judged so', () => {
    const threeReplicas = (canary: Partial<BackendCounters>): Evidence => ({
      ...evidence({ connections: 1_000 }, canary),
      replicas: 3,
    });
    const starved = judge(
      threeReplicas({ connections: 0, outMs: 2_000 }),
      { minSamples: 0 },
      [PORT],
      undefined,
    ).signals.find((item) => item.name === 'canaryShare');
    assert.equal(
      starved?.verdict,
      'Failed',
      'two replicas of three could send it traffic all the interval, and none did',
    );
    assert.match(
      starved?.threshold ?? '',
      /at least 3\.3% of web:80\/TCP \(weight 10%, eligible 67% of the interval\)/,
    );
    const itsShare = judge(
      threeReplicas({ connections: 67, outMs: 2_000 }),
      { minSamples: 0 },
      [PORT],
      undefined,
    ).signals.find((item) => item.name === 'canaryShare');
    assert.equal(itsShare, undefined, 'a third of its weight less, on the replica that held it out, is its share');
  });

  it('udpReplyRate (higher is better): flows not replied are judged against 1 − min and maxBelowStable', () => {
    const udp: PortStatus = { ...PORT, protocol: 'UDP', port: 53 };
    const udpSpec: AnalysisSpec = { minSamples: 10, thresholds: { udpReplyRate: { min: 0.95, maxBelowStable: 0.02 } } };
    const silent = judge(
      evidence({ connections: 900, sessionsReplied: 900 }, { connections: 100, sessionsReplied: 40 }, 'web-53-udp'),
      udpSpec,
      [udp],
      undefined,
    );
    assert.deepEqual([silent.verdict, silent.signals[0]?.canary, silent.signals[0]?.stable], ['Failed', 0.4, 1]);
    const answering = judge(
      evidence(
        { connections: 9_000, sessionsReplied: 9_000 },
        { connections: 1_000, sessionsReplied: 1_000 },
        'web-53-udp',
      ),
      udpSpec,
      [udp],
      undefined,
    );
    assert.equal(answering.verdict, 'Passed');
  });
});

describe('a reset is named a reset: connects the backend reset before they completed', () => {
  // The canary resets 60 of its 300 connects before they complete (the socket calls it a failed connect) and 10 more afterwards.
  const canary = { connections: 240, connectErrors: 60, connectResets: 60, resets: 10 };
  const stable = { connections: 2_700, resets: 27 };
  const signal = (spec: AnalysisSpec, name: string) =>
    judge(evidence(stable, canary), spec, [PORT], undefined).signals.find((item) => item.name === name);

  it('with resetRate and connectErrorRate gated, they count under resetRate, not as connect errors', () => {
    const spec: AnalysisSpec = { thresholds: { connectErrorRate: { max: 0.05 }, resetRate: { maxAboveStable: 0.02 } } };
    assert.deepEqual(signal(spec, 'resetRate')?.counts?.canary, { count: 70, of: 300 });
    assert.equal(signal(spec, 'resetRate')?.verdict, 'Failed');
    assert.deepEqual(signal(spec, 'connectErrorRate')?.counts?.canary, { count: 0, of: 300 });
    assert.match(
      judge(evidence(stable, canary), spec, [PORT], undefined).message,
      /^resetRate: canary 70 of 300, stable 27 of 2 700/,
    );
  });

  it('with connectErrorRate alone, they are its connect errors (nothing else would see them)', () => {
    const spec: AnalysisSpec = { thresholds: { connectErrorRate: { max: 0.05 } } };
    assert.deepEqual(signal(spec, 'connectErrorRate')?.counts?.canary, { count: 60, of: 300 });
  });

  it('with resetRate alone, every failed connect counts there, as before', () => {
    const spec: AnalysisSpec = { thresholds: { resetRate: { maxAboveStable: 0.02 } } };
    assert.deepEqual(signal(spec, 'resetRate')?.counts?.canary, { count: 70, of: 300 });
  });
});
