// What the manager does for a Gateway (src/manager/gateway-proxies/plan.ts) and a GatewayClass (api/gateway/class-status.ts):
// pure, from what the caches hold.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import { GATEWAY_CONTROLLER_NAME } from '../../../src/api/gateway/names.ts';
import type { Condition, Gateway, GatewayClass } from '../../../src/api/gateway/types.ts';
import { classStatusPatch, servesClass } from '../../../src/api/gateway/class-status.ts';
import { planGateway, type ObservedGateway } from '../../../src/manager/gateway-proxies/plan.ts';
import { GATEWAY_KINDS, renderGateway, type GatewayKind } from '../../../src/manager/gateway-proxies/render.ts';
import type { Step } from '../../../src/manager/step.ts';

const SETTINGS = { proxyImage: 'canary-l4:1' };
const NOW = new Date('2026-12-03T12:00:00Z');

function gateway(listeners: Gateway['spec']['listeners'] = [{ name: 'tcp', port: 9300, protocol: 'TCP' }]): Gateway {
  return {
    metadata: { name: 'edge', namespace: 'shop', uid: 'uid-1', generation: 1 },
    spec: { gatewayClassName: 'canary-l4', listeners },
  };
}

/** The objects as the API would hold them once made from `from`. */
function made(from: Gateway): Partial<Record<GatewayKind, KubernetesObject>> {
  const result = renderGateway(from, SETTINGS);
  assert.ok(result.ok);
  const live: Partial<Record<GatewayKind, KubernetesObject>> = {};
  for (const kind of GATEWAY_KINDS) {
    const object = result.objects[kind];
    if (object !== undefined)
      live[kind] = { ...object, metadata: { ...object.metadata, uid: `uid-${kind}`, resourceVersion: '7' } };
  }
  return live;
}

function observed(over: Partial<ObservedGateway> = {}): ObservedGateway {
  return { namespace: 'shop', name: 'edge', gateway: gateway(), classServed: true, children: {}, pods: [], ...over };
}

const steps = (list: readonly Step[]) =>
  list.map((step) =>
    step.kind === 'delete'
      ? `delete ${step.child} ${step.name}`
      : step.kind === 'create' || step.kind === 'replace'
        ? `${step.kind} ${step.child}`
        : step.kind,
  );

describe("the manager's pass for a Gateway", () => {
  it('a Gateway of a served class, nothing made yet: its six objects, account and rights first', () => {
    assert.deepEqual(steps(planGateway(observed(), SETTINGS).steps), [
      'create serviceAccount',
      'create roleBinding',
      'create clusterRoleBinding',
      'create deployment',
      'create podDisruptionBudget',
      'create service',
    ]);
  });

  it('everything made and unchanged: nothing to do', () => {
    assert.deepEqual(planGateway(observed({ children: made(gateway()) }), SETTINGS).steps, []);
  });

  it('a UDP listener added: the Service is replaced with the new port, keeping its cluster IP; nothing else', () => {
    const live = made(gateway());
    live.service = {
      ...live.service!,
      spec: { ...(live.service as { spec: object }).spec, clusterIP: '10.0.0.9' },
    } as KubernetesObject;
    const planned = planGateway(
      observed({
        gateway: gateway([
          { name: 'tcp', port: 9300, protocol: 'TCP' },
          { name: 'udp', port: 9300, protocol: 'UDP' },
        ]),
        children: live,
      }),
      SETTINGS,
    );
    assert.deepEqual(steps(planned.steps), ['replace service']);
    const service = (
      planned.steps[0] as unknown as { object: { spec: { clusterIP: string; ports: { name: string }[] } } }
    ).object;
    assert.deepEqual(
      service.spec.ports.map((port) => port.name),
      ['tcp-9300', 'udp-9300'],
    );
    assert.equal(service.spec.clusterIP, '10.0.0.9');
  });

  it('the last TCP/UDP listener gone: the Service goes', () => {
    const planned = planGateway(
      observed({ gateway: gateway([{ name: 'web', port: 80, protocol: 'HTTP' }]), children: made(gateway()) }),
      SETTINGS,
    );
    assert.deepEqual(steps(planned.steps), ['delete service canary-l4-gateway-edge']);
  });

  const gone: [string, Partial<ObservedGateway>][] = [
    ['the Gateway is gone', { gateway: undefined }],
    [
      'the Gateway is being deleted',
      { gateway: { ...gateway(), metadata: { ...gateway().metadata, deletionTimestamp: '2026-12-03T11:00:00Z' } } },
    ],
    ['its class is not served (another controller, or not accepted)', { classServed: false }],
  ];
  for (const [title, over] of gone) {
    it(`${title}: what is left of its proxy is removed, in reverse; its pods' identity once no pod is left`, () => {
      const children = made(gateway());
      assert.deepEqual(steps(planGateway(observed({ ...over, children }), SETTINGS).steps), [
        'delete service canary-l4-gateway-edge',
        'delete podDisruptionBudget canary-l4-gateway-edge',
        'delete deployment canary-l4-gateway-edge',
        'delete clusterRoleBinding canary-l4-gateway.shop.edge',
        'delete roleBinding canary-l4-gateway-edge',
        'delete serviceAccount canary-l4-gateway-edge',
      ]);
      const pod: V1Pod = { metadata: { name: 'canary-l4-gateway-edge-1', namespace: 'shop' } };
      assert.deepEqual(steps(planGateway(observed({ ...over, children, pods: [pod] }), SETTINGS).steps), [
        'delete service canary-l4-gateway-edge',
        'delete podDisruptionBudget canary-l4-gateway-edge',
        'delete deployment canary-l4-gateway-edge',
      ]);
      assert.deepEqual(planGateway(observed({ ...over }), SETTINGS).steps, [], 'nothing made: nothing to do');
    });
  }

  it("an object of that name that is not the manager's: nothing is written, and one line says which and what to do", () => {
    const mine: KubernetesObject = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'canary-l4-gateway-edge', namespace: 'shop' },
    };
    const planned = planGateway(observed({ children: { service: mine } }), SETTINGS);
    assert.deepEqual(planned.steps, []);
    assert.deepEqual(planned.problems, [
      "Service canary-l4-gateway-edge exist and are not the manager's: delete them, or rename the Gateway",
    ]);
    // And it is never removed as "left over" either.
    assert.deepEqual(planGateway(observed({ gateway: undefined, children: { service: mine } }), SETTINGS).steps, []);
  });

  it("another namespace's Gateway of the same name does not own this ClusterRoleBinding", () => {
    const other = made(gateway());
    const planned = planGateway(
      observed({ namespace: 'other', gateway: undefined, children: { clusterRoleBinding: other.clusterRoleBinding! } }),
      SETTINGS,
    );
    assert.deepEqual(planned.steps, []);
  });
});

describe('the Accepted condition of a GatewayClass', () => {
  const ours = (over: Partial<GatewayClass['spec']> = {}, conditions?: Condition[], generation = 3): GatewayClass => ({
    metadata: { name: 'canary-l4', generation, resourceVersion: '41' },
    spec: { controllerName: GATEWAY_CONTROLLER_NAME, ...over },
    ...(conditions === undefined ? {} : { status: { conditions } }),
  });
  // What the CRD's default puts on a class no controller has looked at.
  const pending: Condition = {
    type: 'Accepted',
    status: 'Unknown',
    reason: 'Pending',
    message: 'Waiting for controller',
    lastTransitionTime: '1970-01-01T00:00:00Z',
  };
  const accepted: Condition = {
    type: 'Accepted',
    status: 'True',
    reason: 'Accepted',
    message: `accepted by ${GATEWAY_CONTROLLER_NAME}`,
    observedGeneration: 3,
    lastTransitionTime: '2026-12-01T00:00:00Z',
  };

  it('Pending (the CRD default) becomes True/Accepted with observedGeneration, through a write that carries the resourceVersion', () => {
    assert.deepEqual(classStatusPatch(ours({}, [pending]), NOW), {
      metadata: { resourceVersion: '41' },
      status: { conditions: [{ ...accepted, lastTransitionTime: '2026-12-03T12:00:00Z' }] },
    });
    assert.deepEqual(classStatusPatch(ours(), NOW)?.status.conditions, [
      { ...accepted, lastTransitionTime: '2026-12-03T12:00:00Z' },
    ]);
  });

  it('already Accepted at this generation: no write (no loop on its own watch event)', () => {
    assert.equal(classStatusPatch(ours({}, [accepted]), NOW), undefined);
  });

  it('a new generation: written again, lastTransitionTime kept (the status did not flip), other conditions kept', () => {
    const other: Condition = { ...accepted, type: 'SupportedVersion', reason: 'SupportedVersion' };
    assert.deepEqual(classStatusPatch(ours({}, [other, accepted], 4), NOW)?.status.conditions, [
      other,
      { ...accepted, observedGeneration: 4 },
    ]);
  });

  it('spec.parametersRef set: False/InvalidParameters, saying to remove it; its Gateways are not served', () => {
    const withParameters = ours({ parametersRef: { group: 'example.io', kind: 'Config', name: 'c' } }, [accepted]);
    assert.deepEqual(classStatusPatch(withParameters, NOW)?.status.conditions, [
      {
        type: 'Accepted',
        status: 'False',
        reason: 'InvalidParameters',
        message: 'spec.parametersRef: canary-l4 takes no parameters, got Config c; remove spec.parametersRef',
        observedGeneration: 3,
        lastTransitionTime: '2026-12-03T12:00:00Z',
      },
    ]);
    assert.equal(servesClass(withParameters), false);
    assert.equal(servesClass(ours()), true);
  });

  it("another controller's class is not served", () => {
    assert.equal(servesClass({ ...ours(), spec: { controllerName: 'example.io/other' } }), false);
    assert.equal(servesClass(undefined), false);
  });
});
