import { after, afterEach, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoordinationV1Api, type KubeConfig, V1MicroTime } from '@kubernetes/client-node';
import pino from 'pino';
import { startFakeApiServer, type FakeApiServer } from '../support/fake-apiserver/index.ts';
import { LeaderElector } from '../../src/kube/lease.ts';
import { mergePatch } from '../../src/kube/patch.ts';
import { waitFor } from '../support/wait.ts';
import { Http1KubeConfig } from '../../src/kube/client.ts';

const log = pino({ level: 'silent' });
let api: FakeApiServer;
let leaseCounter = 0;
/** Every elector a test made: stopped after each test, passed or failed, so none keeps the process alive. */
const campaigning: LeaderElector[] = [];

before(async () => {
  api = await startFakeApiServer();
});
afterEach(async () => {
  await Promise.all(campaigning.splice(0).map((elector) => elector.stop()));
});
after(() => api.stop());

/** The fake as `user`, its bearer token, which the request log records: one candidate's requests from another's. */
function kubeConfigAs(user: string): KubeConfig {
  const kubeConfig = new Http1KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'fake', server: api.url, skipTLSVerify: true }],
    users: [{ name: user, token: user }],
    contexts: [{ name: 'fake', cluster: 'fake', user }],
    currentContext: 'fake',
  });
  return kubeConfig;
}

/** Requests `identity` has sent for `lease` so far. */
const requestsOf = (identity: string, lease: string) =>
  api.requests.filter((request) => request.user === identity && request.name === lease).length;

/** Two candidates for one fresh lease, with fast timings; records who leads over time. */
function candidates(names: string[]) {
  const lease = `lease-${++leaseCounter}`;
  const leading = new Set<string>();
  const history: string[] = [];
  const electors = names.map(
    (identity) =>
      new LeaderElector({
        coordination: kubeConfigAs(identity).makeApiClient(CoordinationV1Api),
        namespace: 'default',
        name: lease,
        identity,
        leaseDurationMs: 1_000,
        renewDeadlineMs: 600,
        retryPeriodMs: 100,
        requestTimeoutMs: 500,
        log,
        onStartedLeading: () => {
          leading.add(identity);
          history.push(`+${identity}`);
        },
        onStoppedLeading: () => {
          leading.delete(identity);
          history.push(`-${identity}`);
        },
      }),
  );
  campaigning.push(...electors);
  return { lease, leading, history, electors };
}

describe('leader election on a Lease', () => {
  it('exactly one of two candidates leads, and keeps leading while it renews', async () => {
    const { leading, history, electors } = candidates(['a', 'b']);
    for (const e of electors) e.start();
    await waitFor(() => leading.size === 1, 'a leader', 3_000);
    const first = [...leading][0];
    await sleep(2_500); // longer than the lease duration: renewals must keep it
    assert.deepEqual([...leading], [first]);
    assert.deepEqual(history, [`+${first}`], 'no flapping');
    await Promise.all(electors.map((e) => e.stop()));
  });

  it('a leader that stops releases the lease and the follower takes over at once', async () => {
    const { lease, leading, electors } = candidates(['a', 'b']);
    const [a, b] = electors as [LeaderElector, LeaderElector];
    a.start();
    await waitFor(() => a.isLeader, 'a to lead', 3_000);
    b.start();
    await waitFor(() => requestsOf('b', lease) >= 3, 'b to try the Lease three times', 3_000);
    assert.equal(b.isLeader, false);
    const stoppedAt = Date.now();
    await a.stop();
    await waitFor(() => b.isLeader, 'b to take over', 3_000);
    assert.ok(Date.now() - stoppedAt < 900, 'handover faster than the lease duration: the lease was released');
    assert.deepEqual([...leading], ['b']);
    await b.stop();
  });

  it('a leader that dies without releasing is replaced once the lease expires, not before', async () => {
    const { electors } = candidates(['a', 'b']);
    const [a, b] = electors as [LeaderElector, LeaderElector];
    a.start();
    await waitFor(() => a.isLeader, 'a to lead', 3_000);
    b.start();
    await a.stop(false); // as if killed: the lease still names a
    const diedAt = Date.now();
    await waitFor(() => b.isLeader, 'b to take over', 5_000);
    assert.ok(Date.now() - diedAt >= 900, 'no takeover before the lease duration passed');
    await b.stop();
  });

  it('a leader cut off from the API steps down after the renew deadline', async () => {
    const { leading, electors } = candidates(['a']);
    const [a] = electors as [LeaderElector];
    a.start();
    await waitFor(() => a.isLeader, 'a to lead', 3_000);
    const outage = api.faults.refuseConnections(2_000);
    await waitFor(() => !a.isLeader, 'a to step down', 2_000);
    await outage;
    await waitFor(() => a.isLeader, 'a to lead again after the outage', 3_000);
    assert.deepEqual([...leading], ['a']);
    await a.stop();
  });

  it('a leader whose Lease now names another holder steps down within a second and leaves the Lease to it', async () => {
    const { lease, history, electors } = candidates(['a']);
    const [a] = electors as [LeaderElector];
    a.start();
    await waitFor(() => a.isLeader, 'a to lead', 3_000);
    // As another replica that took the Lease over would have written it: held by b, just renewed,
    // for longer than this test, so a has no reason to take it back.
    const coordination = api.kubeConfig.makeApiClient(CoordinationV1Api);
    await coordination.patchNamespacedLease(
      {
        name: lease,
        namespace: 'default',
        body: { spec: { holderIdentity: 'b', renewTime: new V1MicroTime(Date.now()), leaseDurationSeconds: 30 } },
      },
      mergePatch(),
    );
    await waitFor(() => !a.isLeader, 'a to step down', 1_000);
    assert.deepEqual(history, ['+a', '-a'], 'onStoppedLeading called once');
    const asked = requestsOf('a', lease);
    await waitFor(() => requestsOf('a', lease) >= asked + 3, 'a to read the Lease three more times', 3_000);
    const taken = await coordination.readNamespacedLease({ name: lease, namespace: 'default' });
    assert.equal(taken.spec?.holderIdentity, 'b', 'a wrote itself back into the Lease');
    assert.equal(a.isLeader, false);
  });
});
