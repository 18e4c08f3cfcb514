// What the dashboard shows of a release: its row (step, split per port, verdict, what needs
// attention) and its page's model (steps, actions), from statuses as the proxy and manager write them.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ManagedRelease } from '../../../src/api/proxy-types.ts';
import { attention, releaseDetail, releaseRow } from '../../../src/plugin/dashboard/view-model.ts';

const NOW = new Date('2026-01-01T12:10:00Z');
const PORT = { service: 'web', port: 80, protocol: 'TCP' as const, proxyPort: 9100, weight: 10 };

const release = (spec: object, status: object = {}): ManagedRelease =>
  ({ metadata: { name: 'web-v2', namespace: 'shop', uid: 'u' }, spec, status }) as ManagedRelease;
const STEPS = { steps: [{ weight: 10, pause: { duration: '2m' } }, { weight: 50, pause: {} }, { weight: 100 }] };

describe('dashboard view model', () => {
  it('needs attention for exactly what a person must look at, and not for a release working as written', () => {
    const ANALYSED = { ...STEPS, analysis: { interval: '10s' } };
    const analysis = (verdict: string, at: string) => ({
      verdict,
      at,
      intervalMs: 10_000,
      failures: verdict === 'Failed' ? 1 : 0,
      message: '',
    });
    const cases: [string, ManagedRelease, string[]][] = [
      [
        'a quiet running release',
        release(STEPS, { phase: 'Running', currentStep: 0, stepStartedAt: '2026-01-01T12:09:00Z' }),
        [],
      ],
      [
        'a failed interval below the failure limit: the proxy rolls back by itself if it must',
        release(ANALYSED, { phase: 'Running', analysis: analysis('Failed', '2026-01-01T12:09:55Z') }),
        [],
      ],
      [
        'a gated step held past its pause while its analysis pools too few samples',
        release(ANALYSED, {
          phase: 'Running',
          currentStep: 0,
          stepStartedAt: '2026-01-01T12:07:00Z',
          analysis: analysis('Inconclusive', '2026-01-01T12:09:55Z'),
        }),
        [],
      ],
      [
        'a gated step whose interval passed, still held past its pause: the proxy did not move it on',
        release(ANALYSED, {
          phase: 'Running',
          currentStep: 0,
          stepStartedAt: '2026-01-01T12:07:00Z',
          analysis: analysis('Passed', '2026-01-01T12:09:55Z'),
        }),
        [
          'step 1/3 (index 0) held 180s, past its pause of 2m and a passing interval: the proxy has not moved it on (is it running?)',
        ],
      ],
      [
        'a step without analysis held past its pause (and the slack)',
        release(STEPS, { phase: 'Running', currentStep: 0, stepStartedAt: '2026-01-01T12:07:00Z' }),
        ['step 1/3 (index 0) held 180s, past its pause of 2m: the proxy has not moved it on (is it running?)'],
      ],
      [
        'an analysis gone quiet for more than three intervals',
        release(ANALYSED, {
          phase: 'Running',
          currentStep: 0,
          stepStartedAt: '2026-01-01T12:09:00Z',
          analysis: analysis('Inconclusive', '2026-01-01T12:08:00Z'),
        }),
        ['no analysis interval judged for 120s (every 10s before): is the proxy running?'],
      ],
      [
        'a step within its pause and slack',
        release(STEPS, { phase: 'Running', currentStep: 0, stepStartedAt: '2026-01-01T12:07:31Z' }),
        [],
      ],
      [
        'a step a person paused, however long',
        release(
          { ...STEPS, paused: true },
          { phase: 'Running', currentStep: 0, stepStartedAt: '2025-12-01T00:00:00Z' },
        ),
        [],
      ],
      [
        'a step that waits for promotion, however long',
        release(STEPS, { phase: 'Running', currentStep: 1, stepStartedAt: '2025-12-01T00:00:00Z' }),
        [],
      ],
      [
        'Failure True',
        release(
          {},
          {
            phase: 'Holding',
            conditions: [{ type: 'Failure', status: 'True', reason: 'ServiceMissing', message: 'no Service web' }],
          },
        ),
        ['Failure: ServiceMissing: no Service web'],
      ],
      [
        'Failure False',
        release({}, { conditions: [{ type: 'Failure', status: 'False', reason: 'None', message: '' }] }),
        [],
      ],
      [
        'a proxy not Ready',
        release(
          {},
          { proxy: { deployment: 'p', replicas: 2, readyReplicas: 1, updatedReplicas: 2, ready: '1/2', pods: [] } },
        ),
        ['proxy not Ready: 1/2 replicas Ready'],
      ],
    ];
    for (const [what, input, expected] of cases) assert.deepEqual(attention(input, NOW), expected, what);
  });

  it('rows: the step, the split per port (an override wins), the verdict', () => {
    const cases: [string, ManagedRelease, object][] = [
      ['no status yet', release(STEPS), { phase: 'Pending', step: '1/3 (index 0)', ports: [], verdict: null }],
      [
        'a running step, counted',
        release(STEPS, {
          phase: 'Running',
          step: '2/3 (index 1)',
          currentStep: 1,
          ports: [
            {
              ...PORT,
              served: 10,
              achieved: { stable: 90, canary: 10, canaryPercent: 10 },
              achievedStep: { step: 1, stable: 40, canary: 10, canaryPercent: 20 },
            },
          ],
          analysis: { verdict: 'Passed', failures: 0, message: '' },
        }),
        {
          phase: 'Running',
          step: '2/3 (index 1)',
          ports: [
            {
              service: 'web',
              port: 80,
              protocol: 'TCP',
              configured: 10,
              served: 10,
              achieved: 10,
              thisStep: { percent: 20, canary: 10, of: 50 },
            },
          ],
          verdict: 'Passed',
        },
      ],
      [
        'an override, nothing counted yet, no steps',
        release(
          {},
          { phase: 'Running', ports: [{ ...PORT, override: 0, achieved: { stable: 0, canary: 0, canaryPercent: 0 } }] },
        ),
        {
          phase: 'Running',
          step: '-',
          ports: [
            { service: 'web', port: 80, protocol: 'TCP', configured: 0, served: null, achieved: null, thisStep: null },
          ],
          verdict: null,
        },
      ],
    ];
    for (const [what, input, expected] of cases) {
      const row = releaseRow(input, NOW);
      assert.deepEqual({ phase: row.phase, step: row.step, ports: row.ports, verdict: row.verdict }, expected, what);
      assert.equal(row.key, 'shop/web-v2');
    }
  });

  it('the page: steps done, current and next; the actions that make sense now, with their effect', () => {
    const running = releaseDetail(release({ ...STEPS, analysis: {} }, { phase: 'Running', currentStep: 1 }), NOW);
    assert.deepEqual(
      running.steps.map((step) => [step.number, step.state, step.pause, step.gate]),
      [
        [1, 'done', '2m', true],
        [2, 'current', 'until promoted', true],
        [3, 'next', null, true],
      ],
    );
    const cases: [string, ManagedRelease, string[]][] = [
      [
        'with steps',
        release(STEPS, { phase: 'Running', currentStep: 1 }),
        ['promote', 'promote-full', 'pause', 'abort'],
      ],
      [
        'paused',
        release({ ...STEPS, paused: true }, { phase: 'Running' }),
        ['promote', 'promote-full', 'resume', 'abort'],
      ],
      ['every step done', release(STEPS, { phase: 'Running', currentStep: 3 }), ['promote-full', 'pause', 'abort']],
      ['without steps', release({}, { phase: 'Running' }), ['promote-full', 'pause', 'abort', 'set-weight']],
      ['over', release(STEPS, { phase: 'Adopted' }), []],
      ['being rolled back', release({ ...STEPS, transition: 'Deprecated' }, { phase: 'Deprecating' }), []],
    ];
    for (const [what, input, expected] of cases)
      assert.deepEqual(
        releaseDetail(input, NOW).actions.map((action) => action.action),
        expected,
        what,
      );
    const abort = running.actions.find((action) => action.action === 'abort');
    assert.match(abort?.effect ?? '', /every Service goes back to the stable version/);
  });
});
