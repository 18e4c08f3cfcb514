// The shapes a release takes, through the proxy and the fake kube-apiserver with real traffic:
// NodePort, ports the release does not list, two Services, UDP, weights 0 and 100, a spec that
// cannot be applied, and a proxy port someone else holds.

import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ANNOTATION_ORIGINAL } from '../../../src/api/names.ts';
import { suiteTimeout } from '../../support/cluster/api-under-test.ts';
import { udpAsk } from '../../support/net/backends.ts';
import {
  conditionOf,
  createRelease,
  createService,
  getService,
  serviceEntry,
  serving,
  split,
  startBackends,
  startCluster,
  startProxy,
  waitForRelease,
  type Backends,
  type Cluster,
  type InProcessProxy,
  takenOver,
} from '../../support/cluster/release-cluster.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { waitFor } from '../../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

// Below the ephemeral range (32768+), where a client socket of this very test could hold the port.
const PORT_BASE = await freePortBlock(310, { udp: true });

describe('release shapes', { timeout: suiteTimeout(30_000) }, () => {
  let cluster: Cluster;
  const proxies: InProcessProxy[] = [];
  const backends: Backends[] = [];

  before(async () => {
    cluster = await startCluster(addresses.cidr);
  });

  after(async () => {
    await Promise.all(proxies.map((proxy) => proxy.stop()));
    await Promise.all(backends.map((started) => started.close()));
    await cluster.stop();
  });

  it('NodePort Service with a port the release does not list: that port is proxied 100 % stable, nodePorts kept', async () => {
    const original = await createService(
      cluster,
      'shop',
      [
        { name: 'http', port: 8200, targetPort: 9200 },
        { name: 'admin', port: 8201, targetPort: 9201 },
      ],
      { type: 'NodePort' },
    );
    await createRelease(cluster, 'shop-v2', { services: [serviceEntry('shop', [{ port: 8200, weight: 20 }])] });
    proxies.push(await startProxy(cluster, 'shop-v2', PORT_BASE));
    backends.push(await startBackends(cluster, 'shop', [{ port: 8200 }, { port: 8201 }]));
    const release = await waitForRelease(cluster, 'shop-v2', 'serving', serving);
    assert.deepEqual(
      release?.status?.ports?.map(({ port, proxyPort, weight }) => [port, proxyPort, weight]),
      [
        [8200, PORT_BASE, 20],
        [8201, PORT_BASE + 1, 0],
      ],
    );
    const shop = await getService(cluster, 'shop');
    assert.deepEqual(
      shop?.spec?.ports?.map(({ port, targetPort, nodePort }) => [port, targetPort, nodePort]),
      original.spec?.ports?.map(({ port, nodePort }, index) => [port, PORT_BASE + index, nodePort]),
    );
    assert.equal((await getService(cluster, 'shop-forked'))?.spec?.type, 'ClusterIP', 'copies are plain ClusterIP');
    assert.deepEqual(await split(PORT_BASE, 10), { stable: 8, canary: 2 });
    assert.deepEqual(await split(PORT_BASE + 1, 10), { stable: 10 });
  });

  it('two Services in one release, one over UDP; weight 100 and weight 0', async () => {
    await createService(cluster, 'front', [{ name: 'http', port: 8300 }]);
    await createService(cluster, 'dns', [{ name: 'dns', port: 8353, protocol: 'UDP' }]);
    await createRelease(cluster, 'edge-v2', {
      services: [
        serviceEntry('front', [{ port: 8300, weight: 0 }]),
        serviceEntry('dns', [{ port: 8353, protocol: 'UDP', weight: 100 }]),
      ],
    });
    proxies.push(await startProxy(cluster, 'edge-v2', PORT_BASE + 100));
    backends.push(await startBackends(cluster, 'front', [{ port: 8300 }]));
    backends.push(await startBackends(cluster, 'dns', [{ port: 8353, protocol: 'UDP' }]));
    const release = await waitForRelease(cluster, 'edge-v2', 'serving', serving);
    // Sorted by Service: dns first.
    assert.deepEqual(
      release?.status?.ports?.map(({ service, protocol, proxyPort, weight }) => [service, protocol, proxyPort, weight]),
      [
        ['dns', 'UDP', PORT_BASE + 100, 100],
        ['front', 'TCP', PORT_BASE + 101, 0],
      ],
    );
    for (const name of ['front', 'dns'])
      assert.deepEqual((await getService(cluster, name))?.spec?.selector, takenOver('edge-v2'));
    assert.deepEqual(await split(PORT_BASE + 101, 10), { stable: 10 });
    const replies = await Promise.all(Array.from({ length: 10 }, (_, index) => udpAsk(PORT_BASE + 100, `q${index}`)));
    assert.deepEqual(
      replies.map((reply) => reply[0]),
      Array.from({ length: 10 }, (_, index) => `canary:q${index}`),
    );
  });

  it('a port listed twice is refused at admission by the CRD, naming it (kube-apiserver enforces x-kubernetes-list-type, and so does the fake)', async () => {
    const refused = await createRelease(cluster, 'twice', {
      services: [
        serviceEntry('bad', [
          { port: 8400, weight: 10 },
          { port: 8400, weight: 20 },
        ]),
      ],
    }).then(
      () => undefined,
      (err: { code?: number; body?: string }) => ({
        code: err.code,
        message: JSON.parse(err.body ?? '{}').message as string,
      }),
    );
    assert.deepEqual(refused, {
      code: 422,
      message:
        'CanaryRelease.canary-l4.io "twice" is invalid: spec.services[0].ports[1]: Duplicate value: {"port":8400,"protocol":"TCP"}',
    });
  });

  for (const [name, spec, problem] of [
    [
      'an unknown Service',
      { services: [serviceEntry('nope', [{ port: 80, weight: 10 }])] },
      /spec\.services\[0\]: Service nope not found in the namespace/,
    ],
  ] as const) {
    it(`bad CanaryRelease (${name}): Failure condition with a clear message, nothing changed`, async () => {
      const releaseName = `bad-${proxies.length}`;
      await createService(cluster, 'bad', [{ name: 'http', port: 8400 }]);
      const badBefore = await getService(cluster, 'bad');
      await createRelease(cluster, releaseName, spec);
      const proxy = await startProxy(cluster, releaseName, PORT_BASE + 200 + proxies.length);
      proxies.push(proxy);
      const release = await waitForRelease(
        cluster,
        releaseName,
        'Failure',
        (found) => conditionOf(found, 'Failure')?.status === 'True',
      );
      assert.equal(conditionOf(release, 'Failure')?.reason, 'InvalidRelease');
      assert.match(conditionOf(release, 'Failure')?.message ?? '', problem);
      assert.equal(conditionOf(release, 'Available')?.status, 'False');
      const writes = cluster.api
        .requests()
        .filter(
          (request) => request.user === cluster.proxyUser && request.name === releaseName && request.verb === 'patch',
        );
      assert.ok(writes.length > 0);
      assert.deepEqual(await getService(cluster, 'bad'), badBefore, 'the Service is untouched');
      assert.equal(proxy.runtime.dataplane.config.listeners.length, 0);
      assert.ok(
        proxy.logs().some((line) => String(line.msg).startsWith('failure: InvalidRelease')),
        'the failure is logged',
      );
    });
  }

  it('a deleted CanaryRelease: the Services restored first, then the release goes and the proxy closes its listeners', async () => {
    const proxy = proxies[0]!;
    const shopBefore = await getService(cluster, 'shop');
    assert.equal(proxy.runtime.dataplane.config.listeners.length, 2);
    const from = cluster.api.requests().length;
    await cluster.custom.deleteNamespacedCustomObject({
      group: 'canary-l4.io',
      version: 'v1alpha1',
      namespace: 'default',
      plural: 'canaryreleases',
      name: 'shop-v2',
    });
    await waitForRelease(cluster, 'shop-v2', 'gone', (found) => found === undefined);
    // Its Events (Restored) are sent before the finalizer goes: after it, the release and with it the
    // proxy's RoleBinding are collected, and a real API refuses the proxy's Events.
    const since = cluster.api
      .requests()
      .slice(from)
      .filter((request) => request.user === cluster.proxyUser);
    const finalizerGone = since.findLastIndex(
      (request) =>
        request.verb === 'patch' &&
        request.resource === 'canaryreleases' &&
        request.name === 'shop-v2' &&
        request.subresource === '',
    );
    const events = since.flatMap((request, index) =>
      request.verb === 'create' && request.resource === 'events' ? [index] : [],
    );
    assert.ok(
      finalizerGone >= 0 && events.length > 0 && events.every((index) => index < finalizerGone),
      `Events at ${events}, the finalizer removed at ${finalizerGone}`,
    );
    const shop = await getService(cluster, 'shop');
    assert.deepEqual(shop?.spec?.selector, { app: 'shop', version: 'v1' });
    assert.deepEqual(
      shop?.spec?.ports?.map(({ targetPort, nodePort }) => [targetPort, nodePort]),
      [
        [9200, shopBefore?.spec?.ports?.[0]?.nodePort],
        [9201, shopBefore?.spec?.ports?.[1]?.nodePort],
      ],
    );
    await waitFor(() => proxy.runtime.dataplane.config.listeners.length === 0, 'the listeners to close');
    // The finalizer patch is the proxy's last write to its release: the API deletes the release in
    // it and answers at the resourceVersion the release had before, which the cache already shows.
    const releaseWrites = cluster.api
      .requests()
      .slice(from)
      .filter(
        (request) =>
          request.user === cluster.proxyUser &&
          request.resource === 'canaryreleases' &&
          request.name === 'shop-v2' &&
          ['create', 'update', 'patch', 'delete'].includes(request.verb),
      )
      .map((request) => `${request.verb} ${request.subresource || 'canaryrelease'} ${request.code}`);
    assert.equal(releaseWrites.at(-1), 'patch canaryrelease 200', releaseWrites.join(', '));
    assert.equal(releaseWrites.filter((write) => write.startsWith('patch canaryrelease')).length, 1);
  });

  it('a proxy port held by someone else: Failure condition naming it, nothing retargeted; served once it is free', async () => {
    const port = PORT_BASE + 300;
    const squatter = net.createServer();
    await new Promise<void>((resolve) => squatter.listen(port, resolve));
    await createService(cluster, 'busy', [{ name: 'http', port: 8500 }]);
    await createRelease(cluster, 'busy-v2', { services: [serviceEntry('busy', [{ port: 8500, weight: 50 }])] });
    const proxy = await startProxy(cluster, 'busy-v2', port);
    proxies.push(proxy);
    backends.push(await startBackends(cluster, 'busy', [{ port: 8500 }]));
    const refused = await waitForRelease(
      cluster,
      'busy-v2',
      'ConfigRefused',
      (found) => conditionOf(found, 'Failure')?.reason === 'ConfigRefused',
    );
    assert.match(
      conditionOf(refused, 'Failure')?.message ?? '',
      new RegExp(`cannot listen on tcp \\*:${port}.*EADDRINUSE`),
    );
    const busy = await getService(cluster, 'busy');
    assert.deepEqual(busy?.spec?.selector, { app: 'busy', version: 'v1' }, 'not retargeted');
    assert.equal(
      busy?.metadata?.annotations?.[ANNOTATION_ORIGINAL] !== undefined,
      true,
      'the original is saved meanwhile',
    );
    await new Promise<void>((resolve) => squatter.close(() => resolve()));
    const release = await waitForRelease(cluster, 'busy-v2', 'serving once the port is free', serving, 15_000);
    assert.equal(conditionOf(release, 'Failure')?.status, 'False');
    assert.deepEqual(await split(port, 10), { stable: 5, canary: 5 });
    assert.ok(proxy.logs().some((line) => line.msg === 'failure cleared'));
  });
});
