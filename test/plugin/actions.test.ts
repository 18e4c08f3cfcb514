// The patches behind `kubectl canary-l4` actions, from the release as read.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { abort, parseWeightTarget, promote } from '../../src/plugin/actions.ts';
import type { CanaryRelease } from '../../src/api/release-types.ts';
import type { CanaryReleaseStatus } from '../../src/api/status-types.ts';
import type { CanaryReleaseSpec } from '../../src/api/spec-types.ts';

const release = (spec: CanaryReleaseSpec, status: Partial<CanaryReleaseStatus> = {}): CanaryRelease => ({
  metadata: { name: 'web-v2', uid: 'u' },
  spec,
  status,
});
const STEPS = [
  { weight: 10, pause: {} },
  { weight: 50, pause: {} },
];

describe('kubectl canary-l4 actions', () => {
  it('promote releases the step in force, as status says it is', () => {
    const result = promote(release({ steps: STEPS }, { currentStep: 1 }), false);
    assert.ok(result.ok);
    assert.deepEqual(result.action.patch, { spec: { promotedStep: 1 } });
    // The index it writes, beside the step it names: never "step 2/2" beside a bare 1.
    assert.match(result.action.summary, /^step 2\/2 \(index 1\) promoted \(spec.promotedStep: 1\): /);
    const paused = promote(release({ steps: STEPS, paused: true }), false);
    assert.ok(paused.ok);
    assert.match(
      paused.action.summary,
      /step 1\/2 \(index 0\) promoted \(spec.promotedStep: 0\): .*; it stays paused \(spec.paused\) until resume/,
    );
  });

  it('refuses what cannot apply: every step done, a release handing back or over', () => {
    const refused = (result: ReturnType<typeof promote>) => (result.ok ? 'accepted' : result.error);
    assert.match(
      refused(promote(release({ steps: STEPS }, { currentStep: 2 }), false)),
      /has done every step, step 2\/2 done \(index 2\): promote --full adopts it/,
    );
    assert.match(
      refused(promote(release({ steps: STEPS }, { phase: 'Deprecated' }), true)),
      /is Deprecated: it is over/,
    );
    assert.match(refused(abort(release({ transition: 'Adopted' }), undefined)), /already being adopted/);
  });

  it('parses SERVICE:PORT=WEIGHT', () => {
    assert.deepEqual(parseWeightTarget('web:80=25'), { service: 'web', port: 80, weight: 25 });
    for (const [bad, says] of [
      ['web:80', '"web:80" is not SERVICE:PORT=WEIGHT, e.g. web:80=25'],
      ['web=25', '"web=25" is not SERVICE:PORT=WEIGHT, e.g. web:80=25'],
      [':80=2', '":80=2": the Service "" is not a Service name'],
      ['Web:80=2', '"Web:80=2": the Service "Web" is not a Service name'],
      ['web:0=5', '"web:0=5": the port "0" must be a number 1-65535'],
      ['web:http=5', '"web:http=5": the port "http" must be a number 1-65535'],
      ['web:80=-5', '"web:80=-5": the weight "-5" must be a whole percentage 0-100'],
      ['web:80=101', '"web:80=101": the weight "101" must be a whole percentage 0-100'],
      ['web:80=2.5', '"web:80=2.5": the weight "2.5" must be a whole percentage 0-100'],
    ]) {
      const result = parseWeightTarget(bad!);
      assert.ok(typeof result === 'string' && result.startsWith(says!), `${bad}: ${JSON.stringify(result)}`);
    }
  });
});
