import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CanaryRelease } from '../../../src/api/release-types.ts';
import { ANNOTATION_ORIGINAL } from '../../../src/api/names.ts';
import type { Transition } from '../../../src/api/spec-types.ts';
import {
  applyStep,
  assertCrashSafe,
  clone,
  conditionOf,
  converge,
  options,
  PROXY,
  reasons,
  run,
  service,
  takenOverByOldProxy,
  webWorld,
  WEB_SPEC,
  type World,
} from './world.ts';

const original = () =>
  service(
    'web',
    { app: 'web', version: 'v1' },
    [
      { name: 'http', port: 80, targetPort: 8000 },
      { name: 'https', port: 443, targetPort: 'https', nodePort: 30443 },
    ],
    { type: 'NodePort' },
  );

function running(): World {
  return converge(webWorld(WEB_SPEC, [original()])).world;
}

function withRelease(world: World, change: (release: CanaryRelease) => CanaryRelease): World {
  const next = clone(world);
  assert.ok(next.release);
  next.release = change(next.release);
  return next;
}

const requesting =
  (transition: Transition) =>
  (release: CanaryRelease): CanaryRelease => ({ ...release, spec: { ...release.spec, transition } });
const deleting = (release: CanaryRelease): CanaryRelease => ({
  ...release,
  metadata: { ...release.metadata, deletionTimestamp: '2025-01-01T00:00:00Z' },
});

function assertNoCopies(world: World): void {
  assert.deepEqual([...world.services.keys()], ['web']);
}

describe('transitions', () => {
  it('an invalid release is not adopted (it asks for what is refused), but may still be rolled back; a lower-case transition is refused by name', () => {
    const broken = (release: CanaryRelease): CanaryRelease => ({
      ...release,
      spec: { ...release.spec, steps: [{ weight: 10 }], promotedStep: 5 },
    });
    const adopt = run(withRelease(running(), (release) => requesting('Adopted')(broken(release))));
    assert.equal(adopt.status.phase, 'Holding');
    assert.equal(adopt.status.transition, null);
    assert.match(conditionOf(adopt, 'Failure').message, /spec.promotedStep: 5 is past the last step/);
    assert.deepEqual(
      reasons(adopt).filter((reason) => reason !== 'updateStatus'),
      [],
      'nothing is written but the status',
    );
    const rollback = run(withRelease(running(), (release) => requesting('Deprecated')(broken(release))));
    assert.equal(
      rollback.status.transition?.type,
      'Deprecated',
      'a rollback hands the Services back whatever else the spec says',
    );
    const lower = run(withRelease(running(), requesting('adopted' as Transition)));
    assert.equal(lower.status.phase, 'Holding');
    assert.match(
      conditionOf(lower, 'Failure').message,
      /spec.transition: "adopted" is not a transition; write Adopted \(capitalised\)/,
    );
  });

  it('a second transition is ignored, and said in Progressing and as an ignored decision (an Event)', () => {
    const adopting = run(withRelease(running(), requesting('Adopted')));
    const recorded = withRelease(running(), (release) => ({
      ...requesting('Deprecated')(release),
      status: { ...release.status, transition: adopting.status.transition },
    }));
    const second = run(recorded);
    assert.equal(second.status.transition?.type, 'Adopted');
    assert.match(
      conditionOf(second, 'Progressing').message,
      /spec.transition "Deprecated" is ignored: the transition Adopted \(Requested\) was recorded first and wins/,
    );
    assert.deepEqual(
      second.ignored?.map((item) => item.reason),
      ['TransitionIgnored'],
    );
    assert.equal(
      run(
        withRelease(running(), (release) => ({
          ...requesting('Adopted')(release),
          status: { ...release.status, transition: adopting.status.transition },
        })),
      ).ignored,
      undefined,
      'the same one again is no news',
    );
  });

  it('Adopted: the canary selector, the original targetPorts and nodePorts, in one patch; then the copies and finalizer go', () => {
    const first = run(withRelease(running(), requesting('Adopted')));
    assert.equal(first.mode, 'transition');
    assert.deepEqual(reasons(first), [
      'recordTransition',
      'adopt web',
      'deleteCopy web-forked',
      'deleteCopy web-canary',
      'updateStatus',
      'removeFinalizer',
    ]);
    const end = assertCrashSafe(withRelease(running(), requesting('Adopted'))).world;
    assertNoCopies(end);
    const web = end.services.get('web');
    assert.deepEqual(web?.spec?.selector, { app: 'web', version: 'v2' });
    assert.deepEqual(web?.spec?.ports, original().spec?.ports);
    assert.equal(web?.metadata?.annotations?.[ANNOTATION_ORIGINAL], undefined);
    assert.equal(end.release?.status?.phase, 'Adopted');
    assert.deepEqual(end.release?.metadata.finalizers, []);
    assert.deepEqual(end.release?.status?.ports, []);
  });

  it('Deprecated: the original Service exactly as it was', () => {
    const end = assertCrashSafe(withRelease(running(), requesting('Deprecated'))).world;
    assertNoCopies(end);
    assert.deepEqual(end.services.get('web')?.spec, original().spec);
    assert.equal(end.release?.status?.phase, 'Deprecated');
    const archived = end.release?.status?.conditions?.find((item) => item.type === 'Archived');
    assert.equal(archived?.status, 'True');
  });

  it('deleted CanaryRelease: restores first (finalizer), then lets go', () => {
    const start = withRelease(running(), deleting);
    const first = run(start);
    assert.deepEqual(first.status.transition, {
      type: 'Deprecated',
      reason: 'ReleaseDeleted',
      message: 'the CanaryRelease is being deleted',
    });
    const end = assertCrashSafe(start).world;
    assert.equal(end.release, undefined);
    assert.deepEqual(end.services.get('web')?.spec, original().spec);
    assertNoCopies(end);
  });

  it('listeners stay while an original still targets them, and drain once it is handed back', () => {
    const world = withRelease(running(), requesting('Deprecated'));
    const first = run(world);
    assert.deepEqual(
      first.l4Config.listeners.map((listener) => listener.listen.port),
      [8080, 8081],
    );
    for (const step of first.steps) applyStep(world, step);
    assert.deepEqual(run(world).l4Config.listeners, []);
  });

  for (const [name, change] of [
    ['Adopted', requesting('Adopted')],
    ['Deprecated', requesting('Deprecated')],
    ['deletion', deleting],
  ] as const) {
    it(`${name} from every intermediate state of the rollout`, () => {
      const rollout = converge(webWorld(WEB_SPEC, [original()]));
      for (let k = 0; k <= rollout.steps.length; k += 1) {
        const partial = converge(webWorld(WEB_SPEC, [original()]), options(), k);
        const end = converge(withRelease(partial.world, change)).world;
        assertNoCopies(end);
        const web = end.services.get('web');
        assert.equal(web?.metadata?.annotations?.[ANNOTATION_ORIGINAL], undefined, `after ${k} steps`);
        assert.deepEqual(web?.spec?.ports, original().spec?.ports, `after ${k} steps`);
        assert.deepEqual(
          web?.spec?.selector,
          name === 'Adopted' ? { app: 'web', version: 'v2' } : { app: 'web', version: 'v1' },
          `after ${k} steps`,
        );
      }
    });
  }

  it('a recorded transition wins over a later spec change', () => {
    const world = withRelease(running(), requesting('Adopted'));
    applyStep(world, run(world).steps[0]!); // recordTransition only, then the proxy dies
    const end = converge(withRelease(world, requesting('Deprecated'))).world;
    assert.equal(end.release?.status?.phase, 'Adopted');
    assert.deepEqual(end.services.get('web')?.spec?.selector, { app: 'web', version: 'v2' });
  });

  it('automatic deprecation (a Service a 0.2 proxy took over): a selector changed by someone else stays theirs; our targetPorts go back', () => {
    const world = takenOverByOldProxy(running(), 'web');
    const web = structuredClone(world.services.get('web')!);
    web.spec!.selector = { app: 'web', version: 'v3' };
    world.services.set('web', web);
    const first = run(world);
    assert.deepEqual(first.status.transition?.reason, 'SelectorChanged');
    assert.match(first.status.transition?.message ?? '', /selector was changed by someone else to app=web,version=v3/);
    const end = assertCrashSafe(world).world;
    assertNoCopies(end);
    assert.deepEqual(end.services.get('web')?.spec?.selector, { app: 'web', version: 'v3' });
    assert.deepEqual(end.services.get('web')?.spec?.ports, original().spec?.ports);
    assert.equal(end.release?.status?.phase, 'Deprecated');
  });

  it('automatic deprecation: the original Service deleted', () => {
    const world = running();
    world.services.delete('web');
    const first = run(world);
    assert.equal(first.status.transition?.reason, 'ServiceDeleted');
    const end = assertCrashSafe(world).world;
    assert.deepEqual([...end.services.keys()], []);
    assert.equal(end.release?.status?.phase, 'Deprecated');
    assert.deepEqual(end.release?.metadata.finalizers, []);
  });

  it('a lost saved original blocks the hand-back, keeps serving, and finishes once fixed by hand', () => {
    const world = withRelease(running(), requesting('Deprecated'));
    const web = structuredClone(world.services.get('web')!);
    delete web.metadata!.annotations;
    world.services.set('web', web);
    const { world: stuck, last } = converge(world);
    assert.ok(last);
    assert.equal(conditionOf(last, 'Failure').reason, 'CannotRestore');
    assert.match(conditionOf(last, 'Failure').message, /Service web selects the proxy but its saved original is gone/);
    assert.ok(stuck.services.has('web-forked') && stuck.services.has('web-canary'), 'copies kept');
    assert.deepEqual(
      last.l4Config.listeners.map((listener) => listener.listen.port),
      [8080, 8081],
      'still served',
    );
    const fixed = structuredClone(stuck.services.get('web')!);
    fixed.spec = original().spec;
    stuck.services.set('web', fixed);
    const end = converge(stuck).world;
    assertNoCopies(end);
    assert.equal(end.release?.status?.phase, 'Deprecated');
  });

  it("the proxy's own Service (a metrics Service selects the proxy pods) is not an original: no Failure, the hand-back completes", () => {
    const metrics = service('rel-metrics', PROXY, [{ name: 'admin', port: 9090, targetPort: 'admin' }]);
    const start = webWorld(WEB_SPEC, [original(), metrics]);
    // checkServed off: the metrics Service selects the proxy on its named admin port, not a proxy port.
    const { world, last } = converge(start, options(), Infinity, false);
    assert.ok(last);
    assert.equal(conditionOf(last, 'Failure').status, 'False', conditionOf(last, 'Failure').message);
    const end = converge(withRelease(world, requesting('Deprecated')), options(), Infinity, false).world;
    assert.equal(end.release?.status?.phase, 'Deprecated');
    assert.deepEqual([...end.services.keys()].sort(), ['rel-metrics', 'web']);
    assert.deepEqual(end.services.get('rel-metrics'), metrics, 'left alone');
  });

  it('an archived release does nothing more', () => {
    const end = converge(withRelease(running(), requesting('Deprecated'))).world;
    const again = run(withRelease(end, requesting('')));
    assert.equal(again.mode, 'archived');
    assert.deepEqual(again.steps, []);
    assert.deepEqual(again.l4Config.listeners, []);
  });
});
