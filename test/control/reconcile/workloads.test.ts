// Managed canary workloads (issue 12) on the pure reconcile: the canary Deployment made from the
// stable one, the forked copy pinned to the stable pods' hash, StableChanged, and Adopted /
// Deprecated with their workload steps — each from every intermediate state (assertCrashSafe).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Deployment } from '@kubernetes/client-node';
import type { Step } from '../../../src/control/pass/desired.ts';
import { LABEL_TEMPLATE_HASH, LABEL_TRACK, type Labels } from '../../../src/api/names.ts';
import type { CanaryReleaseSpec, Transition } from '../../../src/api/spec-types.ts';
import { deployment, rollOut, templateHash } from './deployments.ts';
import {
  assertCrashSafe,
  clone,
  conditionOf,
  converge,
  reasons,
  TAKEN,
  release,
  run,
  service,
  webWorld,
  type World,
} from './world.ts';

const IMAGE_2 = 'example/web:2';

function spec(
  patch: unknown = { spec: { containers: [{ name: 'web', image: IMAGE_2 }] } },
  extra: Partial<CanaryReleaseSpec> = {},
): CanaryReleaseSpec {
  return {
    workloads: [{ kind: 'Deployment', name: 'web', replicas: 1, patch }],
    services: [{ service: 'web', ports: [{ port: 80, protocol: 'TCP', config: { weight: 20 } }] }],
    ...extra,
  };
}

/** A stable Deployment `web` (2 pods) behind Service `web`, a release of it; nothing done yet. */
function start(stableLabels: Labels = { app: 'web' }, releaseSpec: CanaryReleaseSpec = spec()): World {
  const world = webWorld(releaseSpec, [service('web', stableLabels, [{ name: 'http', port: 80, targetPort: 8000 }])]);
  world.pods = world.pods.filter((item) => item.metadata?.name === 'proxy-a');
  rollOut(world, deployment('web', stableLabels));
  return world;
}

const stableHash = (world: World) => templateHash(world.deployments.get('web')!);
const imageOf = (item: V1Deployment | undefined) => item?.spec?.template?.spec?.containers[0]?.image;

function requesting(world: World, transition: Transition): World {
  const next = clone(world);
  next.release = { ...next.release!, spec: { ...next.release!.spec, transition } };
  return next;
}

describe('managed canary workloads', () => {
  it('makes <name>-canary from the stable template and the patch, with the track label, owned by the release', () => {
    const world = start();
    const first = run(world);
    const create = first.steps.find(
      (step): step is Extract<Step, { kind: 'createDeployment' }> => step.kind === 'createDeployment',
    );
    assert.ok(create, `a createDeployment step in ${reasons(first).join(', ')}`);
    const canary = create.deployment;
    assert.equal(canary.metadata?.name, 'web-canary');
    assert.equal(imageOf(canary), IMAGE_2);
    assert.deepEqual(canary.spec?.template?.metadata?.labels, { app: 'web', [LABEL_TRACK]: 'canary' });
    assert.deepEqual(canary.spec?.selector?.matchLabels, { app: 'web', [LABEL_TRACK]: 'canary' });
    assert.equal(canary.spec?.replicas, 1);
    assert.deepEqual(
      canary.metadata?.ownerReferences?.map((owner) => [owner.kind, owner.uid, owner.controller]),
      [['CanaryRelease', 'uid-rel', true]],
    );
    assert.deepEqual(first.status.workloads, [
      { name: 'web', canary: 'web-canary', stableHash: stableHash(world), canaryReady: '0/0' },
    ]);
  });

  it('pins the forked copy to the stable pods, so canary pods (which carry every stable label) get no stable traffic', () => {
    const { world, last } = converge(start());
    assert.deepEqual(world.services.get('web-forked')?.spec?.selector, {
      app: 'web',
      [LABEL_TEMPLATE_HASH]: stableHash(world),
    });
    assert.deepEqual(world.services.get('web-canary')?.spec?.selector, { app: 'web', [LABEL_TRACK]: 'canary' });
    assert.deepEqual(world.services.get('web')?.spec?.selector, { app: TAKEN });
    assert.equal(last && conditionOf(last, 'Failure').status, 'False', 'the selectors select apart');
    assert.equal(last?.status.weights, 'web:80=20%');
    assert.deepEqual(last?.status.workloads?.[0]?.canaryReady, '1/1');
  });

  it('a changed patch or replica count updates the canary Deployment; a relabelling patch makes it again (its selector is immutable)', () => {
    const { world } = converge(start({ app: 'web', version: 'base' }));
    const newImage = clone(world);
    newImage.release = {
      ...newImage.release!,
      spec: spec({ spec: { containers: [{ name: 'web', image: 'example/web:3' }] } }),
    };
    assert.deepEqual(reasons(run(newImage)), ['updateCanaryWorkload web-canary']);
    assert.equal(imageOf(converge(newImage).world.deployments.get('web-canary')), 'example/web:3');
    const relabelled = clone(world);
    relabelled.release = { ...relabelled.release!, spec: spec({ metadata: { labels: { version: 'next' } } }) };
    assert.deepEqual(
      reasons(run(relabelled)).filter((reason) => reason.includes('CanaryWorkload')),
      ['deleteCanaryWorkload web-canary'],
    );
    const end = converge(relabelled, undefined, Infinity, false).world;
    assert.deepEqual(end.deployments.get('web-canary')?.spec?.selector?.matchLabels, {
      app: 'web',
      version: 'next',
      [LABEL_TRACK]: 'canary',
    });
    assert.deepEqual(end.services.get('web-canary')?.spec?.selector, {
      app: 'web',
      version: 'next',
      [LABEL_TRACK]: 'canary',
    });
  });

  it('the canary weight is held at 0 until the canary Deployment has a Ready pod', () => {
    const { world } = converge(start());
    world.pods = world.pods.map((item) =>
      item.metadata?.labels?.[LABEL_TRACK] === 'canary'
        ? { ...item, status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'False' }] } }
        : item,
    );
    assert.equal(run(world).status.weights, 'web:80=0% (asks 20%)');
  });

  it('a patch that relabels the canary pods (version: base → canary): the selectors follow it, and still select apart', () => {
    const labels = { app: 'web', version: 'base' };
    const { world, last } = converge(start(labels, spec({ metadata: { labels: { version: 'canary' } } })));
    assert.deepEqual(world.deployments.get('web-canary')?.spec?.selector?.matchLabels, {
      app: 'web',
      version: 'canary',
      [LABEL_TRACK]: 'canary',
    });
    assert.deepEqual(world.services.get('web-canary')?.spec?.selector, {
      app: 'web',
      version: 'canary',
      [LABEL_TRACK]: 'canary',
    });
    assert.deepEqual(world.services.get('web-forked')?.spec?.selector, {
      ...labels,
      [LABEL_TEMPLATE_HASH]: stableHash(world),
    });
    assert.equal(last?.status.weights, 'web:80=20%');
  });

  it('a stable rollout underneath the release deprecates it (StableChanged): the canary goes first, then the Service comes back as it was', () => {
    const running = converge(start()).world;
    const changed = clone(running);
    const stable = changed.deployments.get('web')!;
    rollOut(changed, {
      ...stable,
      metadata: { ...stable.metadata, generation: 2 },
      spec: {
        ...stable.spec!,
        template: { ...stable.spec!.template, spec: { containers: [{ name: 'web', image: 'example/web:1.1' }] } },
      },
    });
    const first = run(changed);
    assert.equal(first.status.transition?.reason, 'StableChanged');
    assert.match(first.status.transition?.message ?? '', /the stable Deployment web was changed during the release/);
    const end = assertCrashSafe(changed).world;
    assert.equal(end.release?.status?.phase, 'Deprecated');
    assert.deepEqual(end.services.get('web')?.spec?.selector, { app: 'web' });
    assert.equal(end.deployments.has('web-canary'), false);
    assert.equal(end.services.has('web-forked'), false);
  });

  it('Deprecated hands the Service back only once no canary pod matches its selector', () => {
    const world = requesting(converge(start()).world, 'Deprecated');
    const first = run(world);
    assert.deepEqual(reasons(first), ['recordTransition', 'deleteCanaryWorkload web-canary', 'updateStatus']);
    assert.match(
      conditionOf(first, 'Progressing').message,
      /canary pods web-canary-\w+-0 still match its original selector/,
    );
    assert.equal(
      first.l4Config.listeners[0]?.backends.find((backend) => backend.name === 'canary')?.weight,
      0,
      'a rollback sends the canary nothing more',
    );
    const end = assertCrashSafe(world).world;
    assert.equal(end.release?.status?.phase, 'Deprecated');
    assert.deepEqual(end.services.get('web')?.spec?.selector, { app: 'web' });
    assert.equal(imageOf(end.deployments.get('web')), 'example/web:1', 'the stable Deployment is left alone');
  });

  it('Adopted puts the patch on the stable Deployment, waits for its rollout, hands the Service back, then removes the canary', () => {
    const world = requesting(converge(start()).world, 'Adopted');
    const first = run(world);
    assert.deepEqual(reasons(first), ['recordTransition', 'adoptStable web', 'updateStatus']);
    const patch = first.steps.find(
      (step): step is Extract<Step, { kind: 'patchDeployment' }> => step.kind === 'patchDeployment',
    );
    assert.deepEqual(patch?.patch, { spec: { template: { spec: { containers: [{ name: 'web', image: IMAGE_2 }] } } } });
    const end = assertCrashSafe(world).world;
    assert.equal(end.release?.status?.phase, 'Adopted');
    assert.equal(imageOf(end.deployments.get('web')), IMAGE_2, 'the stable Deployment is the new version');
    assert.deepEqual(
      end.deployments.get('web')?.spec?.template?.metadata?.labels,
      { app: 'web' },
      'its labels untouched',
    );
    assert.deepEqual(
      end.services.get('web')?.spec?.selector,
      { app: 'web' },
      'the Service selects the stable pods again',
    );
    assert.equal(end.deployments.has('web-canary'), false);
  });

  it('Adopting, a patch edited into one that leaves no image is not put on the stable Deployment, and says why', () => {
    const world = requesting(converge(start()).world, 'Adopted');
    const recorded = clone(world);
    recorded.release = {
      ...recorded.release!,
      status: { ...recorded.release!.status, transition: run(world).status.transition },
    };
    recorded.release = {
      ...recorded.release,
      spec: {
        ...recorded.release.spec,
        workloads: [{ name: 'web', patch: { spec: { containers: [{ name: 'web', image: '' }] } } }],
      },
    };
    const edited = run(recorded);
    assert.equal(
      edited.steps.some((step) => step.kind === 'patchDeployment'),
      false,
      'the stable Deployment is not patched',
    );
    assert.match(
      conditionOf(edited, 'Failure').message,
      /spec.workloads\[0\].patch.spec.containers\[name=web\].image: the container has no image; set one \(e.g. registry.example\/app:v2\); Deployment web takes no patch until it is fixed/,
    );
  });

  it('Adopted waits for an available canary pod before touching the stable Deployment, and for the stable rollout before the hand-back', () => {
    const running = converge(start()).world;
    const noCanary = requesting(running, 'Adopted');
    const canary = noCanary.deployments.get('web-canary')!;
    noCanary.deployments.set('web-canary', { ...canary, status: { ...canary.status, availableReplicas: 0 } });
    const waiting = run(noCanary);
    assert.equal(
      waiting.steps.some((step) => step.kind === 'patchDeployment'),
      false,
    );
    assert.match(conditionOf(waiting, 'Progressing').message, /Deployment web-canary has no available pod/);

    const patched = converge(requesting(running, 'Adopted'), undefined, 3).world; // recorded, patched, status says so
    const stable = patched.deployments.get('web')!;
    patched.deployments.set('web', {
      ...stable,
      status: { ...stable.status, updatedReplicas: 1, availableReplicas: 1 },
    });
    const rolling = run(patched);
    assert.equal(rolling.status.phase, 'Adopting');
    assert.match(conditionOf(rolling, 'Progressing').message, /rolling out Deployment web: 1\/2 updated, 1 available/);
    assert.deepEqual(patched.services.get('web')?.spec?.selector, { app: TAKEN }, 'still on the proxy');
  });

  it('bad workloads hold the release, naming the field', () => {
    for (const [name, releaseSpec, message] of [
      [
        'missing',
        { ...spec(), workloads: [{ name: 'nope' }] },
        /spec.workloads\[0\].name: Deployment nope not found in the namespace/,
      ],
      [
        'kind',
        { ...spec(), workloads: [{ kind: 'StatefulSet', name: 'web' }] },
        /spec.workloads\[0\].kind: "StatefulSet" is not supported; only Deployment/,
      ],
      ['patch', spec('not a map'), /spec.workloads\[0\].patch: must be a map/],
      [
        'patch list',
        spec({ spec: { containers: [{ image: 'x' }] } }),
        /spec.workloads\[0\].patch: spec.containers: every item needs its name/,
      ],
      [
        'no workload selected',
        { ...spec(), services: [{ service: 'other', ports: [{ port: 80 }] }] },
        /spec.services\[0\]: Service other selects app=other, the pods of none of spec.workloads/,
      ],
    ] as const) {
      const world = start();
      world.services.set('other', service('other', { app: 'other' }, [{ port: 80 }]));
      world.release = release(releaseSpec as CanaryReleaseSpec);
      const desired = run(world);
      assert.equal(desired.status.phase, 'Holding', name);
      assert.match(conditionOf(desired, 'Failure').message, message, name);
      assert.equal(
        desired.steps.some(
          (step) =>
            step.kind === 'createDeployment' || (step.kind === 'patchService' && step.reason !== 'saveOriginal'),
        ),
        false,
        name,
      );
    }
  });
});
