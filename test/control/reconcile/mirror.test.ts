// Mirroring in a CanaryRelease (issue 24) on the pure reconcile: a port's config.mirror reaches its
// listener as a mirror to the canary; a step's mirror replaces the port's percent (a dark step, then
// a weight step); bad values hold the release naming the field; the counts add up in
// status.ports[].mirror and show in `kubectl canary-l4 status`.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { judge } from '../../../src/control/progress/analysis/verdict.ts';
import type { Evidence } from '../../../src/control/progress/analysis/evidence.ts';
import type { CanaryReleaseSpec } from '../../../src/api/spec-types.ts';
import type { BackendCounters } from '../../../src/counters/snapshot.ts';
import { formatStatus } from '../../../src/plugin/view.ts';
import { conditionOf, converge, NOW, options, WEB_SPEC, webWorld, type World } from './world.ts';

const MINUTE = 60_000;
const at = (ms: number) => options({ now: new Date(NOW.getTime() + ms) });

function settle(world: World, ms: number) {
  const result = converge(world, at(ms));
  return { world: result.world, last: result.last! };
}

const webPort = (
  config: NonNullable<NonNullable<CanaryReleaseSpec['services']>[number]['ports']>[number]['config'],
): CanaryReleaseSpec => ({
  services: [{ ...WEB_SPEC.services![0]!, ports: [{ port: 80, protocol: 'TCP', config }] }],
});

const counters = (mirror?: BackendCounters['mirror']): BackendCounters => ({
  connections: 10,
  connectErrors: 0,
  resets: 0,
  connectLatency: [10, 0, 0, 0, 0],
  sessionsReplied: 0,
  markedDown: 0,
  ...(mirror === undefined ? {} : { mirror }),
});

function evidence(atMs: number, mirror: BackendCounters['mirror']): Evidence {
  return {
    at: new Date(NOW.getTime() + atMs).toISOString(),
    intervalMs: 30_000,
    replicas: 1,
    latencyBucketsMs: [1, 5, 25, 100, 1000],
    listeners: {
      'web-80-tcp': {
        forked: counters({ mirrored: 0, compared: 0, equal: 0, different: 0, missing: 0, dropped: 0 }),
        canary: counters(mirror),
      },
    },
    weightsMoved: [],
  };
}

describe('judging a dark canary (mirrorMismatchRate, mirrorErrorRate)', () => {
  const ports = settle(webWorld(webPort({ weight: 0, mirror: { percent: 100, compare: 'replies' } })), 0).world.release!
    .status!.ports!;
  const thresholds = { mirrorMismatchRate: { max: 0.1 }, mirrorErrorRate: { max: 0.2 } };
  const verdictOf = (mirror: BackendCounters['mirror']) => {
    const interval = evidence(30_000, mirror);
    // The canary served no client: only its mirrored flows are samples.
    const dark = {
      ...interval,
      listeners: {
        'web-80-tcp': {
          forked: interval.listeners['web-80-tcp']!.forked!,
          canary: { ...counters(mirror), connections: 0, connectLatency: [0, 0, 0, 0, 0] },
        },
      },
    };
    return judge(dark, { minSamples: 50, thresholds }, ports, undefined);
  };

  it('passes a canary that answers as the stable, on its mirrored flows alone', () => {
    const result = verdictOf({ mirrored: 100, compared: 95, equal: 94, different: 1, missing: 5, dropped: 0 });
    assert.equal(result.verdict, 'Passed', result.message);
    assert.equal(result.samples, 100);
    assert.deepEqual(
      result.signals.map((signal) => [signal.name, signal.canary, signal.stable, signal.verdict]),
      [
        ['mirrorMismatchRate', 0.0105, null, 'Passed'],
        ['mirrorErrorRate', 0.05, null, 'Passed'],
      ],
    );
  });

  it('fails one that answers 30 % differently, and one whose mirror legs fail or go unanswered', () => {
    const mismatched = verdictOf({ mirrored: 100, compared: 100, equal: 70, different: 30, missing: 0, dropped: 0 });
    assert.equal(mismatched.verdict, 'Failed');
    assert.match(
      mismatched.message,
      /^mirrorMismatchRate: canary 30 of 100, stable -, threshold max 0\.1, 99 % confidence$/,
    );
    const failing = verdictOf({ mirrored: 100, compared: 60, equal: 60, different: 0, missing: 15, dropped: 25 });
    assert.match(failing.message, /^mirrorErrorRate: canary 40 of 100, stable -, threshold max 0\.2, 99 % confidence$/);
  });

  it('too few mirrored flows are inconclusive, never passed', () => {
    assert.equal(
      verdictOf({ mirrored: 20, compared: 20, equal: 20, different: 0, missing: 0, dropped: 0 }).verdict,
      'Inconclusive',
    );
  });
});

describe("mirroring a release's ports to the canary", () => {
  it("a port's config.mirror reaches its listener as a mirror to the canary backend, at weight 0", () => {
    const { last } = settle(
      webWorld(webPort({ weight: 0, mirror: { percent: 50, compare: 'replies', maxBytes: 4096 } })),
      0,
    );
    const listener = last.l4Config.listeners[0];
    assert.deepEqual(listener?.mirror, { to: 'canary', percent: 50, compare: 'replies', maxBytes: 4096 });
    assert.deepEqual(
      listener?.backends.map((backend) => [backend.name, backend.weight]),
      [
        ['forked', 100],
        ['canary', 0],
      ],
    );
  });

  it('no config.mirror, or percent 0, mirrors nothing', () => {
    for (const spec of [WEB_SPEC, webPort({ weight: 10, mirror: { compare: 'replies' } })]) {
      assert.equal(settle(webWorld(spec), 0).last.l4Config.listeners[0]?.mirror, undefined);
    }
  });

  it('a mirror step runs the canary dark, then a weight step serves it and the mirror stops', () => {
    const spec: CanaryReleaseSpec = {
      ...webPort({ mirror: { compare: 'replies' } }),
      steps: [
        { mirror: 50, pause: { duration: '10m' } },
        { weight: 10, pause: {} },
      ],
    };
    let { world, last } = settle(webWorld(spec), 0);
    const listener = () => last.l4Config.listeners[0];
    assert.deepEqual(listener()?.mirror, { to: 'canary', percent: 50, compare: 'replies', maxBytes: 65_536 });
    assert.equal(
      listener()?.backends.find((backend) => backend.name === 'canary')?.weight,
      0,
      'dark: the canary serves no client',
    );
    ({ world, last } = settle(world, 10 * MINUTE));
    assert.equal(world.release?.status?.step, '2/2 (index 1)');
    assert.equal(listener()?.backends.find((backend) => backend.name === 'canary')?.weight, 10);
    assert.equal(listener()?.mirror, undefined, "the port's own percent (none) once the step sets no mirror");
  });

  it('a transition mirrors nothing', () => {
    const { world } = settle(webWorld(webPort({ mirror: { percent: 100 } })), 0);
    world.release = { ...world.release!, spec: { ...world.release!.spec, transition: 'Deprecated' } };
    const { last } = settle(world, MINUTE);
    assert.ok(last.l4Config.listeners.every((listener) => listener.mirror === undefined));
  });

  it('a bad config.mirror or a step with neither weight nor mirror holds the release, naming the field', () => {
    const bad = settle(webWorld(webPort({ mirror: { percent: 150, compare: 'bytes' as 'none' } })), 0).last;
    assert.equal(bad.status.phase, 'Holding');
    const failure = conditionOf(bad, 'Failure').message;
    assert.match(
      failure,
      /spec\.services\[0\]\.ports\[0\]\.config\.mirror\.percent: must be an integer 0-100 \(percent\), got 150/,
    );
    assert.match(
      failure,
      /spec\.services\[0\]\.ports\[0\]\.config\.mirror\.compare: must be "replies" or "none", got "bytes"/,
    );
    const empty = settle(webWorld({ ...WEB_SPEC, steps: [{ pause: {} }, { mirror: 101 }] }), 0).last;
    assert.match(
      conditionOf(empty, 'Failure').message,
      /spec\.steps\[0\]: sets neither weight nor mirror; give it one or both/,
    );
    assert.match(conditionOf(empty, 'Failure').message, /spec\.steps\[1\]\.mirror: must be an integer 0–100, got 101/);
  });

  it('status.ports[].mirror adds up every interval, and kubectl canary-l4 status shows it', () => {
    let { world } = settle(webWorld(webPort({ mirror: { percent: 100, compare: 'replies' } })), 0);
    assert.equal(world.release?.status?.ports?.[0]?.mirror, undefined, 'nothing before anything was mirrored');
    world.evidence = evidence(30_000, { mirrored: 10, compared: 8, equal: 6, different: 2, missing: 1, dropped: 1 });
    ({ world } = settle(world, 30_000));
    world.evidence = evidence(60_000, { mirrored: 5, compared: 5, equal: 5, different: 0, missing: 0, dropped: 0 });
    ({ world } = settle(world, 60_000));
    assert.deepEqual(world.release?.status?.ports?.[0]?.mirror, {
      mirrored: 15,
      compared: 13,
      equal: 11,
      different: 2,
      missing: 1,
      dropped: 1,
    });
    const text = formatStatus(
      { ...world.release!, spec: { ...world.release!.spec, steps: [{ mirror: 50, pause: {} }, { weight: 10 }] } },
      new Date(NOW.getTime() + 60_000),
    );
    assert.match(text, /Steps: 0% mirror 50% until promoted → 10% → adopted/);
    assert.match(text, /Mirrored to the canary/);
    assert.match(text, /web\s+80\/TCP\s+15\s+13\s+11\s+2\s+1\s+1/);
  });
});
