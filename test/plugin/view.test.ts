// What `kubectl canary-l4 status` prints of the split at the step in force (pure: objects in, text out).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatStatus } from '../../src/plugin/view.ts';
import type { CanaryRelease } from '../../src/api/release-types.ts';
import type { PortStatus, StepAchievedSplit } from '../../src/api/status-types.ts';

const NOW = new Date('2026-12-01T12:00:00Z');

function release(
  achievedStep: StepAchievedSplit | undefined,
  withSteps = true,
  override: { override?: number | null } = { override: null },
): CanaryRelease {
  const port: PortStatus = {
    service: 'web',
    port: 9000,
    protocol: 'TCP',
    proxyPort: 18080,
    weight: 50,
    ...override,
    served: 50,
    achieved: { stable: 3000, canary: 1000, canaryPercent: 25 },
    ...(achievedStep === undefined ? {} : { achievedStep }),
  };
  return {
    apiVersion: 'canary-l4.io/v1alpha1',
    kind: 'CanaryRelease',
    metadata: { name: 'web-v3', namespace: 'default', uid: 'u1' },
    spec: {
      services: [{ service: 'web', ports: [{ port: 9000, protocol: 'TCP' }] }],
      ...(withSteps
        ? {
            steps: [
              { weight: 10, pause: { duration: '30s' } },
              { weight: 50, pause: {} },
            ],
          }
        : {}),
    },
    status: {
      phase: 'Running',
      observedGeneration: 1,
      transition: null,
      conditions: [],
      ports: [port],
      weights: 'web:9000=50%',
      ...(withSteps ? { currentStep: 1, step: '2/2', stepStartedAt: '2026-12-01T11:59:00Z' } : {}),
    },
  };
}

/** The THIS STEP cell of the port's row, or undefined without that column. */
function thisStep(text: string): string | undefined {
  const lines = text.split('\n');
  const header = lines.find((line) => line.startsWith('SERVICE'))!;
  const at = header.indexOf('THIS STEP');
  return at < 0
    ? undefined
    : lines
        .find((line) => line.startsWith('web '))!
        .slice(at)
        .trim();
}

describe('kubectl canary-l4 status: the split at the step in force', () => {
  it("beside the release's: the canary's share and its counts since the step began", () => {
    const text = formatStatus(release({ step: 1, stable: 498, canary: 502, canaryPercent: 50.2 }), NOW);
    assert.match(text, /CANARY %\s+THIS STEP\n/);
    assert.match(text, /\s25%\s+50\.2% \(502 of 1000\)\n/);
  });

  for (const [what, split, shown] of [
    ['nothing counted at the step yet', { step: 1, stable: 0, canary: 0, canaryPercent: 0 }, 'none yet'],
    [
      'counts of another step (a status written before the step changed)',
      { step: 0, stable: 90, canary: 10, canaryPercent: 10 },
      '-',
    ],
    ['no counts in status', undefined, '-'],
  ] as const) {
    it(`${what}: ${shown}`, () => assert.equal(thisStep(formatStatus(release(split), NOW)), shown));
  }

  // The proxy writes override: null; the API stores it as absent (a null key in a list's object).
  for (const [what, override, shown] of [
    ['no override, as the API holds it (absent)', {}, /^web\s+9000\/TCP\s+18080\s+50%\s+50%/m],
    ['no override, as written (null)', { override: null }, /^web\s+9000\/TCP\s+18080\s+50%\s+50%/m],
    ['an override', { override: 0 }, /^web\s+9000\/TCP\s+18080\s+50% \(--weight 0%\)\s+50%/m],
  ] as const) {
    it(`the CONFIGURED column with ${what}`, () =>
      assert.match(formatStatus(release(undefined, true, override), NOW), shown));
  }

  it('without steps there is no such column', () => {
    assert.equal(thisStep(formatStatus(release(undefined, false), NOW)), undefined);
  });
});

describe("kubectl canary-l4 status: the analysis' signals", () => {
  const judged = (heldOut: number | undefined): CanaryRelease => {
    const base = release(undefined);
    return {
      ...base,
      status: {
        ...base.status!,
        analysis: {
          at: '2026-12-01T11:59:50Z',
          intervalMs: 10_000,
          replicas: 1,
          samples: 84,
          verdict: 'Failed',
          confidence: 0.99,
          failures: 1,
          message: 'connectErrorRate: …',
          signals: [
            {
              name: 'connectErrorRate',
              canary: 0.893,
              stable: 0,
              threshold: 'max 0.05',
              verdict: 'Failed',
              counts: { canary: { count: 75, of: 84 }, stable: { count: 0, of: 210 } },
              ...(heldOut === undefined ? {} : { heldOut }),
            },
          ],
        },
      },
    };
  };
  const row = (text: string) => text.split('\n').find((line) => line.startsWith('connectErrorRate'))!;

  it("the canary's count says how much of it passive health kept from the canary", () => {
    assert.match(
      row(formatStatus(judged(74), NOW)),
      /^connectErrorRate +75 of 84 \(0\.893\), 74 held out +0 of 210 \(0\) +max 0\.05 \(99 % confidence\) +Failed$/,
    );
  });

  it('and nothing of it when none was', () => {
    assert.doesNotMatch(row(formatStatus(judged(undefined), NOW)), /held out/);
  });
});

describe('kubectl canary-l4 status: one sample count in the analysis', () => {
  it("gives the count judged (4 intervals pooled), not the last interval's beside it", () => {
    const base = release(undefined);
    const text = formatStatus(
      {
        ...base,
        status: {
          ...base.status!,
          analysis: {
            at: '2026-12-01T11:59:50Z',
            intervalMs: 10_000,
            replicas: 1,
            samples: 99,
            verdict: 'Passed',
            confidence: 0.99,
            failures: 0,
            message:
              '394 canary connections/flows judged (4 interval(s) judged together), every threshold within at 99 % confidence',
            signals: [
              {
                name: 'connectErrorRate',
                canary: 0,
                stable: 0,
                threshold: 'max 0.01',
                verdict: 'Passed',
                counts: { canary: { count: 0, of: 394 }, stable: { count: 0, of: 3600 } },
              },
            ],
          },
        },
      },
      NOW,
    );
    const analysis = text.slice(text.indexOf('Analysis:'));
    assert.match(analysis, /^Analysis: Passed at \S+, 1 replica\(s\), 0 failed in a row: 394 canary connections/);
    assert.match(analysis, /connectErrorRate +0 of 394 \(0\)/);
    assert.doesNotMatch(analysis, /\b99 canary/, "the last interval's count is not said beside the judged one");
  });
});
