// What passive health kept from a backend (src/dataplane/stats/held-out.ts): when the offers made
// while it was held out count against it, and when they are cleared. Table-driven: each row a
// story of take-outs, offers, probes and successes, and what is counted at its end.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EPISODE_END_SUCCESSES, HeldOutOffers } from '../../../src/dataplane/stats/held-out.ts';

const FAIL_TIMEOUT_MS = 3_000;

/** A step of a story: `out@t` taken out (connect) at t ms, `reset@t` taken out after a reset, `offer×n`, `probe-failed@t`, `ok×n` successes. */
type Step = string;

function play(steps: readonly Step[]): HeldOutOffers {
  const offers = new HeldOutOffers();
  for (const step of steps) {
    const [what, arg] = step.split(/[@×]/) as [string, string];
    const n = Number(arg);
    if (what === 'out') offers.takenOut(n, FAIL_TIMEOUT_MS, 'connect');
    else if (what === 'reset') offers.takenOut(n, FAIL_TIMEOUT_MS, 'reset');
    else if (what === 'probe-failed') offers.probeFailed(n, FAIL_TIMEOUT_MS);
    else if (what === 'offer') for (let i = 0; i < n; i++) offers.offered();
    else if (what === 'ok') for (let i = 0; i < n; i++) offers.succeeded();
    else throw new Error(`no such step: ${step}`);
  }
  return offers;
}

describe('HeldOutOffers: what a held-out backend was offered counts against it once its failing outlasts a blip', () => {
  const rows: ReadonlyArray<{
    story: string;
    steps: Step[];
    failed: { connect: number; reset: number };
    cleared: number;
  }> = [
    {
      story: 'nothing held out: nothing counted',
      steps: ['ok×50'],
      failed: { connect: 0, reset: 0 },
      cleared: 0,
    },
    {
      story: 'a blip without probes: out, then served when the take-out ends: cleared',
      steps: ['out@0', 'offer×30', 'ok×1'],
      failed: { connect: 0, reset: 0 },
      cleared: 30,
    },
    {
      story:
        'a blip with probes: a failed probe within the grace holds its offers back, the next good one clears the rest, the served run the held ones',
      steps: ['out@0', 'offer×10', 'probe-failed@1000', 'offer×10', 'ok×1', `ok×${EPISODE_END_SUCCESSES - 1}`],
      failed: { connect: 0, reset: 0 },
      cleared: 20,
    },
    {
      story: 'dead without probes: the take-out ends, its next attempt fails a failTimeout later: all of them count',
      steps: ['out@0', 'offer×30', 'out@3000', 'offer×5'],
      failed: { connect: 30, reset: 0 },
      cleared: 0,
    },
    {
      story: 'dead with probes: held back until the probe a failTimeout in, then every failed probe counts at once',
      steps: [
        'out@0',
        'offer×10',
        'probe-failed@1000',
        'offer×10',
        'probe-failed@2000',
        'offer×10',
        'probe-failed@3000',
        'offer×10',
        'probe-failed@4000',
      ],
      failed: { connect: 40, reset: 0 },
      cleared: 0,
    },
    {
      story: "the grace is the episode's: a probe failing just short of a failTimeout still holds back",
      steps: ['out@0', 'offer×10', 'probe-failed@2900'],
      failed: { connect: 0, reset: 0 },
      cleared: 0,
    },
    {
      story:
        'a flapping backend: served between its failures, never long enough in a row, so its episode and its grace go on',
      steps: [
        'out@0',
        'offer×10',
        'ok×3',
        'out@1000',
        'offer×10',
        'probe-failed@2000',
        'offer×10',
        'ok×2',
        'out@3100',
        'offer×10',
        'probe-failed@4100',
        'offer×10',
        'ok×1',
      ],
      // the stretches a failed probe ended count once the grace is over; those a success ended were cleared
      failed: { connect: 20, reset: 0 },
      cleared: 30,
    },
    {
      story: 'an episode ends after successes in a row: the next failure starts a new grace',
      steps: [
        'out@0',
        'offer×10',
        'probe-failed@1000',
        `ok×${EPISODE_END_SUCCESSES}`,
        'out@5000',
        'offer×10',
        'out@6000',
      ],
      failed: { connect: 0, reset: 0 },
      cleared: 10,
    },
    {
      story:
        'one success short of the end of an episode: the held offers stay held, and count when it fails past the grace',
      steps: ['out@0', 'offer×10', 'probe-failed@1000', `ok×${EPISODE_END_SUCCESSES - 1}`, 'out@5000'],
      failed: { connect: 10, reset: 0 },
      cleared: 0,
    },
    {
      story: 'a failure between successes starts their count again: the episode goes on',
      steps: [
        'out@0',
        'offer×10',
        'probe-failed@1000',
        `ok×${EPISODE_END_SUCCESSES - 1}`,
        'out@1500',
        `ok×${EPISODE_END_SUCCESSES - 1}`,
        'out@4000',
      ],
      failed: { connect: 10, reset: 0 },
      cleared: 0,
    },
    {
      story: 'offers are counted by what took it out',
      steps: ['reset@0', 'offer×7', 'out@3000', 'offer×4', 'out@6000'],
      failed: { connect: 4, reset: 7 },
      cleared: 0,
    },
  ];
  for (const { story, steps, failed, cleared } of rows) {
    it(story, () => {
      const offers = play(steps);
      assert.deepEqual(offers.failed, failed);
      assert.equal(offers.cleared, cleared);
    });
  }
});
