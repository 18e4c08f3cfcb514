// Drift: someone edits what the proxy manages, and the proxy puts it back (seed defect D13: the
// seed's Service informer had no handlers at all).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';

import { suiteTimeout } from '../../support/cluster/api-under-test.ts';
import {
  createRelease,
  createService,
  getService,
  NAMESPACE,
  serviceEntry,
  serving,
  split,
  startBackends,
  startCluster,
  startProxy,
  waitForRelease,
  waitForService,
  type Backends,
  type Cluster,
  type InProcessProxy,
  takenOver,
} from '../../support/cluster/release-cluster.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { waitFor } from '../../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const PORT_BASE = await freePortBlock(10);
const SERVICE_PORT = 8700;

describe('drift of managed Services is repaired', { timeout: suiteTimeout(30_000) }, () => {
  let cluster: Cluster;
  let proxy: InProcessProxy;
  let backends: Backends | undefined;

  before(async () => {
    cluster = await startCluster(addresses.cidr);
    await createService(cluster, 'cart', [{ name: 'http', port: SERVICE_PORT }]);
    await createRelease(cluster, 'cart-v2', { services: [serviceEntry('cart', [{ port: SERVICE_PORT, weight: 20 }])] });
    proxy = await startProxy(cluster, 'cart-v2', PORT_BASE);
    backends = await startBackends(cluster, 'cart', [{ port: SERVICE_PORT }]);
    await waitForRelease(cluster, 'cart-v2', 'serving', serving);
  });

  after(async () => {
    await proxy?.stop();
    await backends?.close();
    await cluster.stop();
  });

  const patchService = (name: string, body: unknown) =>
    cluster.core.patchNamespacedService(
      { name, namespace: NAMESPACE, body },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

  it('an edited targetPort of the retargeted Service is set back to the proxy port', async () => {
    await patchService('cart', {
      spec: { ports: [{ name: 'http', port: SERVICE_PORT, targetPort: 1234, protocol: 'TCP' }] },
    });
    const repaired = await waitForService(
      cluster,
      'cart',
      'targetPort repaired',
      (found) => found?.spec?.ports?.[0]?.targetPort === PORT_BASE,
    );
    assert.deepEqual(repaired?.spec?.selector, takenOver('cart-v2'));
    assert.deepEqual(await split(PORT_BASE, 10), { stable: 8, canary: 2 });
  });

  it('an edited selector of a copy is set back', async () => {
    await patchService('cart-canary', { spec: { selector: { app: 'cart', version: 'v9' } } });
    const repaired = await waitForService(
      cluster,
      'cart-canary',
      'selector repaired',
      (found) => found?.spec?.selector?.version === 'v2',
    );
    assert.deepEqual(repaired?.spec?.selector, { app: 'cart', version: 'v2' });
  });

  it('a deleted copy is made again, and the data plane follows its cluster IP', async () => {
    const before = await getService(cluster, 'cart-canary');
    await cluster.core.deleteNamespacedService({ name: 'cart-canary', namespace: NAMESPACE });
    const again = await waitForService(
      cluster,
      'cart-canary',
      'made again',
      (found) => found !== undefined && found.metadata?.uid !== before?.metadata?.uid,
    );
    const ip = again?.spec?.clusterIP;
    assert.ok(ip !== undefined);
    await waitFor(
      () =>
        proxy.runtime.dataplane.config.listeners[0]?.backends.some(
          (backend) => backend.name === 'canary' && backend.host === ip,
        ) === true,
      'the canary upstream at the new IP',
    );
    await backends?.close();
    backends = await startBackends(cluster, 'cart', [{ port: SERVICE_PORT }]);
    assert.deepEqual(await split(PORT_BASE, 10), { stable: 8, canary: 2 });
  });

  it('a port someone adds to the retargeted Service is proxied, at 100 % stable', async () => {
    await patchService('cart', {
      spec: {
        ports: [
          { name: 'http', port: SERVICE_PORT, targetPort: PORT_BASE, protocol: 'TCP' },
          { name: 'metrics', port: SERVICE_PORT + 1, targetPort: 9100, protocol: 'TCP' },
        ],
      },
    });
    const release = await waitForRelease(
      cluster,
      'cart-v2',
      'the new port served',
      (found) => found?.status?.ports?.length === 2 && serving(found),
    );
    assert.deepEqual(release?.status?.ports?.[1], {
      service: 'cart',
      port: SERVICE_PORT + 1,
      protocol: 'TCP',
      proxyPort: PORT_BASE + 1,
      weight: 0,
      served: 0,
    });
    const cart = await waitForService(
      cluster,
      'cart',
      'the new port retargeted',
      (found) => found?.spec?.ports?.[1]?.targetPort === PORT_BASE + 1,
    );
    assert.equal(cart?.spec?.ports?.[0]?.targetPort, PORT_BASE, 'the first port did not move');
    const forked = await waitForService(
      cluster,
      'cart-forked',
      'the copy has the port',
      (found) => found?.spec?.ports?.length === 2,
    );
    assert.equal(forked?.spec?.ports?.[1]?.targetPort, 9100, 'the copy targets the pods as the port was written');
  });
});
