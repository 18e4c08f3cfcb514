import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import pino from 'pino';
import { boundedCall } from '../../src/kube/client.ts';
import { EventRecorder } from '../../src/kube/events.ts';

import { startFakeApiServer, type FakeApiServer } from '../support/fake-apiserver/index.ts';
import { waitFor } from '../support/wait.ts';

let api: FakeApiServer;
let core: CoreV1Api;

before(async () => {
  api = await startFakeApiServer();
  core = api.kubeConfig.makeApiClient(CoreV1Api);
});
after(() => api.stop());

const object = {
  apiVersion: 'canary-l4.io/v1alpha1',
  kind: 'CanaryRelease',
  name: 'web-v2',
  namespace: 'default',
  uid: 'uid-1',
};

function recorder(dedupWindowMs = 60_000) {
  return new EventRecorder({
    core,
    namespace: 'default',
    component: 'canary-l4-proxy',
    instance: 'proxy-a',
    log: pino({ level: 'silent' }),
    callOptions: boundedCall(new AbortController().signal, 2_000),
    dedupWindowMs,
  });
}

async function events(reason: string) {
  return (
    await core.listNamespacedEvent({
      namespace: 'default',
      fieldSelector: `involvedObject.name=web-v2,reason=${reason}`,
    })
  ).items;
}

describe('Events', () => {
  it('records an Event on the object, once for the same words within the window', async () => {
    const events1 = recorder();
    for (let index = 0; index < 3; index++)
      events1.record(object, 'Warning', 'WeightHeld', 'web:80/TCP: canary weight held at 0%');
    events1.record(object, 'Normal', 'WeightChanged', 'web:80/TCP: canary weight 0% → 20%');
    await waitFor(async () => (await events('WeightChanged')).length === 1, 'the second event');
    const held = await events('WeightHeld');
    assert.equal(held.length, 1, 'the repeats were not sent');
    assert.deepEqual(
      [held[0]?.type, held[0]?.involvedObject.uid, held[0]?.source?.component, held[0]?.reportingInstance],
      ['Warning', 'uid-1', 'canary-l4-proxy', 'proxy-a'],
    );
  });

  it('says it again once the window has passed', async () => {
    const events2 = recorder(0);
    events2.record(object, 'Normal', 'Retargeted', 'Service web now selects the proxy');
    events2.record(object, 'Normal', 'Retargeted', 'Service web now selects the proxy');
    await waitFor(async () => (await events('Retargeted')).length === 2, 'both events');
  });

  it('never holds up the caller, and drops events when the API fails', async () => {
    api.faults.failNext({ verb: 'create', resource: 'events', code: 500, count: 1 });
    const events3 = recorder();
    events3.record(object, 'Normal', 'Restored', 'one');
    events3.record(object, 'Normal', 'Restored', 'two');
    await waitFor(async () => (await events('Restored')).length === 1, 'the event after the failed one');
    assert.equal((await events('Restored'))[0]?.message, 'two');
  });
});

describe('Events in order', () => {
  it('events of one second list as they happened by eventTime, which is strictly later each time', async () => {
    const ordered = recorder();
    const second = new Date('2026-12-02T10:00:00.500Z');
    const reasons = ['Retargeted', 'StablePatched', 'WeightChanged', 'HandedBack', 'Adopted'].map(
      (reason) => `Ordered${reason}`,
    );
    for (const reason of reasons) ordered.record(object, 'Normal', reason, `${reason} at the same instant`, second);
    await ordered.flushed(5_000);
    const listed = (
      await core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'involvedObject.name=web-v2' })
    ).items.filter((event) => event.reason?.startsWith('Ordered'));
    assert.equal(listed.length, reasons.length);
    const byEventTime = [...listed].sort((a, b) => String(a.eventTime).localeCompare(String(b.eventTime)));
    assert.deepEqual(
      byEventTime.map((event) => event.reason),
      reasons,
    );
    assert.ok(listed.every((event) => event.action === event.reason && event.reportingComponent === 'canary-l4-proxy'));
    // kubectl describe (1.32) sorts by lastTimestamp alone: without one it lists them in no order.
    assert.ok(
      listed.every((event) => event.lastTimestamp != null),
      'a lastTimestamp for kubectl describe',
    );
  });
});
