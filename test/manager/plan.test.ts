// The manager's plan for one release, table-tested: when the proxy is needed, what is created,
// replaced or deleted, and what status says — from the release, the objects kept for it and its pods.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject, V1Deployment, V1Pod } from '@kubernetes/client-node';
import { API_VERSION, FINALIZER, KIND } from '../../src/api/names.ts';
import { covers } from '../../src/manager/children.ts';
import { CHILD_KINDS, plan, proxyNeeded, type ChildKind, type ObservedRelease } from '../../src/manager/plan.ts';
import type { Step } from '../../src/manager/step.ts';
import { renderProxy, type RenderedProxy } from '../../src/manager/render.ts';
import { ANNOTATION_RENDERED, PROXY_CONDITION } from '../../src/manager/names.ts';
import type { ManagedRelease } from '../../src/api/proxy-types.ts';

const NOW = new Date('2026-06-01T12:00:00Z');
const SETTINGS = { proxyImage: 'canary-l4:1' };

function release(
  changes: {
    spec?: Record<string, unknown>;
    metadata?: Partial<ManagedRelease['metadata']>;
    status?: Record<string, unknown>;
  } = {},
): ManagedRelease {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: {
      name: 'web-v2',
      namespace: 'shop',
      uid: 'uid-7',
      generation: 4,
      resourceVersion: '100',
      finalizers: [FINALIZER],
      ...changes.metadata,
    },
    spec: { services: [], ...changes.spec },
    status: { phase: 'Running', ...changes.status } as ManagedRelease['status'],
  };
}

function render(from: ManagedRelease = release(), image = SETTINGS.proxyImage): RenderedProxy {
  const result = renderProxy(from, { proxyImage: image });
  assert.ok(result.ok);
  return result.objects;
}

/** An object as the apiserver would store it: identity, a resourceVersion and the defaults it adds. */
function stored<T extends KubernetesObject>(object: T, uid = `uid-${object.kind}`): T {
  const copy = structuredClone(object) as T & { spec?: Record<string, any> };
  copy.metadata = { ...copy.metadata, uid, resourceVersion: '50', creationTimestamp: new Date('2026-06-01T00:00:00Z') };
  if (copy.kind === 'Deployment') {
    copy.spec!.progressDeadlineSeconds = 600;
    copy.spec!.template.spec.dnsPolicy = 'ClusterFirst';
    for (const container of copy.spec!.template.spec.containers)
      Object.assign(container, { imagePullPolicy: 'IfNotPresent', terminationMessagePath: '/dev/termination-log' });
  }
  if (copy.kind === 'Service')
    Object.assign(copy.spec!, {
      clusterIP: '10.0.0.9',
      clusterIPs: ['10.0.0.9'],
      sessionAffinity: 'None',
      ipFamilies: ['IPv4'],
    });
  return copy;
}

function children(
  objects: RenderedProxy,
  only: readonly ChildKind[] = CHILD_KINDS,
): Partial<Record<ChildKind, KubernetesObject>> {
  return Object.fromEntries(only.map((kind) => [kind, stored(objects[kind])]));
}

function observed(changes: Partial<ObservedRelease> = {}): ObservedRelease {
  return { namespace: 'shop', name: 'web-v2', release: release(), children: children(render()), pods: [], ...changes };
}

function readyPod(name: string, ready = true, extra: Partial<V1Pod['status']> = {}): V1Pod {
  return {
    metadata: { name, namespace: 'shop', labels: { 'canary-l4.io/release': 'web-v2' } },
    spec: { containers: [{ name: 'proxy' }], nodeName: 'node-1' },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }], ...extra },
  };
}

const objectSteps = (steps: readonly Step[]) =>
  steps
    .filter((step) => step.kind !== 'writeStatus' && step.kind !== 'writeClassStatus')
    .map((step) => (step.kind === 'delete' ? `delete ${step.child}` : `${step.kind} ${step.child}`));
const statusOf = (steps: readonly Step[]) =>
  steps.find((step): step is Extract<Step, { kind: 'writeStatus' }> => step.kind === 'writeStatus')?.patch;
const conditionOf = (steps: readonly Step[]) =>
  statusOf(steps)?.status.conditions.find((condition) => (condition.type as string) === PROXY_CONDITION);

describe('when a release needs its proxy', () => {
  const cases: [string, ManagedRelease, boolean][] = [
    ['new, not yet seen by its proxy', release({ metadata: { finalizers: undefined }, status: {} }), true],
    ['running', release(), true],
    ['adopting', release({ status: { phase: 'Adopting' } }), true],
    [
      'Adopted, finalizer dropped',
      release({ metadata: { finalizers: undefined }, status: { phase: 'Adopted' } }),
      false,
    ],
    [
      'Deprecated, finalizer dropped',
      release({ metadata: { finalizers: undefined }, status: { phase: 'Deprecated' } }),
      false,
    ],
    ['Adopted, finalizer still there (the proxy drops it last)', release({ status: { phase: 'Adopted' } }), true],
    [
      'being deleted, finalizer still there (the Services are not handed back yet)',
      release({ metadata: { deletionTimestamp: '2026-06-01T11:00:00Z' } }),
      true,
    ],
    [
      'being deleted for another finalizer, never run',
      release({ metadata: { deletionTimestamp: '2026-06-01T11:00:00Z', finalizers: ['other/one'] }, status: {} }),
      false,
    ],
  ];
  for (const [what, item, needed] of cases)
    it(`${what}: ${needed ? 'needed' : 'not needed'}`, () => assert.equal(proxyNeeded(item).needed, needed));
});

describe("the manager's plan", () => {
  it('a new release: everything created, ServiceAccount first, and status says no proxy pod is ready yet', () => {
    const steps = plan(observed({ children: {} }), SETTINGS, NOW).steps;
    assert.deepEqual(objectSteps(steps), [
      'create serviceAccount',
      'create roleBinding',
      'create deployment',
      'create podDisruptionBudget',
      'create metricsService',
    ]);
    assert.deepEqual(statusOf(steps)?.status.proxy, {
      deployment: 'canary-l4-web-v2',
      replicas: 2,
      readyReplicas: 0,
      updatedReplicas: 0,
      ready: '0/2',
      pods: [],
    });
    assert.deepEqual(conditionOf(steps), {
      type: PROXY_CONDITION,
      status: 'False',
      reason: 'NoReadyProxy',
      message: '0/2 proxy pods ready; rolling out, 0/2 updated',
      lastTransitionTime: '2026-06-01T12:00:00Z',
      observedGeneration: 4,
    });
    assert.equal(
      statusOf(steps)?.metadata.resourceVersion,
      '100',
      'the status write is conditional on the release as read',
    );
  });

  it("converged (the apiserver's defaults are no difference): no write at all", () => {
    const objects = render();
    const deployment = stored(objects.deployment) as V1Deployment;
    deployment.status = { replicas: 2, readyReplicas: 2, updatedReplicas: 2 };
    const pods = [readyPod('canary-l4-web-v2-b'), readyPod('canary-l4-web-v2-a')];
    const proxy = {
      deployment: 'canary-l4-web-v2',
      replicas: 2,
      readyReplicas: 2,
      updatedReplicas: 2,
      ready: '2/2',
      pods: [
        { name: 'canary-l4-web-v2-a', ready: true, phase: 'Running', restarts: 0, node: 'node-1' },
        { name: 'canary-l4-web-v2-b', ready: true, phase: 'Running', restarts: 0, node: 'node-1' },
      ],
    };
    const condition = {
      type: PROXY_CONDITION,
      status: 'True',
      reason: 'ProxyReady',
      message: '2/2 proxy pods ready',
      lastTransitionTime: '2026-06-01T10:00:00Z',
      observedGeneration: 4,
    };
    const current = release({ status: { proxy, conditions: [{ type: 'Ready', status: 'True' }, condition] } });
    assert.deepEqual(
      plan(observed({ release: current, children: { ...children(objects), deployment }, pods }), SETTINGS, NOW).steps,
      [],
    );
  });

  it('a hand-deleted Deployment is created again; the rest is left as it is', () => {
    const objects = render();
    const { deployment: _gone, ...rest } = children(objects);
    assert.deepEqual(objectSteps(plan(observed({ children: rest }), SETTINGS, NOW).steps), ['create deployment']);
  });

  it('a Deployment scaled or edited by hand is put back (a PUT on its resourceVersion)', () => {
    const objects = render();
    const edited = stored(objects.deployment) as V1Deployment;
    edited.spec!.replicas = 5;
    edited.spec!.template.spec!.containers[0]!.args = ['proxy', '--weight', 'web:80=0'];
    const steps = plan(observed({ children: { ...children(objects), deployment: edited } }), SETTINGS, NOW).steps;
    assert.deepEqual(objectSteps(steps), ['replace deployment']);
    const replaced = (steps[0] as Extract<Step, { kind: 'replace' }>).object as V1Deployment;
    assert.equal(replaced.metadata?.resourceVersion, '50');
    assert.equal(replaced.metadata?.uid, 'uid-Deployment');
    assert.deepEqual(replaced.spec, objects.deployment.spec);
  });

  it('spec.proxy or --proxy-image changed: the Deployment is replaced (it rolls), nothing else; a field dropped from spec.proxy goes too', () => {
    const before = render(release({ spec: { proxy: { nodeSelector: { pool: 'edge' } } } }));
    const steps = plan(observed({ children: children(before) }), SETTINGS, NOW).steps;
    assert.deepEqual(objectSteps(steps), ['replace deployment']);
    assert.equal(
      ((steps[0] as Extract<Step, { kind: 'replace' }>).object as V1Deployment).spec?.template.spec?.nodeSelector,
      undefined,
    );
    const newImage = plan(observed({ children: children(render()) }), { proxyImage: 'canary-l4:2' }, NOW).steps;
    assert.deepEqual(objectSteps(newImage), ['replace deployment']);
    assert.equal(
      ((newImage[0] as Extract<Step, { kind: 'replace' }>).object as V1Deployment).spec?.template.spec?.containers[0]
        ?.image,
      'canary-l4:2',
    );
  });

  it("a replaced object keeps what others put on it (labels, annotations, a Service's cluster IP)", () => {
    const objects = render();
    const service = stored(objects.metricsService);
    service.metadata = {
      ...service.metadata,
      labels: { ...service.metadata?.labels, team: 'web' },
      annotations: { note: 'kept' },
    };
    (service as { spec: { ports: unknown[] } }).spec.ports = [];
    const steps = plan(observed({ children: { ...children(objects), metricsService: service } }), SETTINGS, NOW).steps;
    const replaced = (steps[0] as Extract<Step, { kind: 'replace' }>).object as typeof service & {
      spec: Record<string, unknown>;
    };
    assert.equal(replaced.metadata?.labels?.team, 'web');
    assert.equal(replaced.metadata?.annotations?.note, 'kept');
    assert.equal(replaced.spec.clusterIP, '10.0.0.9');
    assert.deepEqual(replaced.spec.ports, objects.metricsService.spec?.ports);
  });

  it("a 0.4 proxy's identity, owned by its release, loses that owner (the garbage collector would take it before the pods end); others' owners stay", () => {
    const objects = render();
    const byRelease = { apiVersion: API_VERSION, kind: KIND, name: 'web-v2', uid: 'uid-7', controller: true };
    const other = { apiVersion: 'v1', kind: 'ConfigMap', name: 'audit', uid: 'uid-cm' };
    const owned = <T extends KubernetesObject>(object: T, digest: string): T => {
      const copy = stored(object);
      copy.metadata = {
        ...copy.metadata,
        ownerReferences: [byRelease, other],
        annotations: { ...copy.metadata?.annotations, [ANNOTATION_RENDERED]: digest },
      };
      return copy;
    };
    const live = {
      ...children(objects),
      serviceAccount: owned(objects.serviceAccount, 'rendered-by-0.4'),
      roleBinding: owned(objects.roleBinding, 'rendered-by-0.4'),
    };
    const steps = plan(observed({ children: live }), SETTINGS, NOW).steps;
    assert.deepEqual(objectSteps(steps), ['replace serviceAccount', 'replace roleBinding']);
    for (const step of steps)
      if (step.kind === 'replace') assert.deepEqual(step.object.metadata?.ownerReferences, [other], step.child);
  });

  it('a RoleBinding to another role is deleted (roleRef cannot change) and made again on the next pass', () => {
    const objects = render();
    const binding = stored(objects.roleBinding);
    binding.roleRef = { ...binding.roleRef, name: 'edit' };
    assert.deepEqual(
      objectSteps(plan(observed({ children: { ...children(objects), roleBinding: binding } }), SETTINGS, NOW).steps),
      ['delete roleBinding'],
    );
  });

  it('finished: the proxy and all that came with it are deleted, in the reverse of their creation, and status.proxy goes', () => {
    const done = release({ metadata: { finalizers: undefined }, status: { phase: 'Adopted' } });
    const steps = plan(observed({ release: done }), SETTINGS, NOW).steps;
    assert.deepEqual(objectSteps(steps), [
      'delete metricsService',
      'delete podDisruptionBudget',
      'delete deployment',
      'delete roleBinding',
      'delete serviceAccount',
    ]);
    assert.ok(
      steps.every((step) => step.kind !== 'delete' || step.uid !== undefined),
      'deletes carry the uid as precondition',
    );
    assert.equal(statusOf(steps)?.status.proxy, null);
    assert.deepEqual(
      [conditionOf(steps)?.status, conditionOf(steps)?.reason, conditionOf(steps)?.message],
      ['False', 'ReleaseFinished', 'the release is Adopted: its proxy was removed'],
    );
  });

  it('finished while a proxy pod is still ending: its RoleBinding and ServiceAccount stay until no pod is left, so the API never refuses it', () => {
    const done = release({ metadata: { finalizers: undefined }, status: { phase: 'Adopted' } });
    const ending = readyPod('canary-l4-web-v2-a');
    ending.metadata = { ...ending.metadata, deletionTimestamp: new Date('2026-06-01T11:00:00Z') };
    assert.deepEqual(objectSteps(plan(observed({ release: done, pods: [ending] }), SETTINGS, NOW).steps), [
      'delete metricsService',
      'delete podDisruptionBudget',
      'delete deployment',
    ]);
    assert.deepEqual(
      objectSteps(
        plan(
          observed({ release: done, children: children(render(), ['serviceAccount', 'roleBinding']) }),
          SETTINGS,
          NOW,
        ).steps,
      ),
      ['delete roleBinding', 'delete serviceAccount'],
    );
  });

  it('the release gone: what is left of its proxy goes (only what the manager made), and no status', () => {
    const objects = render();
    const foreign = stored(objects.podDisruptionBudget);
    foreign.metadata = { ...foreign.metadata, labels: { app: 'mine' } };
    const steps = plan(
      observed({ release: undefined, children: { ...children(objects), podDisruptionBudget: foreign } }),
      SETTINGS,
      NOW,
    ).steps;
    assert.deepEqual(objectSteps(steps), [
      'delete metricsService',
      'delete deployment',
      'delete roleBinding',
      'delete serviceAccount',
    ]);
    assert.equal(statusOf(steps), undefined);
  });

  it('being deleted with the finalizer: a missing proxy is made (without an owner), the others are left as they are', () => {
    const deleting = release({
      metadata: { deletionTimestamp: '2026-06-01T11:00:00Z' },
      spec: { proxy: { replicas: 3 } },
    });
    const { deployment: _gone, ...rest } = children(render());
    const steps = plan(observed({ release: deleting, children: rest }), SETTINGS, NOW).steps;
    assert.deepEqual(objectSteps(steps), ['create deployment']);
    assert.equal((steps[0] as Extract<Step, { kind: 'create' }>).object.metadata?.ownerReferences, undefined);
  });

  it("an object of the same name that is not the manager's: nothing is written, and the condition names it", () => {
    const objects = render();
    const foreign = stored(objects.deployment);
    foreign.metadata = { ...foreign.metadata, labels: { app: 'web-proxy' } };
    const steps = plan(observed({ children: { ...children(objects), deployment: foreign } }), SETTINGS, NOW).steps;
    assert.deepEqual(objectSteps(steps), []);
    assert.equal(conditionOf(steps)?.reason, 'NameInUse');
    assert.match(conditionOf(steps)?.message ?? '', /^Deployment canary-l4-web-v2 exist and are not the manager's/);
    assert.equal(
      statusOf(steps)?.status.proxy?.readyReplicas,
      0,
      "the foreign Deployment's pods are not reported as the proxy",
    );
  });

  it('an invalid spec.proxy: nothing is changed (the running proxy keeps serving) and the condition names the field', () => {
    const objects = render();
    const deployment = stored(objects.deployment) as V1Deployment;
    deployment.status = { replicas: 2, readyReplicas: 2, updatedReplicas: 2 };
    const steps = plan(
      observed({
        release: release({ spec: { proxy: { replicas: 0 } } }),
        children: { ...children(objects), deployment },
      }),
      SETTINGS,
      NOW,
    ).steps;
    assert.deepEqual(objectSteps(steps), []);
    assert.equal(conditionOf(steps)?.reason, 'InvalidProxySpec');
    assert.match(
      conditionOf(steps)?.message ?? '',
      /^spec\.proxy\.replicas: must be an integer 1–1000 .*; nothing was changed$/,
    );
    assert.equal(statusOf(steps)?.status.proxy?.ready, '2/2', 'status still shows the proxy that serves');
  });

  it('a refused write is said in the condition (the plan still retries it)', () => {
    const steps = plan(
      observed({ children: {}, refusal: 'Deployment: 403 Forbidden: exceeded quota' }),
      SETTINGS,
      NOW,
    ).steps;
    assert.equal(objectSteps(steps).length, 5);
    assert.deepEqual(
      [conditionOf(steps)?.reason, conditionOf(steps)?.message],
      ['Refused', "the API refused the proxy's objects: Deployment: 403 Forbidden: exceeded quota"],
    );
  });

  it("status: pods sorted by name (ten at most), their reasons, and the proxy's other conditions kept in place", () => {
    const pods = Array.from({ length: 12 }, (_, index) =>
      readyPod(`canary-l4-web-v2-${String(11 - index).padStart(2, '0')}`, index % 2 === 0),
    );
    pods[11] = readyPod('canary-l4-web-v2-00', false, {
      containerStatuses: [
        {
          name: 'proxy',
          image: 'x',
          imageID: '',
          ready: false,
          restartCount: 4,
          state: { waiting: { reason: 'CrashLoopBackOff' } },
        },
      ],
    });
    const objects = render();
    const deployment = stored(objects.deployment) as V1Deployment;
    deployment.status = { replicas: 12, readyReplicas: 2, updatedReplicas: 2 };
    const conditions = [
      { type: 'Ready', status: 'True', reason: 'Serving' },
      { type: 'Failure', status: 'False', reason: 'None' },
    ];
    const steps = plan(
      observed({ release: release({ status: { conditions } }), children: { ...children(objects), deployment }, pods }),
      SETTINGS,
      NOW,
    ).steps;
    const listed = statusOf(steps)?.status.proxy?.pods ?? [];
    assert.deepEqual(
      listed.map((pod) => pod.name),
      Array.from({ length: 10 }, (_, index) => `canary-l4-web-v2-${String(index).padStart(2, '0')}`),
    );
    assert.deepEqual(listed[0], {
      name: 'canary-l4-web-v2-00',
      ready: false,
      phase: 'Running',
      restarts: 4,
      node: 'node-1',
      reason: 'CrashLoopBackOff',
    });
    assert.deepEqual(
      statusOf(steps)?.status.conditions.map((condition) => condition.type),
      ['Ready', 'Failure', PROXY_CONDITION],
    );
    assert.deepEqual(conditionOf(steps)?.message, '2/2 proxy pods ready');
  });

  it("lastTransitionTime moves only when the condition's status does", () => {
    const condition = {
      type: PROXY_CONDITION,
      status: 'False',
      reason: 'NoReadyProxy',
      message: 'old',
      lastTransitionTime: '2026-06-01T09:00:00Z',
      observedGeneration: 4,
    };
    const steps = plan(observed({ release: release({ status: { conditions: [condition] } }) }), SETTINGS, NOW).steps;
    assert.equal(conditionOf(steps)?.lastTransitionTime, '2026-06-01T09:00:00Z');
    const objects = render();
    const deployment = stored(objects.deployment) as V1Deployment;
    deployment.status = { readyReplicas: 1, updatedReplicas: 2 };
    const ready = plan(
      observed({
        release: release({ status: { conditions: [condition] } }),
        children: { ...children(objects), deployment },
      }),
      SETTINGS,
      NOW,
    ).steps;
    assert.equal(conditionOf(ready)?.lastTransitionTime, '2026-06-01T12:00:00Z');
  });
});

describe("covers: the apiserver's defaults are not differences", () => {
  const cases: [string, unknown, unknown, boolean][] = [
    ['extra fields in the live object', { a: 1, b: 2 }, { a: 1 }, true],
    ['a changed value', { a: 1 }, { a: 2 }, false],
    ['a list of another length', { l: [1, 2] }, { l: [1] }, false],
    ['list items with defaults', { l: [{ a: 1, d: 0 }] }, { l: [{ a: 1 }] }, true],
    ['an empty map the server dropped', {}, { m: {} }, true],
    ['the same quantity, written otherwise', { resources: { cpu: '500m' } }, { resources: { cpu: '0.5' } }, true],
    ['another quantity', { resources: { cpu: '500m' } }, { resources: { cpu: '1' } }, false],
    ['quantity-like text outside resources', { name: '1000m' }, { name: '1' }, false],
  ];
  for (const [what, live, desired, expected] of cases)
    it(`${what}: ${expected}`, () => assert.equal(covers(live, desired, []), expected));
});
