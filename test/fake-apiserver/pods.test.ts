/** The Pods helper (test/support/cluster/pods.ts): the kubelet's part, played through the status subresource. */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { V1Pod } from '@kubernetes/client-node';
import type { FakeApiServer } from '../support/fake-apiserver/index.ts';
import { isPodReady, Pods } from '../support/cluster/pods.ts';
import { apiError, type clients, startFakeWithCrd } from '../support/cluster/api-fixtures.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';

const addresses = loopbackRange(import.meta.url);

let api: FakeApiServer;
let core: ReturnType<typeof clients>['core'];
let pods: Pods;

before(async () => {
  ({ api, core } = await startFakeWithCrd({ serviceCidr: `${addresses.prefix}.0/28` }));
  pods = new Pods(api.kubeConfig, 'default');
});
after(() => api.stop());

const conditions = (pod: V1Pod) => Object.fromEntries((pod.status?.conditions ?? []).map((c) => [c.type, c.status]));
const transitionOf = (pod: V1Pod, type: string) =>
  pod.status!.conditions!.find((c) => c.type === type)!.lastTransitionTime!.getTime();

describe('Pods', () => {
  it('creates a Pending pod with the given labels and container ports', async () => {
    const pod = await pods.create({
      name: 'p1',
      labels: { app: 'web' },
      ports: [{ name: 'http', containerPort: 8000 }],
    });
    assert.equal(pod.status!.phase, 'Pending');
    assert.deepEqual(pod.metadata!.labels, { app: 'web' });
    assert.deepEqual(
      pod.spec!.containers.map((c) => c.ports!.map((p) => [p.name, p.containerPort])),
      [[['http', 8000]]],
    );
    assert.equal(isPodReady(pod), false);
  });

  it('markReady: Running, podIP and podIPs, Ready and ContainersReady True', async () => {
    const pod = await pods.markReady('p1', addresses.ip(100));
    assert.deepEqual(
      [pod.status!.phase, pod.status!.podIP, pod.status!.podIPs!.map((p) => p.ip)],
      ['Running', addresses.ip(100), [addresses.ip(100)]],
    );
    assert.deepEqual(conditions(pod), {
      PodScheduled: 'True',
      Initialized: 'True',
      ContainersReady: 'True',
      Ready: 'True',
    });
    assert.equal(isPodReady(pod), true);
    const listed = await core.listNamespacedPod({
      namespace: 'default',
      fieldSelector: `status.podIP=${addresses.ip(100)}`,
    });
    assert.deepEqual(
      listed.items.map((p) => p.metadata!.name),
      ['p1'],
    );
  });

  it('markNotReady keeps phase and IP; only the flipped conditions get a new lastTransitionTime', async () => {
    const before = await core.readNamespacedPod({ name: 'p1', namespace: 'default' });
    await sleep(5);
    const pod = await pods.markNotReady('p1');
    assert.deepEqual([pod.status!.phase, pod.status!.podIP], ['Running', addresses.ip(100)]);
    assert.deepEqual(conditions(pod), {
      PodScheduled: 'True',
      Initialized: 'True',
      ContainersReady: 'False',
      Ready: 'False',
    });
    assert.equal(transitionOf(pod, 'PodScheduled'), transitionOf(before, 'PodScheduled'));
    assert.ok(transitionOf(pod, 'Ready') > transitionOf(before, 'Ready'));
    assert.equal(isPodReady(await pods.markReady('p1')), true); // the IP is remembered
  });

  it('refuses a Ready pod without an IP; createReady does both steps; delete removes', async () => {
    await pods.create({ name: 'p2' });
    await assert.rejects(pods.markReady('p2'), /a Ready pod needs a podIP/);
    const ready = await pods.createReady({ name: 'p3', labels: { app: 'x' }, podIP: addresses.ip(101) });
    assert.equal(isPodReady(ready), true);
    await pods.delete('p3');
    assert.equal((await apiError(core.readNamespacedPod({ name: 'p3', namespace: 'default' }))).code, 404);
  });
});
