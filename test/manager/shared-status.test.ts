// The proxy and the manager write the same CanaryRelease status: the proxy its phase, ports and
// conditions, the manager status.proxy and ProxyAvailable. Each keeps what the other wrote, so
// neither write undoes the other and neither starts a tug of war of status writes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { applyMergePatch } from '../../src/control/service/patches.ts';
import { plan } from '../../src/manager/plan.ts';
import { PROXY_CONDITION } from '../../src/manager/names.ts';
import type { ManagedRelease } from '../../src/api/proxy-types.ts';
import { converge as convergeWorld, run, webWorld, type World } from '../control/reconcile/world.ts';

/** The release run by the pure reconcile until it serves (test/control/reconcile/world.ts). */
const converge = () => convergeWorld(webWorld());

function setWeight(world: World, weight: number): void {
  const spec = structuredClone(world.release!.spec!);
  (spec.services![0]!.ports![0]!.config as { weight: number }).weight = weight;
  world.release = { ...world.release!, spec, metadata: { ...world.release!.metadata, generation: 2 } };
}

const proxyStatus = {
  deployment: 'canary-l4-rel',
  replicas: 2,
  readyReplicas: 2,
  updatedReplicas: 2,
  ready: '2/2',
  pods: [],
};
const available = {
  type: PROXY_CONDITION,
  status: 'True',
  reason: 'ProxyReady',
  message: '2/2 proxy pods ready',
  lastTransitionTime: '2025-01-01T00:00:00Z',
  observedGeneration: 1,
};

describe('a status shared by the proxy and the manager', () => {
  it("the proxy keeps the manager's condition and status.proxy: no write when nothing of its own changed", () => {
    const { world } = converge();
    const release = world.release!;
    world.release = {
      ...release,
      status: { ...release.status, proxy: proxyStatus, conditions: [...release.status!.conditions!, available] },
    } as typeof release;
    assert.deepEqual(
      run(world).steps,
      [],
      "a converged release stays converged with the manager's fields in its status",
    );
  });

  it("the proxy's next status write (a weight change) leaves ProxyAvailable and status.proxy as they were", () => {
    const { world } = converge();
    const release = world.release!;
    world.release = {
      ...release,
      status: { ...release.status, proxy: proxyStatus, conditions: [...release.status!.conditions!, available] },
    } as typeof release;
    setWeight(world, 50);
    const write = run(world).steps.find((step) => step.kind === 'writeStatus');
    assert.ok(write?.kind === 'writeStatus');
    const after = applyMergePatch(world.release.status, write.status) as ManagedRelease['status'];
    assert.deepEqual(after?.proxy, proxyStatus);
    assert.deepEqual(
      after?.conditions?.find((condition) => (condition.type as string) === PROXY_CONDITION),
      available,
    );
  });

  it("the manager keeps the proxy's conditions in place when it writes its own", () => {
    const { world } = converge();
    const release = {
      ...world.release!,
      metadata: { ...world.release!.metadata, resourceVersion: '7' },
    } as ManagedRelease;
    const write = plan(
      { namespace: 'ns', name: 'rel', release, children: {}, pods: [] },
      { proxyImage: 'canary-l4:1' },
      new Date(),
    ).steps.find((step) => step.kind === 'writeStatus');
    assert.ok(write?.kind === 'writeStatus');
    const proxyConditions = release.status!.conditions!;
    assert.deepEqual(write.patch.status.conditions.slice(0, proxyConditions.length), proxyConditions);
    assert.equal(write.patch.status.conditions.length, proxyConditions.length + 1);
  });
});
