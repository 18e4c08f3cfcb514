// A release's story (plugin/dashboard/story.ts) from the status.history the proxy's own reconcile
// wrote (stories.ts): the series the page's charts draw, the holds named by what held them (the
// words of control/progress/steps.ts), the rollback's cause, and the story in words.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ManagedRelease } from '../../../src/api/proxy-types.ts';
import { releaseStory, thresholdLimit } from '../../../src/plugin/dashboard/story.ts';
import { paused, rolledBack, stepping, type Story as Written } from './stories.ts';

const NOW = new Date('2026-06-01T10:00:00Z');
const story = (written: Written) =>
  releaseStory(
    { metadata: { name: 'web-v2', namespace: 'shop' }, spec: written.spec, status: written.status } as ManagedRelease,
    NOW,
  );

describe("a release's story", () => {
  it('a stepping release: its weight at each mark, its steps, the pooling holds past its pauses, every interval', () => {
    const written = stepping(NOW);
    const drawn = story(written);
    assert.ok(drawn);
    const history = written.status.history!;
    assert.equal(drawn.from, history.marks[0]!.at);
    assert.equal(drawn.to, NOW.toISOString(), 'a running release is drawn up to now');
    assert.deepEqual(
      drawn.weights[0]?.points.map((point) => point.value),
      history.marks.map((mark) => mark.weights[0]!.served),
    );
    assert.deepEqual(
      drawn.steps.map((step) => step.label),
      ['step 1/3 (index 0)', 'step 2/3 (index 1)'],
    );
    assert.deepEqual(
      drawn.holds.map((hold) => hold.kind),
      ['timed', 'analysis', 'timed', 'analysis'],
    );
    assert.deepEqual(
      drawn.verdicts.map((item) => item.verdict),
      history.intervals.map((interval) => interval.verdict),
    );
    assert.deepEqual(
      drawn.shares[0]?.points.map((point) => [point.value, point.of]),
      history.intervals.map((interval) => {
        const [counts] = interval.ports;
        const of = counts!.stable + counts!.canary;
        return [Math.round((counts!.canary / of) * 1000) / 10, of];
      }),
    );
    assert.deepEqual(
      drawn.signals.map((signal) => [signal.name, signal.limit, signal.points.length]),
      [
        ['connectErrorRate', 0.01, history.intervals.length],
        ['resetRate', 0.02, history.intervals.length],
      ],
    );
    assert.match(
      drawn.events.map((event) => event.text).join('\n'),
      /step 1\/3 \(index 0\) waits for an analysis interval that passes.*\nstep 2\/3 \(index 1\) began: web:80\/TCP 25% \(an analysis interval passed\)/,
    );
  });

  it("a person's pause is told apart from the step's own", () => {
    const drawn = story(paused(NOW));
    assert.deepEqual(drawn?.holds.at(-1)?.kind, 'paused');
    assert.equal(drawn?.holds.at(-1)?.to, NOW.toISOString(), 'still paused');
  });

  it('a rolled-back release: the transition and its cause, the failed intervals, drawn past its end', () => {
    const written = rolledBack(NOW);
    const drawn = story(written);
    assert.ok(drawn);
    assert.deepEqual(drawn.transition?.reason, 'AnalysisFailed');
    assert.equal(drawn.transition?.message, written.status.transition?.message);
    assert.deepEqual(
      drawn.verdicts.slice(-2).map((item) => item.verdict),
      ['Failed', 'Failed'],
    );
    assert.ok(Date.parse(drawn.to) > Date.parse(written.status.history!.marks.at(-1)!.at), 'its last change shows');
    assert.deepEqual(
      drawn.events.filter((event) => event.kind === 'transition').map((event) => event.text),
      [written.status.transition?.message],
    );
  });

  it("no history yet: no story; a threshold's absolute line", () => {
    assert.equal(releaseStory({ metadata: { name: 'x' }, spec: {}, status: {} } as ManagedRelease, NOW), null);
    assert.equal(thresholdLimit('max 0.01, maxAboveStable 0.005'), 0.01);
    assert.equal(thresholdLimit('maxAboveStable 0.005'), null);
    assert.equal(thresholdLimit('maxMs 250, maxRatioToStable 2'), 250);
    assert.equal(thresholdLimit('min 0.9'), 0.9);
  });
});
