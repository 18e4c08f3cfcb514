// Progressive delivery (issue 13) on the pure reconcile: steps that advance on their pause and on a
// passing analysis, a promotion, a person's pause, an automatic adoption after the last step, an
// automatic rollback on failed analysis intervals, and the analysis itself.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hasCounts } from '../../../src/control/progress/analysis/evidence.ts';
import { judge } from '../../../src/control/progress/analysis/verdict.ts';
import { intervalCounts, mergeEvidence, parseSnapshot } from '../../../src/control/progress/collector.ts';
import { analysisIntervalMs } from '../../../src/control/progress/steps.ts';
import { affinityListeners } from '../../../src/control/service/l4.ts';
import type { PortStatus } from '../../../src/api/status-types.ts';
import type { CounterSnapshot } from '../../../src/counters/snapshot.ts';
import { clone, conditionOf, converge, NOW, options, run, type World } from './world.ts';
import {
  analysed,
  ANALYSIS,
  at,
  BUCKETS_MS,
  counters,
  evidence,
  healthy,
  MINUTE,
  resetting,
  settle,
  stepped,
} from './steps-world.ts';

const canaryWeight = (last: ReturnType<typeof settle>['last']) =>
  last.l4Config.listeners[0]?.backends.find((backend) => backend.name === 'canary')?.weight;

describe('steps', () => {
  it('an analysis interval outside 1s–1h is refused, and counted at the default pace meanwhile rather than in a loop; the bounds themselves are kept', () => {
    assert.deepEqual(
      ['0s', '999ms', '1s', '2m', '1h', '1h1ms'].map((interval) => analysisIntervalMs({ analysis: { interval } })),
      [undefined, undefined, 1_000, 120_000, 3_600_000, undefined],
    );
    assert.equal(analysisIntervalMs({ analysis: {} }), undefined);
    assert.match(
      conditionOf(run(stepped({ analysis: { interval: '0s' } })), 'Failure').message,
      /spec.analysis.interval: "0s" is not a duration of at least 1s/,
    );
  });

  it('a timed pause holds the step, and it advances once the pause is over, never before', () => {
    let { world, last } = settle(stepped(), 0);
    assert.equal(canaryWeight(last), 5);
    assert.deepEqual([world.release?.status?.currentStep, world.release?.status?.step], [0, '1/3 (index 0)']);
    assert.match(world.release?.status?.pause?.reason ?? '', /step 1\/3 \(index 0\) holds until/);
    assert.equal(last.requeueAfterMs, 2 * MINUTE);
    ({ world, last } = settle(world, MINUTE));
    assert.equal(world.release?.status?.currentStep, 0, 'not before its pause is over');
    assert.equal(
      last.requeueAfterMs,
      MINUTE,
      'the rest of the pause, from the recorded start: a restart resumes, never from zero',
    );
    ({ world, last } = settle(world, 2 * MINUTE));
    assert.deepEqual([world.release?.status?.currentStep, canaryWeight(last)], [1, 25]);
    assert.match(
      world.release?.status?.pause?.reason ?? '',
      /step 2\/3 \(index 1\) waits for a promotion: kubectl canary-l4 promote \(it writes spec.promotedStep: 1\)/,
    );
    ({ world } = settle(world, 10 * MINUTE));
    assert.equal(world.release?.status?.currentStep, 1, 'an untimed pause waits for a promotion however long');
  });

  it('a promotion releases the pause; after the last step the release is adopted (autoAdopt)', () => {
    let { world } = settle(stepped(), 0);
    ({ world } = settle(world, 2 * MINUTE));
    world.release = { ...world.release!, spec: { ...world.release!.spec, promotedStep: 1 } };
    const promoted = settle(world, 2 * MINUTE + 1000);
    world = promoted.world;
    assert.deepEqual([world.release?.status?.currentStep, canaryWeight(promoted.last)], [2, 50]);
    ({ world } = settle(world, 4 * MINUTE));
    assert.equal(world.release?.status?.phase, 'Adopted');
    assert.equal(world.release?.status?.transition?.reason, 'StepsComplete');
  });

  it('without autoAdopt the release holds at the last step, and says so', () => {
    let { world } = settle(stepped({ autoAdopt: false, steps: [{ weight: 30 }] }), 0);
    ({ world } = settle(world, 1000));
    assert.equal(world.release?.status?.phase, 'Running');
    assert.equal(world.release?.status?.step, '1/1 done (index 1)');
    assert.equal(world.release?.status?.currentStep, 1);
  });

  it('every step done under 0.4 (status.step 1/1, without the index) stays done after an upgrade: never back to the last step', () => {
    let { world } = settle(stepped({ autoAdopt: false, steps: [{ weight: 30, pause: { duration: '1m' } }] }), 0);
    ({ world } = settle(world, MINUTE + 1000));
    assert.equal(world.release?.status?.currentStep, 1);
    world.release = { ...world.release!, status: { ...world.release!.status!, step: '1/1' } };
    // Taken for steps cut below the one in force, the last step would start again and hold for its minute.
    ({ world } = settle(world, MINUTE + 2000));
    assert.deepEqual([world.release?.status?.currentStep, world.release?.status?.step], [1, '1/1 done (index 1)']);
  });

  it('steps cut below the one in force: the last one is in force, from its start; nothing is adopted', () => {
    let { world } = settle(stepped(), 0);
    ({ world } = settle(world, 2 * MINUTE));
    assert.equal(world.release?.status?.step, '2/3 (index 1)');
    world.release = {
      ...world.release!,
      spec: { ...world.release!.spec, steps: [{ weight: 5, pause: { duration: '2m' } }] },
    };
    const cut = settle(world, 3 * MINUTE);
    world = cut.world;
    assert.deepEqual(
      [
        world.release?.status?.phase,
        world.release?.status?.currentStep,
        world.release?.status?.step,
        canaryWeight(cut.last),
      ],
      ['Running', 0, '1/1 (index 0)', 5],
    );
    assert.equal(world.release?.status?.stepStartedAt, new Date(NOW.getTime() + 3 * MINUTE).toISOString());
    ({ world } = settle(world, 5 * MINUTE));
    assert.equal(world.release?.status?.phase, 'Adopted', 'then its pause runs, and the release ends as its steps say');
  });

  it('spec.paused holds the step past its pause; resume goes on', () => {
    let { world } = settle(stepped({ paused: true }), 0);
    ({ world } = settle(world, 5 * MINUTE));
    assert.equal(world.release?.status?.currentStep, 0);
    assert.match(world.release?.status?.pause?.reason ?? '', /paused \(spec.paused\)/);
    world.release = { ...world.release!, spec: { ...world.release!.spec, paused: false } };
    ({ world } = settle(world, 5 * MINUTE));
    assert.equal(world.release?.status?.currentStep, 1);
  });

  it('a --weight override wins over the step, and status says so', () => {
    const { last } = settle(stepped(), 0);
    const overridden = run(
      clone(converge(stepped(), at(0)).world),
      options({ now: NOW, weightOverrides: [{ service: 'web', port: 80, weight: 0 }] }),
    );
    assert.equal(canaryWeight(last), 5);
    assert.equal(overridden.l4Config.listeners[0]?.backends.find((backend) => backend.name === 'canary')?.weight, 0);
    assert.match(conditionOf(overridden, 'Available').message, /--weight; spec 5%/);
  });

  it('bad steps hold the release, naming the field', () => {
    const world = stepped({
      steps: [{ weight: 5, pause: { duration: 'soon' } }],
      analysis: { interval: '1', failureLimit: 0, confidence: 99 },
    });
    const desired = run(world);
    assert.equal(desired.status.phase, 'Holding');
    assert.match(
      conditionOf(desired, 'Failure').message,
      /spec.steps\[0\].pause.duration: "soon" is not a duration like 30s, 2m or 1h/,
    );
    assert.match(
      conditionOf(desired, 'Failure').message,
      /spec.analysis.interval: "1" is not a duration of at least 1s/,
    );
    assert.match(conditionOf(desired, 'Failure').message, /spec.analysis.failureLimit: must be an integer >= 1, got 0/);
    assert.match(
      conditionOf(desired, 'Failure').message,
      /spec.analysis.confidence: must be a number above 0.5 and below 1 \(e.g. 0.99\), got 99/,
    );
  });
});

describe('analysis', () => {
  const port: PortStatus = {
    service: 'web',
    port: 80,
    protocol: 'TCP',
    proxyPort: 8080,
    weight: 10,
    override: null,
    served: 10,
  };

  it("judges each signal canary against stable; a crossed threshold fails, naming both sides' counts", () => {
    const result = judge(resetting(0), ANALYSIS, [port], undefined);
    assert.equal(result.verdict, 'Failed');
    assert.deepEqual(
      result.signals.find((item) => item.name === 'resetRate'),
      {
        name: 'resetRate',
        canary: 0.3,
        stable: 0.0022,
        threshold: 'max 0.02, maxAboveStable 0.01',
        verdict: 'Failed',
        counts: { canary: { count: 30, of: 100 }, stable: { count: 2, of: 900 } },
      },
    );
    assert.match(
      result.message,
      /resetRate: canary 30 of 100, stable 2 of 900, threshold max 0.02, maxAboveStable 0.01, 99 % confidence/,
    );
    assert.equal(judge(healthy(0), ANALYSIS, [port], undefined).verdict, 'Passed');
  });

  it('too few samples is inconclusive, never passed; a canary taken out by passive health is judged on its failed attempts', () => {
    const few = evidence(0, { connections: 90 }, { connections: 10 });
    assert.equal(judge(few, ANALYSIS, [port], undefined).verdict, 'Inconclusive');
    const down = evidence(0, { connections: 400 }, { connections: 2, connectErrors: 5, markedDown: 1, outMs: 59_000 });
    const result = judge(down, ANALYSIS, [port], undefined);
    assert.equal(result.verdict, 'Failed');
    assert.match(
      result.message,
      /^connectErrorRate: canary 5 of 7, stable 0 of 400, threshold max 0.05, 99 % confidence; passive health took the canary out 1 time\(s\)/,
    );
  });

  it('a canary that gets far less than its share fails; not in an interval where the weights moved', () => {
    const starved = evidence(0, { connections: 995 }, { connections: 5 });
    assert.equal(
      judge(starved, { ...ANALYSIS, minSamples: 0 }, [port], undefined).signals.find(
        (item) => item.name === 'canaryShare',
      )?.verdict,
      'Failed',
    );
    const moved = evidence(0, { connections: 995 }, { connections: 5 }, 'web-80-tcp', ['web-80-tcp']);
    assert.equal(
      judge(moved, { ...ANALYSIS, minSamples: 0 }, [port], undefined).signals.some(
        (item) => item.name === 'canaryShare',
      ),
      false,
    );
  });

  it("a port with client affinity is not judged on share: its clients' hashes, not the weight, decide it", () => {
    const starved = evidence(0, { connections: 995 }, { connections: 5 });
    const spec = {
      services: [{ service: 'web', ports: [{ port: 80, config: { weight: 10, affinity: 'clientIP' as const } }] }],
    };
    const affinity = affinityListeners(spec);
    assert.deepEqual([...affinity], ['web-80-tcp']);
    assert.equal(
      judge(starved, { ...ANALYSIS, minSamples: 0 }, [port], undefined, affinity).signals.some(
        (item) => item.name === 'canaryShare',
      ),
      false,
    );
    assert.equal(
      affinityListeners({
        services: [{ service: 'web', ports: [{ port: 80, config: { weight: 10, affinity: 'none' } }] }],
      }).size,
      0,
    );
  });

  it('an interval in which no proxy counted anything has no counts (without analysis it is not written to status)', () => {
    assert.equal(hasCounts(evidence(0, {}, {})), false);
    assert.equal(hasCounts(evidence(0, {}, { connectErrors: 1 })), true);
    assert.equal(hasCounts(evidence(0, { sessionsReplied: 1 }, {})), true);
  });

  it('no canary sample is never a pass, even with minSamples 0', () => {
    assert.equal(
      judge(evidence(0, { connections: 500 }, {}), { ...ANALYSIS, minSamples: 0 }, [{ ...port, served: 0 }], undefined)
        .verdict,
      'Inconclusive',
    );
  });

  it('latency: the p99 interpolated in its bucket, against a maximum and against the stable side', () => {
    const slow = evidence(
      0,
      { connections: 500, connectLatency: [500, 0, 0, 0, 0] },
      { connections: 100, connectLatency: [50, 0, 40, 10, 0] },
    );
    const latency = judge(slow, ANALYSIS, [port], undefined).signals.find((item) => item.name === 'connectLatencyP99');
    assert.deepEqual([latency?.canary, latency?.stable, latency?.verdict], [92.5, 0.99, 'Failed']);
    // Adjacent buckets (≤1 ms, ≤5 ms) cannot tell 0.98 ms from 1.02 ms: that is no regression.
    const close = evidence(
      0,
      { connections: 5000, connectLatency: [5000, 0, 0, 0, 0] },
      { connections: 1000, connectLatency: [0, 1000, 0, 0, 0] },
    );
    assert.equal(
      judge(close, ANALYSIS, [port], undefined).signals.find((item) => item.name === 'connectLatencyP99')?.verdict,
      'Passed',
    );
  });

  it('UDP: flows that got a reply, canary against stable', () => {
    const udpPort: PortStatus = { ...port, protocol: 'UDP', port: 53 };
    const silent = evidence(
      0,
      { connections: 500, sessionsReplied: 500 },
      { connections: 100, sessionsReplied: 40 },
      'web-53-udp',
    );
    const result = judge(
      silent,
      { minSamples: 50, thresholds: { udpReplyRate: { min: 0.95, maxBelowStable: 0.02 } } },
      [udpPort],
      undefined,
    );
    assert.deepEqual(
      result.signals.map((item) => [item.name, item.canary, item.stable, item.verdict]),
      [['udpReplyRate', 0.4, 1, 'Failed']],
    );
  });

  it('failures count in a row: a pass resets them, an inconclusive interval does not', () => {
    const first = judge(resetting(0), ANALYSIS, [port], undefined);
    const inconclusive = judge(evidence(30_000, {}, { connections: 3 }), ANALYSIS, [port], first);
    const second = judge(resetting(60_000), ANALYSIS, [port], inconclusive);
    assert.deepEqual([first.failures, inconclusive.failures, second.failures], [1, 1, 2]);
    assert.equal(judge(healthy(90_000), ANALYSIS, [port], second).failures, 0);
  });

  it("sums every replica's counts over the interval; a replica seen the first time only sets its baseline", () => {
    const snapshot = (instance: string, connections: number, weight = 10): CounterSnapshot => ({
      instance,
      latencyBucketsMs: BUCKETS_MS,
      listeners: { l: { canary: counters({ connections }) } },
      weights: { l: { canary: weight, forked: 100 - weight } },
    });
    const previous = new Map([
      ['a', snapshot('a', 10)],
      ['b', snapshot('b', 5)],
    ]);
    const { listeners, replicas, weightsMoved } = intervalCounts(previous, [
      snapshot('a', 40),
      snapshot('b', 25),
      snapshot('c', 1000),
    ]);
    assert.equal(listeners.l?.canary?.connections, 50);
    assert.equal(replicas, 2);
    assert.deepEqual(weightsMoved, []);
    assert.deepEqual(
      intervalCounts(previous, [snapshot('a', 40, 25)]).weightsMoved,
      ['l'],
      'a weight that moved in the interval',
    );
  });

  it("a replica's /stats that is not counters this version sums is left out, never trusted", () => {
    const good = {
      instance: 'a',
      latencyBucketsMs: BUCKETS_MS,
      listeners: { l: { canary: counters({ connections: 3 }) } },
      weights: { l: { canary: 10 } },
    };
    assert.deepEqual(parseSnapshot(good, BUCKETS_MS), good);
    for (const bad of [
      null,
      {},
      'x',
      { ...good, listeners: null },
      { ...good, weights: undefined },
      { ...good, latencyBucketsMs: [1, 2] },
      { ...good, listeners: { l: { canary: { ...counters(), connections: 'many' } } } },
      { ...good, listeners: { l: { canary: { ...counters(), resets: -1 } } } },
      { ...good, listeners: { l: { canary: { ...counters(), connectLatency: [1] } } } },
    ]) {
      assert.equal(parseSnapshot(bad, BUCKETS_MS), undefined, JSON.stringify(bad));
    }
  });

  it('two intervals not yet counted merge into one', () => {
    const merged = mergeEvidence(
      evidence(30_000, { connections: 5 }, { connections: 1 }),
      evidence(60_000, { connections: 7 }, { connections: 2 }, 'web-80-tcp', ['web-80-tcp']),
    );
    assert.deepEqual(
      [merged.at, merged.intervalMs, merged.listeners['web-80-tcp']?.canary?.connections, merged.weightsMoved],
      [new Date(NOW.getTime() + 60_000).toISOString(), 60_000, 3, ['web-80-tcp']],
    );
  });
});

describe('steps gated by analysis, and the rollback', () => {
  it('a step advances only after an interval that passed; too few samples never promote', () => {
    let { world } = settle(analysed(), 0);
    world.evidence = evidence(40_000, { connections: 90 }, { connections: 10 });
    ({ world } = settle(world, 40_000));
    assert.equal(world.release?.status?.currentStep, 0, 'inconclusive: the pause is over but the step holds');
    assert.match(
      world.release?.status?.pause?.reason ?? '',
      /waits for an analysis interval that passes \(last: Inconclusive; see status.analysis\)/,
    );
    assert.match(
      world.release?.status?.analysis?.message ?? '',
      /too few samples: 10 canary connections\/flows over 1 interval\(s\), minSamples 50/,
    );
    const since = world.release?.status?.pause?.since;
    world.evidence = evidence(55_000, { connections: 90 }, { connections: 10 });
    ({ world } = settle(world, 55_000));
    assert.equal(
      world.release?.status?.pause?.since,
      since,
      'another inconclusive interval: the same pause, since the same time',
    );
    world.evidence = healthy(70_000);
    ({ world } = settle(world, 70_000));
    assert.equal(world.release?.status?.currentStep, 1);
    assert.equal(world.release?.status?.analysis?.replicas, 2, 'status says how many replicas contributed');
  });

  it('an interval that began before the step (mostly at the previous weight) does not pass it', () => {
    let { world } = settle(
      stepped({
        analysis: ANALYSIS,
        steps: [
          { weight: 10, pause: { duration: '30s' } },
          { weight: 20, pause: { duration: '10s' } },
          { weight: 50, pause: {} },
        ],
      }),
      0,
    );
    world.evidence = healthy(40_000);
    ({ world } = settle(world, 40_000));
    assert.equal(world.release?.status?.currentStep, 1);
    world.evidence = healthy(55_000);
    ({ world } = settle(world, 55_000));
    assert.equal(
      world.release?.status?.currentStep,
      1,
      'its pause is over, but the interval began 15 s before the step',
    );
    assert.match(
      world.release?.status?.pause?.reason ?? '',
      /step 2\/3 \(index 1\) waits for an analysis interval that passes \(last: none yet\)/,
    );
    world.evidence = healthy(85_000);
    ({ world } = settle(world, 85_000));
    assert.equal(world.release?.status?.currentStep, 2);
  });

  it('counts each interval once into the achieved split, however often it is reconciled', () => {
    let { world } = settle(analysed(), 0);
    world.evidence = healthy(40_000);
    ({ world } = settle(world, 40_000));
    ({ world } = settle(world, 41_000));
    assert.deepEqual(world.release?.status?.ports?.[0]?.achieved, { stable: 9000, canary: 1000, canaryPercent: 10 });
    world.evidence = healthy(70_000);
    ({ world } = settle(world, 70_000));
    assert.deepEqual(world.release?.status?.ports?.[0]?.achieved, { stable: 18000, canary: 2000, canaryPercent: 10 });
  });

  it("the split at the step in force counts the intervals served at its weight, from zero at each step; the release's keeps counting", () => {
    const interval = (atMs: number, stable: number, canary: number) =>
      evidence(
        atMs,
        { connections: stable, connectLatency: [stable, 0, 0, 0, 0] },
        { connections: canary, connectLatency: [canary, 0, 0, 0, 0] },
      );
    const atStep = (world: World) => world.release?.status?.ports?.[0]?.achievedStep;
    let { world } = settle(analysed(), 0);
    world.evidence = interval(31_000, 450, 40);
    ({ world } = settle(world, 31_000));
    assert.equal(world.release?.status?.currentStep, 0, 'too few samples: step 1 holds');
    assert.deepEqual(atStep(world), { step: 0, stable: 450, canary: 40, canaryPercent: 8.2 });
    // This interval passes step 1: it counts into step 1's split, which then gives way to step 2's.
    world.evidence = healthy(61_000);
    ({ world } = settle(world, 61_000));
    assert.equal(world.release?.status?.currentStep, 1);
    assert.deepEqual(atStep(world), { step: 1, stable: 0, canary: 0, canaryPercent: 0 });
    world.evidence = interval(80_000, 700, 300);
    ({ world } = settle(world, 80_000));
    assert.deepEqual(
      atStep(world),
      { step: 1, stable: 0, canary: 0, canaryPercent: 0 },
      "an interval that began before the step is not the step's",
    );
    world.evidence = interval(110_000, 500, 500);
    ({ world } = settle(world, 110_000));
    ({ world } = settle(world, 111_000));
    assert.deepEqual(atStep(world), { step: 1, stable: 500, canary: 500, canaryPercent: 50 }, 'counted once');
    assert.deepEqual(
      world.release?.status?.ports?.[0]?.achieved,
      { stable: 10650, canary: 1840, canaryPercent: 14.7 },
      "the release's split counts every interval",
    );
  });

  it('failureLimit failed intervals in a row roll the release back, with the reason in a Failure condition', () => {
    let { world } = settle(analysed(), 0);
    world.evidence = resetting(30_000);
    ({ world } = settle(world, 30_000));
    assert.equal(world.release?.status?.phase, 'Running', 'one failure is not yet the limit');
    world.evidence = resetting(60_000);
    const rolling = converge(world, at(60_000), 2).world;
    assert.equal(rolling.release?.status?.transition?.reason, 'AnalysisFailed');
    // An interval counted while the Services are handed back does not replace that verdict.
    rolling.evidence = healthy(90_000);
    const { world: end, last } = converge(rolling, at(90_000));
    assert.equal(end.release?.status?.phase, 'Deprecated');
    assert.equal(end.release?.status?.transition?.reason, 'AnalysisFailed');
    const failure = end.release?.status?.conditions?.find((item) => item.type === 'Failure');
    assert.equal(failure?.reason, 'AnalysisFailed');
    assert.match(
      failure?.message ?? '',
      /failed 2 analysis interval\(s\) in a row: resetRate: canary 30 of 100, stable 2 of 900, threshold max 0.02, maxAboveStable 0.01, 99 % confidence/,
    );
    assert.deepEqual(
      [last?.mode, last?.l4Config.listeners],
      ['archived', []],
      'the release is done: the proxy serves nothing',
    );
    assert.deepEqual(
      [end.release?.status?.analysis?.verdict, end.release?.status?.analysis?.failures],
      ['Failed', 2],
      'the verdict that decided it stands',
    );
    assert.deepEqual(
      [end.release?.status?.step, end.release?.status?.pause ?? null],
      ['1/2 (index 0)', null],
      'the step it ended at; no pause runs',
    );
  });
});
