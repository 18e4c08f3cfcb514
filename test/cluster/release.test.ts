// A release as a platform team runs one, on a real control plane (npm run test:cluster; skipped by
// npm test, which has only the fake): `kubectl apply --server-side -k deploy/` installs the CRD and
// the manager, whose two pods run `canary-l4 manager` as the ServiceAccount deploy/ makes, bound by
// exactly deploy/'s RBAC. An app Deployment (2 pods) behind a Service gets a CanaryRelease with a
// managed canary workload; the manager makes its proxy Deployment; the real Deployment controller
// and scheduler make every pod; the simulated node runs them; clients reach the Service through the
// kube-proxy simulation, which routes by the EndpointSlices the real EndpointSlice controller writes
// (with CANARY_TEST_NODE=real: two real nodes run them, and clients connect from node 1's network
// namespace through the real kube-proxy's rules).
// Then: the split, `kubectl canary-l4 status`, a leader proxy deleted mid-release, proxies restarted
// while the API is frozen (their --state-dir config), Adopted (the stable Deployment rolled by the
// real controller), a release rolled back by its analysis on its own, and one deleted mid-release
// (its finalizer, owner references and the real garbage collector). No client connection fails.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AppsV1Api, CoordinationV1Api, CoreV1Api, CustomObjectsApi, type V1Service } from '@kubernetes/client-node';
import { GROUP, PLURAL, VERSION } from '../../src/api/names.ts';
import { isTakeoverSelector } from '../../src/control/service/takeover-selector.ts';
import type { CanaryRelease } from '../../src/api/release-types.ts';
import { REAL_API, REAL_NODE } from '../support/cluster/api-under-test.ts';
import { pluginFor, type Plugin } from '../support/process/kubectl-plugin.ts';
import { kubectlFor, type Kubectl } from '../support/cluster/api-fixtures.ts';
import { startTraffic, type Traffic } from '../support/cluster/testbed.ts';
import { startTrafficIn } from '../support/net/netns-traffic.ts';
import { startRealCluster, type RealCluster } from './cluster.ts';
import { webDeployment, webImage } from './web-app.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { sleep, waitFor } from '../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const NS = 'shop';
const IMAGE = webImage;

const app = webDeployment(NS, [{ name: 'http', containerPort: 8080 }]);
const service = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: NS },
  spec: { selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
};

function release(
  name: string,
  version: string,
  extra: Record<string, unknown> = {},
  env: { name: string; value: string }[] = [],
) {
  return {
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'CanaryRelease',
    metadata: { name, namespace: NS },
    spec: {
      workloads: [
        {
          kind: 'Deployment',
          name: 'web',
          patch: { spec: { containers: [{ name: 'web', image: IMAGE(version), ...(env.length > 0 ? { env } : {}) }] } },
        },
      ],
      services: [{ service: 'web', ports: [{ port: 80, protocol: 'TCP', config: { weight: 20 } }] }],
      ...extra,
    },
  };
}

const MANAGER = 'system:serviceaccount:canary-l4-system:canary-l4-manager';
/** The releases' proxies, each its own ServiceAccount canary-l4-<release>. */
const PROXY_ACCOUNT = /^system:serviceaccount:shop:canary-l4-web-v\d$/;

describe('a release on a real control plane, installed with kubectl apply -k deploy/', {
  skip: REAL_API ? false : 'needs a real control plane: npm run test:cluster',
  timeout: 600_000,
}, () => {
  let cluster: RealCluster;
  let dir: string;
  let kubectl: Kubectl;
  let plugin: Plugin;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let custom: CustomObjectsApi;
  let clients: Traffic;
  let serviceIp = '';
  let original: V1Service | undefined;

  const getRelease = (name: string) =>
    custom.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace: NS, plural: PLURAL, name }).then(
      (found) => found as CanaryRelease,
      (err: { code?: number }) => (err.code === 404 ? undefined : Promise.reject(err)),
    );
  const waitForRelease = async (
    name: string,
    what: string,
    check: (found: CanaryRelease | undefined) => boolean,
    timeoutMs = 90_000,
  ) => {
    let last: CanaryRelease | undefined;
    await waitFor(
      async () => check((last = await getRelease(name))),
      `${name}: ${what} (status ${JSON.stringify(last?.status)})`,
      timeoutMs,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; last status ${JSON.stringify(last?.status)}`);
    });
    return last;
  };
  const images = async () =>
    (await apps.readNamespacedDeployment({ name: 'web', namespace: NS })).spec?.template.spec?.containers.map(
      (c) => c.image,
    );
  const owned = (svc: V1Service | undefined) => {
    const { resourceVersion: _rv, managedFields: _managed, ...metadata } = svc?.metadata ?? {};
    return { metadata, spec: svc?.spec };
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-release-'));
    cluster = await startRealCluster({
      dir,
      serviceCidr: addresses.cidr,
      podSubnet: addresses.octet,
      kubeProxy: true,
      realNode: REAL_NODE,
    });
    core = cluster.kubeConfig.makeApiClient(CoreV1Api);
    apps = cluster.kubeConfig.makeApiClient(AppsV1Api);
    custom = cluster.kubeConfig.makeApiClient(CustomObjectsApi);
    kubectl = await kubectlFor(cluster.plane);
    plugin = await pluginFor(cluster.plane.kubeconfigPath);
  });

  after(async () => {
    await clients?.stop();
    await plugin?.cleanup();
    await kubectl?.cleanup();
    await cluster?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('kubectl apply --server-side -k deploy/ installs the CRD and the manager; both manager pods run as its ServiceAccount and one leads', async () => {
    const applied = await kubectl('apply', '--server-side', '-k', join(import.meta.dirname, '../../deploy'));
    assert.match(
      applied,
      /customresourcedefinition.apiextensions.k8s.io\/canaryreleases.canary-l4.io serverside-applied/,
    );
    await kubectl('rollout', 'status', '-n', 'canary-l4-system', 'deployment/canary-l4-manager', '--timeout=120s');
    const managers = await core.listNamespacedPod({
      namespace: 'canary-l4-system',
      labelSelector: 'app.kubernetes.io/component=manager',
    });
    assert.equal(
      managers.items.filter((pod) => pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'))
        .length,
      2,
    );
    // Ready does not wait for the Lease (a follower is ready too): it is taken within a few seconds.
    const leases = cluster.kubeConfig.makeApiClient(CoordinationV1Api);
    let holder: string | undefined;
    await waitFor(
      async () => {
        holder = (
          await leases
            .readNamespacedLease({ name: 'canary-l4-manager', namespace: 'canary-l4-system' })
            .catch(() => undefined)
        )?.spec?.holderIdentity;
        return managers.items.some((pod) => pod.metadata?.name === holder);
      },
      'a manager pod to hold the Lease',
      30_000,
    ).catch(() => {});
    assert.ok(
      managers.items.some((pod) => pod.metadata?.name === holder),
      `a manager pod holds the Lease (${holder})`,
    );
  });

  it('an app Deployment behind a Service answers through the kube-proxy simulation, by its EndpointSlices', async () => {
    await kubectl('create', 'namespace', NS);
    await kubectl('apply', '-f', await kubectl.manifest('web.yaml', app, service));
    await kubectl('rollout', 'status', '-n', NS, 'deployment/web', '--timeout=60s');
    original = await core.readNamespacedService({ name: 'web', namespace: NS });
    serviceIp = original.spec!.clusterIP!;
    await waitFor(async () => (await core.listNamespacedEndpoints({ namespace: NS })).items.length > 0, 'endpoints');
    // On real nodes, from node 1's namespace, through its kube-proxy's rules.
    const options = { pauseMs: 10, maxMs: 540_000 };
    clients =
      cluster.nodes === undefined
        ? startTraffic(() => serviceIp, 80, 'TCP', options)
        : await startTrafficIn(cluster.nodes[0]!.netns, serviceIp, 80, 'TCP', options);
    await waitFor(() => (clients.counts()[IMAGE('1.0')] ?? 0) >= 20, 'the app to answer through its Service', 20_000);
    assert.deepEqual(clients.failures(), []);
  });

  it('a CanaryRelease gets its proxy from the manager, and the Service splits 80/20 between the stable and the canary Deployment', async (t) => {
    await kubectl('apply', '-f', await kubectl.manifest('web-v2.yaml', release('web-v2', '2.0')));
    const running = await waitForRelease(
      'web-v2',
      'serving with two Ready proxies',
      (found) =>
        found?.status?.conditions?.find((c) => c.type === 'Available')?.status === 'True' &&
        (found.status as { proxy?: { readyReplicas?: number } }).proxy?.readyReplicas === 2,
    );
    t.diagnostic(`proxy: ${JSON.stringify((running?.status as { proxy?: unknown } | undefined)?.proxy)}`);
    assert.equal(
      (await apps.readNamespacedDeployment({ name: 'web-canary', namespace: NS })).spec?.template.spec?.containers[0]
        ?.image,
      IMAGE('2.0'),
    );
    const from = clients.now();
    await waitFor(
      () => Object.values(clients.counts(from)).reduce((a, b) => a + b, 0) >= 200,
      '200 connections through the proxies',
      60_000,
    );
    const counts = clients.counts(from);
    t.diagnostic(`answers since the takeover: ${JSON.stringify(counts)}`);
    const canaryShare = (counts[IMAGE('2.0')] ?? 0) / ((counts[IMAGE('2.0')] ?? 0) + (counts[IMAGE('1.0')] ?? 0));
    assert.ok(canaryShare > 0.12 && canaryShare < 0.28, `the canary's share ${canaryShare} is about 20 %`);
    assert.deepEqual(clients.failures(), [], 'no connection failed from before the takeover on');
  });

  it('kubectl canary-l4 status shows the split as the real API holds it', async () => {
    const status = await plugin('status', '-n', NS, 'web-v2');
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, /web:80\/TCP/);
    assert.match(status.stdout, /20 ?%/);
  });

  it('GitOps syncs mid-release: the Service as its owner wrote it, written back with kubectl apply, apply --server-side --force-conflicts and replace, is taken back each time; no connection fails', async (t) => {
    const path = await kubectl.manifest('web-service.yaml', service);
    const from = clients.now();
    for (const command of [
      ['apply', '-f', path],
      ['apply', '--server-side', '--force-conflicts', '--field-manager', 'argocd-controller', '-f', path],
      ['replace', '-f', path],
    ]) {
      await kubectl(...command);
      await waitFor(
        async () =>
          isTakeoverSelector(
            (await core.readNamespacedService({ name: 'web', namespace: NS })).spec?.selector,
            'web-v2',
          ),
        `the Service taken back after kubectl ${command.slice(0, 2).join(' ')}`,
        30_000,
      );
      // Past kube-proxy's next sync, so that the next write starts from the proxies again.
      await sleep(1500);
    }
    t.diagnostic(`through the three syncs: ${JSON.stringify(clients.counts(from))}`);
    assert.ok((clients.counts(from)[IMAGE('2.0')] ?? 0) > 0, 'the canary answered through the proxies');
    assert.deepEqual(clients.failures(from), [], 'no connection failed');
  });

  it('the leading proxy pod deleted: the other takes the Lease and applies a weight change; no connection fails', async (t) => {
    const leases = cluster.kubeConfig.makeApiClient(CoordinationV1Api);
    const holder = async () =>
      (await leases.readNamespacedLease({ name: 'canary-l4-web-v2', namespace: NS })).spec?.holderIdentity;
    // The manager rolls the proxy Deployment once the proxy has written status.takeover (the pods
    // get the labels the Services select): a replaced pod leads through its preStop pause and hands
    // the Lease over at SIGTERM, so the leader is looked for once the replaced pods are gone.
    let leads: boolean[] = [];
    let leader: string | undefined;
    await waitFor(
      async () => {
        const pods = (await core.listNamespacedPod({ namespace: NS, labelSelector: 'canary-l4.io/release=web-v2' }))
          .items;
        if (pods.some((pod) => pod.metadata?.deletionTimestamp != null)) return false;
        const proxies = pods.filter((pod) =>
          pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        // Which pod leads, as Prometheus would see it: its own metrics, at its pod IP.
        leads = await Promise.all(
          proxies.map(async (pod) =>
            /^canary_l4_leader 1$/m.test(await (await fetch(`http://${pod.status!.podIP}:9090/metrics`)).text()),
          ),
        );
        leader = proxies[leads.indexOf(true)]?.metadata?.name;
        return leads.filter(Boolean).length === 1;
      },
      'one proxy pod to lead once the rollout is done',
      60_000,
    ).catch(() => {});
    assert.ok(
      leader !== undefined && leads.filter(Boolean).length === 1,
      `one proxy pod leads: ${JSON.stringify(leads)}`,
    );
    const before = await holder();
    await kubectl('delete', 'pod', '-n', NS, leader, '--wait=false');
    await kubectl(
      'patch',
      'crel',
      '-n',
      NS,
      'web-v2',
      '--type=json',
      '-p',
      JSON.stringify([{ op: 'replace', path: '/spec/services/0/ports/0/config/weight', value: 50 }]),
    );
    await waitForRelease(
      'web-v2',
      'serving 50 % under a new leader',
      (found) => found?.status?.ports?.[0]?.served === 50,
    );
    await kubectl('rollout', 'status', '-n', NS, 'deployment/canary-l4-web-v2', '--timeout=120s');
    const after = await holder();
    t.diagnostic(`leader ${leader} (${before}) deleted; the Lease is held by ${after}`);
    assert.notEqual(after, before, 'another replica holds the Lease');
    assert.deepEqual(clients.failures(), []);
  });

  it('both proxies crash while the API is frozen: restarted, they serve their --state-dir config at once', async (t) => {
    const proxies = (
      await core.listNamespacedPod({ namespace: NS, labelSelector: 'canary-l4.io/release=web-v2' })
    ).items.filter((pod) => pod.metadata?.deletionTimestamp == null);
    const frozenFor = 15_000;
    const frozen = cluster.plane.freezeApiServer(frozenFor);
    const thawAt = clients.now() + frozenFor;
    await sleep(500);
    const from = clients.now();
    for (const pod of proxies) cluster.kubelet.crash(NS, pod.metadata!.name!);
    await frozen;
    const during = clients.attempts.filter((attempt) => attempt.at >= from && attempt.at < thawAt);
    const failed = during.filter((attempt) => attempt.answer === undefined);
    const lastFailure = failed.at(-1)?.at ?? from;
    t.diagnostic(
      `during the outage: ${during.length} connections, ${failed.length} failed, the last ${lastFailure - from} ms after the crash; the API thawed ${thawAt - from} ms after it`,
    );
    // The restart itself is the one window (the kubelet restarts a crashed container after 1 s, then
    // Node starts): how long it takes is the machine's, and is printed above. What the user relies on is
    // that the restarted proxies serve from --state-dir without the API: answers well before it thaws.
    const servedFrozen = during.filter((attempt) => attempt.at > lastFailure && attempt.answer !== undefined);
    assert.ok(servedFrozen.length > 20, `served again with the API still frozen (${servedFrozen.length} answers)`);
  });

  it("Adopted: the real Deployment controller rolls the stable Deployment to the canary's image, then the Service is handed back", async (t) => {
    const sinceCrash = clients.now();
    await kubectl('patch', 'crel', '-n', NS, 'web-v2', '--type=merge', '-p', '{"spec":{"transition":"Adopted"}}');
    await waitForRelease(
      'web-v2',
      'Adopted',
      (found) => found?.status?.phase === 'Adopted' && (found.metadata.finalizers ?? []).length === 0,
      180_000,
    );
    assert.deepEqual(await images(), [IMAGE('2.0')]);
    const web = await core.readNamespacedService({ name: 'web', namespace: NS });
    assert.deepEqual(web.spec?.selector, { app: 'web' }, 'the Service selects its app again');
    await waitFor(
      async () =>
        (await apps.listNamespacedDeployment({ namespace: NS })).items.map((d) => d.metadata?.name).join() === 'web',
      'the proxy and canary Deployments gone',
      60_000,
    );
    for (const copy of ['web-forked', 'web-canary']) {
      await waitFor(
        async () => !(await core.listNamespacedService({ namespace: NS })).items.some((s) => s.metadata?.name === copy),
        `${copy} gone`,
        30_000,
      );
    }
    // The old pods leave the EndpointSlices a moment after the rollout completes, as with any rollout.
    await sleep(2000);
    const from = clients.now();
    await sleep(1500);
    assert.deepEqual(Object.keys(clients.counts(from)), [IMAGE('2.0')], 'only the adopted version answers');
    t.diagnostic(`since the crash drill: ${JSON.stringify(clients.counts(sinceCrash))}`);
    const failed = clients.failures(sinceCrash);
    if (failed.length > 0) {
      const started = Date.now() - clients.now();
      const events = await core.listNamespacedEvent({ namespace: NS });
      t.diagnostic(
        `connections failed at ${failed.map((attempt) => new Date(started + attempt.at).toISOString()).join(', ')}; events:\n${events.items
          .map(
            (event) =>
              `${(event.eventTime ?? event.lastTimestamp ?? event.metadata?.creationTimestamp)?.toISOString?.() ?? ''} ${event.involvedObject.kind}/${event.involvedObject.name} ${event.reason} ${event.message}`,
          )
          .sort()
          .join('\n')}`,
      );
    }
    assert.deepEqual(failed, [], 'no connection failed through the adoption');
  });

  it('a canary that resets 30 % of its connections is rolled back by the analysis on its own; the Service and the stable Deployment as they were', async (t) => {
    const before = await core.readNamespacedService({ name: 'web', namespace: NS });
    const from = clients.now();
    await kubectl(
      'apply',
      '-f',
      await kubectl.manifest(
        'web-v3.yaml',
        release(
          'web-v3',
          '3.0',
          {
            steps: [
              { weight: 20, pause: { duration: '20s' } },
              { weight: 50, pause: {} },
            ],
            analysis: { interval: '2s', minSamples: 20, failureLimit: 2, thresholds: { resetRate: { max: 0.1 } } },
          },
          [{ name: 'FAKE_POD_FAULT', value: 'reset=30' }],
        ),
      ),
    );
    const rolledBack = await waitForRelease(
      'web-v3',
      'rolled back by the analysis',
      (found) => found?.status?.phase === 'Deprecated',
      180_000,
    );
    const failure = rolledBack?.status?.conditions?.find((c) => c.type === 'Failure');
    t.diagnostic(`Failure: ${failure?.reason}: ${failure?.message}`);
    assert.equal(failure?.reason, 'AnalysisFailed');
    assert.match(failure?.message ?? '', /resetRate/);
    assert.deepEqual(
      owned(await core.readNamespacedService({ name: 'web', namespace: NS })),
      owned(before),
      'the Service exactly as before',
    );
    assert.deepEqual(await images(), [IMAGE('2.0')], 'the stable Deployment untouched');
    await waitFor(
      async () =>
        (await apps.listNamespacedDeployment({ namespace: NS })).items.map((d) => d.metadata?.name).join() === 'web',
      'the canary and proxy Deployments gone',
      60_000,
    );
    // Resets are what the canary did to its clients: the release took it out, nothing else failed.
    const others = clients
      .failures(from)
      .filter((attempt) => attempt.error !== 'closed without an answer' && !/ECONNRESET/.test(attempt.error ?? ''));
    assert.deepEqual(others, [], "no connection failed other than the canary's own resets");
  });

  it('a CanaryRelease deleted mid-release: the Service restored first (the finalizer), then its copies, proxy and canary go by their owner references', async () => {
    const before = await core.readNamespacedService({ name: 'web', namespace: NS });
    const from = clients.now();
    await kubectl('apply', '-f', await kubectl.manifest('web-v4.yaml', release('web-v4', '4.0')));
    await waitForRelease(
      'web-v4',
      'serving',
      (found) =>
        found?.status?.conditions?.find((c) => c.type === 'Available')?.status === 'True' &&
        (found.status as { proxy?: { readyReplicas?: number } }).proxy?.readyReplicas === 2,
    );
    // When each step happened (ms of the clients' clock), so that a failed connection can be placed.
    const marks: Record<string, number> = { applied: from, serving: clients.now() };
    await waitFor(() => (clients.counts(from)[IMAGE('4.0')] ?? 0) > 5, 'the canary answering', 30_000);
    marks.deleting = clients.now();
    await kubectl('delete', 'crel', '-n', NS, 'web-v4', '--wait=true', '--timeout=120s');
    marks.deleted = clients.now();
    assert.equal(await getRelease('web-v4'), undefined);
    // Its last Events are sent before the finalizer goes: the finalizer patch is the proxy's last write to it.
    const events = await core.listNamespacedEvent({ namespace: NS, fieldSelector: 'involvedObject.name=web-v4' });
    assert.ok(
      events.items.some((event) => event.reason === 'Restored'),
      `a Restored Event: ${events.items.map((event) => event.reason).join(', ')}`,
    );
    assert.deepEqual(
      owned(await core.readNamespacedService({ name: 'web', namespace: NS })),
      owned(before),
      'the Service exactly as before',
    );
    await waitFor(
      async () =>
        (await apps.listNamespacedDeployment({ namespace: NS })).items.map((d) => d.metadata?.name).join() === 'web',
      'the proxy and canary Deployments collected',
      60_000,
    );
    await waitFor(
      async () =>
        (await core.listNamespacedService({ namespace: NS })).items
          .map((s) => s.metadata?.name)
          .sort()
          .join() === 'web',
      'the copies and the metrics Service collected',
      60_000,
    );
    const after = clients.now();
    await sleep(1500);
    assert.deepEqual(Object.keys(clients.counts(after)), [IMAGE('2.0')]);
    marks.collected = after;
    assert.deepEqual(clients.failures(from), [], `no connection failed (at ${JSON.stringify(marks)})`);
  });

  it("the manager and every proxy got all they asked of the API with deploy/'s RBAC: kube-apiserver's audit log has no 403 for them", () => {
    const ours = cluster.plane
      .auditEvents()
      .filter((event) => event.user.username === MANAGER || PROXY_ACCOUNT.test(event.user.username));
    const managers = ours.filter((event) => event.user.username === MANAGER).length;
    assert.ok(
      managers > 50 && ours.length - managers > 50,
      `requests of the manager (${managers}) and of the proxies (${ours.length - managers}) are in the audit log`,
    );
    // Leases too: a proxy pod ending after its release is gone still has its identity (the manager
    // removes it once no pod is left), so it can let go of its Lease.
    const forbidden = ours
      .filter((event) => event.responseStatus?.code === 403)
      .map((event) => `${event.user.username} ${event.verb} ${event.requestURI}`);
    assert.deepEqual(forbidden, []);
  });

  it('the proxy of a deleted release writes nothing more to it once it handed it back: the finalizer patch is its last write', () => {
    // kube-apiserver deletes the release within that patch and answers with the resourceVersion the
    // release had before it, which the proxy's cache already shows: a proxy that took that for its
    // write being seen went on to patch the finalizer again, and met a 404, or a 403 once the
    // garbage collector had taken its RoleBinding with the release.
    const account = 'system:serviceaccount:shop:canary-l4-web-v4';
    const writes = cluster.plane
      .auditEvents()
      .filter(
        (event) =>
          event.user.username === account &&
          event.objectRef?.resource === 'canaryreleases' &&
          event.objectRef.name === 'web-v4' &&
          ['create', 'update', 'patch', 'delete'].includes(event.verb),
      );
    const handBack = writes.findLast(
      (event) => event.objectRef?.subresource === undefined && event.responseStatus?.code === 200,
    );
    assert.ok(handBack !== undefined, 'the proxy removed its finalizer');
    const after = writes
      .filter((event) => event.requestReceivedTimestamp > handBack.stageTimestamp)
      .map((event) => `${event.verb} ${event.requestURI}: ${event.responseStatus?.code}`);
    assert.deepEqual(after, []);
  });
});
