// A proxy pod is not Ready, and so not taken over, while a copy it sends traffic to answers nothing
// from it (kube-proxy on its node has not written the copy's rules yet), and turns Ready once the
// copy answers as it will serve. The copies are made beforehand, as this release's, at addresses
// that answer nothing (a full accept queue); the proxy runs "in its pod", where the takeover waits
// for a Ready proxy pod, and none is made here: its readiness is the gate's alone.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { LABEL_RELEASE, LABEL_ROLE, LABEL_SERVICE } from '../../../src/api/names.ts';
import { suiteTimeout } from '../../support/cluster/api-under-test.ts';
import {
  createRelease,
  createService,
  NAMESPACE,
  serviceEntry,
  startCluster,
  startProxy,
  type Cluster,
  type InProcessProxy,
} from '../../support/cluster/release-cluster.ts';
import { startBlackhole } from '../../support/net/blackhole.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { requireTool } from '../../support/process/required-tool.ts';
import { sleep, waitFor } from '../../support/wait.ts';

const addresses = loopbackRange(import.meta.url);
const PORT_BASE = await freePortBlock(10);
const SERVICE_PORT = 8800;
const COPIES = { forked: addresses.ip(240), canary: addresses.ip(241) };

describe('a proxy pod turns Ready only once its copies answer it', {
  ...(await requireTool('python3')),
  timeout: suiteTimeout(30_000),
}, () => {
  let cluster: Cluster;
  let proxy: InProcessProxy | undefined;
  const silent: { close: () => Promise<void> }[] = [];

  before(async () => {
    cluster = await startCluster(addresses.cidr);
    for (const [role, clusterIP] of Object.entries(COPIES)) {
      silent.push(await startBlackhole(clusterIP, SERVICE_PORT));
      // As this release's proxy made them (a restarted proxy finds its copies so).
      const labels = { [LABEL_RELEASE]: 'cart-v2', [LABEL_ROLE]: role, [LABEL_SERVICE]: 'cart' };
      await cluster.core.createNamespacedService({
        namespace: NAMESPACE,
        body: {
          metadata: { name: `cart-${role}`, labels },
          spec: { clusterIP, selector: { app: 'cart' }, ports: [{ name: 'http', port: SERVICE_PORT }] },
        },
      });
    }
    await createService(cluster, 'cart', [{ name: 'http', port: SERVICE_PORT }]);
  });

  after(async () => {
    await proxy?.stop();
    for (const hole of silent) await hole.close();
    await cluster.stop();
  });

  it('not Ready while the copies answer nothing, saying which; Ready within a retry once they refuse (no Ready pod behind them)', async () => {
    await createRelease(cluster, 'cart-v2', { services: [serviceEntry('cart', [{ port: SERVICE_PORT, weight: 20 }])] });
    proxy = await startProxy(cluster, 'cart-v2', PORT_BASE, { podIP: addresses.ip(250) });
    const waiting = () =>
      proxy!.logs().find((line) => String(line.msg).startsWith('not Ready yet')) as
        | { upstreams?: string[] }
        | undefined;
    await waitFor(() => waiting() !== undefined, 'the proxy to say what it waits for', 15_000).catch((err: Error) => {
      throw new Error(`${err.message}: ${JSON.stringify(proxy!.logs().map((line) => line.msg))}`);
    });
    assert.deepEqual(
      [...(waiting()!.upstreams ?? [])].sort(),
      Object.values(COPIES)
        .map((ip) => `${ip}:${SERVICE_PORT} silent`)
        .sort(),
    );
    assert.equal(proxy.runtime.ready, false, 'not Ready while its copies answer nothing');
    await sleep(1500);
    assert.equal(proxy.runtime.ready, false, 'still not Ready a retry later');

    for (const hole of silent.splice(0)) await hole.close();
    await waitFor(() => proxy!.runtime.ready, 'Ready once the copies refuse', 5_000);
  });
});
