/** core/v1 Events: served, selectable by the fields kube-apiserver allows, and shown by kubectl. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { CoreV1Event } from '@kubernetes/client-node';
import type { FakeApiServer } from '../support/fake-apiserver/index.ts';
import {
  apiError,
  type clients,
  CR,
  type Kubectl,
  kubectlFor,
  startFakeWithCrd,
} from '../support/cluster/api-fixtures.ts';
import { requireTool } from '../support/process/required-tool.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';

const addresses = loopbackRange(import.meta.url);

// Awaited before any suite is declared: under --test-force-exit, a suite declared after a top-level
// await never runs (the runner exits once the suites before it are done).
const kubectlAtHand = await requireTool('kubectl');

let api: FakeApiServer;
let core: ReturnType<typeof clients>['core'];
let releaseUid: string;
const ns = 'default';

/** An Event about `object`, as a controller's event recorder writes it. */
function event(
  name: string,
  object: { apiVersion: string; kind: string; name: string; uid?: string },
  extra: Partial<CoreV1Event> = {},
): CoreV1Event {
  const now = new Date();
  return {
    metadata: { name },
    involvedObject: { ...object, namespace: ns },
    reason: 'WeightChanged',
    message: `${name} happened`,
    type: 'Normal',
    source: { component: 'canary-l4' },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
    ...extra,
  };
}

before(async () => {
  let custom: ReturnType<typeof clients>['custom'];
  ({ api, core, custom } = await startFakeWithCrd({ serviceCidr: `${addresses.prefix}.0/28` }));
  const release = await custom.createNamespacedCustomObject({
    ...CR,
    namespace: ns,
    body: {
      apiVersion: 'canary-l4.io/v1alpha1',
      kind: 'CanaryRelease',
      metadata: { name: 'c1' },
      spec: { weight: 10 },
    },
  });
  releaseUid = release.metadata.uid;
  const c1 = { apiVersion: 'canary-l4.io/v1alpha1', kind: 'CanaryRelease', name: 'c1', uid: releaseUid };
  const web = { apiVersion: 'v1', kind: 'Service', name: 'web' };
  for (const body of [
    event('c1.weight', c1),
    event('c1.refused', c1, {
      reason: 'TakeoverRefused',
      type: 'Warning',
      source: {},
      reportingComponent: 'canary-l4-proxy',
    }),
    event('web.changed', web, {
      reason: 'SelectorChanged',
      firstTimestamp: new Date(Date.now() - 60_000),
      lastTimestamp: new Date(Date.now() - 60_000),
    }),
  ])
    await core.createNamespacedEvent({ namespace: ns, body });
});
after(() => api.stop());

describe('core/v1 Events', () => {
  const names = async (fieldSelector: string) =>
    (await core.listNamespacedEvent({ namespace: ns, fieldSelector })).items.map((e) => e.metadata!.name).sort();

  const cases: Array<[string, string[]]> = [
    ['involvedObject.kind=CanaryRelease', ['c1.refused', 'c1.weight']],
    ['involvedObject.name=web', ['web.changed']],
    ['involvedObject.namespace=default,involvedObject.apiVersion=v1', ['web.changed']],
    ['reason=TakeoverRefused', ['c1.refused']],
    ['type=Warning', ['c1.refused']],
    ['type!=Warning,involvedObject.kind=CanaryRelease', ['c1.weight']],
    // `source` is source.component, or reportingComponent when that is empty.
    ['source=canary-l4', ['c1.weight', 'web.changed']],
    ['source=canary-l4-proxy', ['c1.refused']],
  ];
  for (const [selector, want] of cases)
    it(`fieldSelector ${selector}`, async () => assert.deepEqual(await names(selector), want));

  it('selects by involvedObject.uid; other fields are refused with 400', async () => {
    assert.deepEqual(await names(`involvedObject.uid=${releaseUid}`), ['c1.refused', 'c1.weight']);
    const e = await apiError(core.listNamespacedEvent({ namespace: ns, fieldSelector: 'message=x' }));
    assert.deepEqual([e.code, e.body.message], [400, 'field label not supported: message']);
  });

  it('are typed Event / EventList and have no status subresource', async () => {
    const list = await core.listNamespacedEvent({ namespace: ns });
    assert.equal(list.kind, 'EventList');
    const res = await fetch(`${api.url}/api/v1/namespaces/${ns}/events/c1.weight/status`);
    assert.equal(res.status, 404);
  });
});

describe('Events through kubectl', kubectlAtHand, () => {
  let k: Kubectl;
  before(async () => (k = await kubectlFor(api)));
  after(() => k.cleanup());

  it('kubectl get events --field-selector involvedObject.name=…', async () => {
    const out = await k('get', 'events', '--field-selector', 'involvedObject.name=c1', '-o', 'name');
    assert.deepEqual(out.trim().split('\n').sort(), ['event/c1.refused', 'event/c1.weight']);
  });

  it('kubectl get events --sort-by=.lastTimestamp lists them oldest first (client-node sends milliseconds; stored in whole seconds)', async () => {
    const out = await k('get', 'events', '--sort-by=.lastTimestamp', '-o', 'name');
    const listed = out.trim().split('\n');
    assert.equal(listed[0], 'event/web.changed', out);
    assert.deepEqual([...listed].sort(), ['event/c1.refused', 'event/c1.weight', 'event/web.changed']);
    const stored = await k('get', 'event', 'c1.weight', '-o', 'jsonpath={.lastTimestamp}');
    assert.match(stored, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    // Printed (a Table whose rows carry the whole objects, includeObject=Object, to sort on).
    const printed = (await k('get', 'events', '--sort-by=.lastTimestamp')).trim().split('\n');
    assert.match(printed[0]!, /^LAST SEEN\s+TYPE\s+REASON\s+OBJECT\s+MESSAGE$/);
    assert.equal(printed.length, 4, printed.join('\n'));
    assert.match(printed[1]!, /^\S+\s+Normal\s+SelectorChanged\s+service\/web\s/, 'the oldest first');
  });

  it('kubectl describe <custom kind> shows the events about it', async () => {
    const out = await k('describe', 'canaryrelease', 'c1');
    assert.match(out, /^Events:\n\s+Type\s+Reason\s+Age\s+From\s+Message\n/m);
    assert.match(out, /^\s+Normal\s+WeightChanged\s+\S+\s+canary-l4\s+c1\.weight happened$/m);
    assert.match(out, /^\s+Warning\s+TakeoverRefused\s+\S+\s+canary-l4-proxy\s+c1\.refused happened$/m);
    assert.doesNotMatch(out, /SelectorChanged/);
  });
});
