// One minute of the soak inside `npm test` (`npm run soak -- --minutes N` for longer runs). The seed
// is fixed so that a red `npm test` is the code's doing, not the schedule's (SOAK_SEED=S picks another);
// `npm run soak` draws a random seed each run to explore, and `--seed S` replays one.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runSoak } from './soak.ts';

/** The schedule `npm test` runs: one of the seeds measured in README § The soak. */
const FIXED_SEED = 20261201;

describe('soak', () => {
  it('a release under traffic, weight patches, re-applies, proxy kills and API faults ends exact, with no failure outside the windows', {
    timeout: 240_000,
  }, async (t) => {
    const seed = Number(process.env.SOAK_SEED ?? FIXED_SEED);
    t.diagnostic(`seed ${seed} (replay: npm run soak -- --minutes 1 --seed ${seed})`);
    const result = await runSoak({ durationMs: 60_000, seed });
    t.diagnostic(JSON.stringify(result));
    assert.deepEqual(result.failuresOutside, [], `seed ${seed}: failures outside the documented windows`);
    assert.deepEqual(result.serviceProblems, [], `seed ${seed}: the Service did not end exact`);
    assert.ok(
      (result.tcp.stable ?? 0) > 0 && (result.tcp.canary ?? 0) > 0 && (result.udp.stable ?? 0) > 0,
      'traffic reached both versions',
    );
  });
});
