// status.history (control/progress/history.ts) through reconcile: a stepped, analysed release keeps
// a mark at each change of its standing (step, weight, hold, promotion, transition) and an entry per
// interval with its counts and verdict, so a page opened after a rollback still tells what led to
// it; a pass that changes nothing adds nothing (no status write); the history stays bounded.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { HistoryMark, ReleaseHistory } from '../../../src/api/status-types.ts';
import { extendHistory, HISTORY_INTERVALS, HISTORY_MARKS } from '../../../src/control/progress/history.ts';
import { analysed, evidence, healthy, resetting, settle } from './steps-world.ts';
import type { World } from './world.ts';

const historyOf = (world: World): ReleaseHistory => {
  const history = world.release?.status?.history;
  assert.ok(history, 'status.history is written');
  return history;
};
/** A mark as the page reads it: what stood, not when. */
const standing = ({ at: _at, ...mark }: HistoryMark) => ({
  ...mark,
  weights: mark.weights.map((weight) => `${weight.port}=${weight.served}`).join(','),
});

describe('status.history', () => {
  it("tells a stepped release's story: each step with its weight, hold and promotion, each interval with its counts and verdict", () => {
    let { world } = settle(analysed(), 0);
    world.evidence = evidence(40_000, { connections: 90 }, { connections: 10 });
    ({ world } = settle(world, 40_000));
    world.evidence = healthy(70_000);
    ({ world } = settle(world, 70_000));
    world.release = { ...world.release!, spec: { ...world.release!.spec!, promotedStep: 1 } };
    ({ world } = settle(world, 75_000));
    const history = historyOf(world);
    assert.deepEqual(history.marks.map(standing), [
      {
        phase: 'Running',
        weights: 'web:80/TCP=10',
        step: 0,
        pause: 'the Services are not taken over yet; the first step starts once they are',
      },
      {
        phase: 'Running',
        weights: 'web:80/TCP=10',
        step: 0,
        pause: 'step 1/2 (index 0) holds until 2025-01-01T00:00:30.250Z',
      },
      {
        phase: 'Running',
        weights: 'web:80/TCP=10',
        step: 0,
        pause:
          'step 1/2 (index 0) waits for an analysis interval that passes (last: Inconclusive; see status.analysis)',
      },
      { phase: 'Running', weights: 'web:80/TCP=50', step: 1 },
      {
        phase: 'Running',
        weights: 'web:80/TCP=50',
        step: 1,
        pause: 'step 2/2 (index 1) waits for a promotion: kubectl canary-l4 promote (it writes spec.promotedStep: 1)',
      },
      { phase: 'Running', weights: 'web:80/TCP=50', step: 2, promoted: true },
      {
        phase: 'Adopted',
        weights: '',
        step: 2,
        transition: {
          type: 'Adopted',
          reason: 'StepsComplete',
          message: 'every step is done (2/2); adopted automatically (spec.autoAdopt)',
        },
      },
    ]);
    assert.equal(history.marks[3]!.at, '2025-01-01T00:01:10.250Z', 'step 2 began with the interval that passed');
    assert.deepEqual(
      history.intervals.map(({ at, step, ports, verdict }) => ({ at, step, ports, verdict })),
      [
        {
          at: '2025-01-01T00:00:40.250Z',
          step: 0,
          ports: [{ port: 'web:80/TCP', stable: 90, canary: 10 }],
          verdict: 'Inconclusive',
        },
        {
          at: '2025-01-01T00:01:10.250Z',
          step: 0,
          ports: [{ port: 'web:80/TCP', stable: 9000, canary: 1000 }],
          verdict: 'Passed',
        },
      ],
    );
    assert.deepEqual(
      history.intervals[1]!.signals?.map(({ name, verdict }) => `${name} ${verdict}`),
      ['connectErrorRate Passed', 'resetRate Passed', 'connectLatencyP99 Passed'],
    );
  });

  it("keeps a rollback's cause and the failed intervals that led to it", () => {
    let { world } = settle(analysed(), 0);
    world.evidence = resetting(30_000);
    ({ world } = settle(world, 30_000));
    world.evidence = resetting(60_000);
    ({ world } = settle(world, 60_000));
    const history = historyOf(world);
    assert.equal(world.release?.status?.phase, 'Deprecated');
    assert.deepEqual(
      history.intervals.map((interval) => interval.verdict),
      ['Failed', 'Failed'],
    );
    const resets = history.intervals[1]!.signals?.find((signal) => signal.name === 'resetRate');
    assert.deepEqual(resets, {
      name: 'resetRate',
      canary: 0.3,
      stable: 0.0022,
      threshold: 'max 0.02, maxAboveStable 0.01',
      verdict: 'Failed',
    });
    const rollback = history.marks.find((mark) => mark.transition !== undefined);
    assert.equal(rollback?.transition?.reason, 'AnalysisFailed');
    assert.match(rollback?.transition?.message ?? '', /failed 2 analysis interval\(s\) in a row: resetRate/);
    assert.equal(rollback?.step, 0, 'rolled back at step 1');
    assert.deepEqual(history.marks.at(-1)?.phase, 'Deprecated');
  });

  it('a pass that changes nothing adds nothing, so it writes no status', () => {
    const { world } = settle(analysed(), 0);
    const { world: again, last } = settle(world, 1_000);
    assert.deepEqual(historyOf(again), historyOf(world));
    assert.equal(
      last.steps.some((step) => step.kind === 'writeStatus'),
      false,
    );
  });

  it('keeps the last HISTORY_MARKS marks and HISTORY_INTERVALS intervals', () => {
    let history: ReleaseHistory | undefined;
    for (let i = 0; i < HISTORY_INTERVALS + HISTORY_MARKS; i++) {
      const at = new Date(Date.UTC(2026, 0, 1) + i * 10_000);
      history = extendHistory({
        recorded: history,
        recordedPorts: [],
        recordedStep: undefined,
        promotedStep: undefined,
        status: {
          phase: 'Running',
          observedGeneration: 1,
          transition: null,
          conditions: [],
          ports: [{ service: 'web', port: 80, protocol: 'TCP', proxyPort: 9000, weight: i % 100, served: i % 100 }],
          weights: '',
        },
        counted: { at: at.toISOString(), intervalMs: 10_000 },
        now: at,
      });
    }
    assert.equal(history?.marks.length, HISTORY_MARKS);
    assert.equal(history?.intervals.length, HISTORY_INTERVALS);
    assert.equal(history?.intervals.at(-1)?.at, new Date(Date.UTC(2026, 0, 1) + 299 * 10_000).toISOString());
    assert.equal(history?.marks.at(-1)?.weights[0]?.served, 99, 'the newest kept, the oldest dropped');
  });
});
