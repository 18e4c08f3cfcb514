// The applier against the fake API server: steps run in order, and a leader that loses its Lease
// in the middle of a pass writes nothing more.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, CoreV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { applySteps, type ApplyTarget } from '../../../src/control/loop/apply.ts';
import type { Step } from '../../../src/control/pass/desired.ts';
import { startFakeApiServer, type FakeApiServer } from '../../support/fake-apiserver/index.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';

const addresses = loopbackRange(import.meta.url);

let api: FakeApiServer;
let target: ApplyTarget;

before(async () => {
  api = await startFakeApiServer({ serviceCidr: addresses.cidr });
  target = {
    core: api.kubeConfig.makeApiClient(CoreV1Api),
    apps: api.kubeConfig.makeApiClient(AppsV1Api),
    custom: api.kubeConfig.makeApiClient(CustomObjectsApi),
    namespace: 'default',
    release: 'rel',
    callOptions: {},
  };
});
after(() => api.stop());

const create = (name: string): Step => ({
  kind: 'createService',
  reason: 'createCopy',
  service: { metadata: { name }, spec: { selector: { app: name }, ports: [{ port: 80 }] } },
});

async function serviceNames(): Promise<string[]> {
  return (await target.core.listNamespacedService({ namespace: 'default' })).items
    .map((s) => s.metadata?.name ?? '')
    .sort();
}

describe('applySteps', () => {
  it('runs every step in order while writing is allowed', async () => {
    const done: string[] = [];
    await applySteps(target, [create('a1'), create('a2'), create('a3')], (_step, written) =>
      done.push(written.kind === 'service' ? written.name : '?'),
    );
    assert.deepEqual(done, ['a1', 'a2', 'a3']);
  });

  it('stops before the next step once the leader lost its Lease', async () => {
    let leading = true;
    const done: string[] = [];
    await applySteps(
      target,
      [create('b1'), create('b2'), create('b3')],
      (_step, written) => {
        done.push(written.kind === 'service' ? written.name : '?');
        leading = false; // the Lease is lost while b1 is written
      },
      () => leading,
    );
    assert.deepEqual(done, ['b1']);
    assert.deepEqual(
      (await serviceNames()).filter((name) => name.startsWith('b')),
      ['b1'],
    );
  });
});
