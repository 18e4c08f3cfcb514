// When an API error reaches status (src/control/api-error-streak.ts): each row is a run of passes
// and, for each, the message to say in status, once the same API failure persists.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiErrorStreak } from '../../src/control/api-error-streak.ts';
import { StepError } from '../../src/control/loop/apply.ts';
import type { Step } from '../../src/control/reconcile.ts';

const UNAVAILABLE = { statusCode: 503, message: 'unavailable' };
const FORBIDDEN = { statusCode: 403, message: 'forbidden' };
const CONFLICT = { statusCode: 409, message: 'the object has been modified' };
const STEP: Step = { kind: 'deleteService', reason: 'deleteCopy', name: 'web-canary', uid: undefined };
const PASSED = Symbol('the pass succeeded');

const cases: readonly [title: string, passes: readonly unknown[], said: readonly (string | undefined)[]][] = [
  [
    'one failure may be a blip: said from the second',
    [UNAVAILABLE, UNAVAILABLE, UNAVAILABLE],
    [undefined, '503: unavailable', '503: unavailable'],
  ],
  ['another message starts again', [UNAVAILABLE, FORBIDDEN, FORBIDDEN], [undefined, undefined, '403: forbidden']],
  ['a pass that succeeds ends the streak', [UNAVAILABLE, PASSED, UNAVAILABLE], [undefined, undefined, undefined]],
  [
    'a conflict (the cache was behind) ends it',
    [UNAVAILABLE, CONFLICT, UNAVAILABLE, CONFLICT],
    [undefined, undefined, undefined, undefined],
  ],
  [
    'an error not of the API (said by the pass) ends it',
    [UNAVAILABLE, new Error('refused config'), UNAVAILABLE],
    [undefined, undefined, undefined],
  ],
  [
    'a failed step is judged by its cause, said with the step',
    [new StepError(STEP, UNAVAILABLE), new StepError(STEP, UNAVAILABLE)],
    [undefined, new StepError(STEP, UNAVAILABLE).message],
  ],
  [
    'a step that met a conflict is no API error either',
    [new StepError(STEP, CONFLICT), new StepError(STEP, CONFLICT)],
    [undefined, undefined],
  ],
];

describe('ApiErrorStreak', () => {
  for (const [title, passes, said] of cases) {
    it(title, () => {
      const streak = new ApiErrorStreak();
      const messages = passes.map((pass) => {
        if (pass !== PASSED) return streak.failed(pass);
        streak.passed();
        return undefined;
      });
      assert.deepEqual(messages, said);
    });
  }
});
