// The whole life of two canary releases of one NodePort Service, through the proxy and the API under
// test (the fake, or a real control plane: npm run test:cluster), with real traffic: run at 20 %,
// 50 %, Adopted; then a second release, Deprecated. The proxy runs with a proxy's identity: on the
// real API a ServiceAccount bound to deploy/'s ClusterRole, which RBAC holds it to; what it asked
// (the fake's request log, the real server's audit log) is that ClusterRole.

import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { ANNOTATION_ORIGINAL } from '../../../src/api/names.ts';
import { randomPayload, sha256 } from '../../support/net/backends.ts';
import { metricValue } from '../../support/dataplane/test-plane.ts';
import { suiteTimeout } from '../../support/cluster/api-under-test.ts';
import {
  conditionOf,
  createRelease,
  createService,
  getService,
  patchRelease,
  proxyGrantsWithoutWorkloads,
  rbacUsed,
  serviceEntry,
  serving,
  setWeight,
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

const PORT_BASE = await freePortBlock(20);
const SERVICE_PORT = 8000;

/** What a release must leave exactly as it found it: everything but the server's bookkeeping. */
function owned(service: V1Service | undefined): unknown {
  const {
    resourceVersion: _rv,
    generation: _generation,
    managedFields: _managed,
    ...metadata
  } = service?.metadata ?? {};
  return { metadata, spec: service?.spec };
}

/** A connection held open across a reload: its backend's name, then an echo of what it sends. */
async function openLive(port: number): Promise<{ name: string; socket: net.Socket; received: Buffer[] }> {
  const socket = net.connect({ host: '127.0.0.1', port });
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  await waitFor(() => Buffer.concat(received).includes('\n'), 'the backend to name itself');
  const text = Buffer.concat(received).toString();
  received.length = 0;
  received.push(Buffer.from(text.slice(text.indexOf('\n') + 1)));
  return { name: text.slice(0, text.indexOf('\n')), socket, received };
}

describe('lifecycle: run, weight change, Adopted; a second release, Deprecated', {
  timeout: suiteTimeout(30_000),
}, () => {
  let cluster: Cluster;
  let proxy: InProcessProxy | undefined;
  let backends: Backends | undefined;
  let beforeRelease: V1Service | undefined;

  before(async () => {
    cluster = await startCluster(addresses.cidr);
    await createService(cluster, 'web', [{ name: 'http', port: SERVICE_PORT, targetPort: 9376 }], { type: 'NodePort' });
    beforeRelease = await getService(cluster, 'web');
  });

  after(async () => {
    await proxy?.stop();
    await backends?.close();
    await cluster.stop();
  });

  it('runs at 20 %: copies made, the original retargeted (nodePort kept), traffic split 80/20 exactly', async () => {
    await createRelease(cluster, 'web-v2', { services: [serviceEntry('web', [{ port: SERVICE_PORT, weight: 20 }])] });
    proxy = await startProxy(cluster, 'web-v2', PORT_BASE);
    backends = await startBackends(cluster, 'web', [{ port: SERVICE_PORT }]);
    const release = await waitForRelease(cluster, 'web-v2', 'serving', serving);
    assert.deepEqual(
      release?.status?.ports,
      [{ service: 'web', port: SERVICE_PORT, protocol: 'TCP', proxyPort: PORT_BASE, weight: 20, served: 20 }],
      'override: null is stored as absent (a list in a merge patch keeps no null keys)',
    );
    assert.deepEqual(release?.metadata.finalizers, ['canary-l4.io/restore-services']);

    const web = await getService(cluster, 'web');
    assert.deepEqual(web?.spec?.selector, takenOver('web-v2'));
    assert.equal(web?.spec?.ports?.[0]?.targetPort, PORT_BASE);
    assert.equal(web?.spec?.ports?.[0]?.nodePort, beforeRelease?.spec?.ports?.[0]?.nodePort, 'nodePort kept');
    assert.ok(web?.metadata?.annotations?.[ANNOTATION_ORIGINAL], 'the original is saved on the Service');
    const forked = await getService(cluster, 'web-forked');
    const canary = await getService(cluster, 'web-canary');
    assert.deepEqual([forked?.spec?.type, forked?.spec?.selector], ['ClusterIP', { app: 'web', version: 'v1' }]);
    assert.deepEqual([canary?.spec?.type, canary?.spec?.selector], ['ClusterIP', { app: 'web', version: 'v2' }]);

    assert.deepEqual(await split(PORT_BASE, 100), { stable: 80, canary: 20 });
    const metrics = await proxy.metrics();
    assert.equal(
      metricValue(metrics, 'canary_l4_canary_weight', { service: 'web', port: String(SERVICE_PORT), protocol: 'TCP' }),
      20,
    );
    assert.equal(
      metricValue(metrics, 'canary_l4_release_info', { release: 'web-v2', namespace: 'default', phase: 'Running' }),
      1,
    );
    assert.ok((metricValue(metrics, 'canary_l4_reconcile_total', { result: 'success' }) ?? 0) > 0);
    assert.ok((metricValue(metrics, 'canary_l4_reconcile_duration_seconds_count') ?? 0) > 0);
  });

  it('weight 50: the new split applies to new connections, live ones carry on untouched', async () => {
    assert.ok(proxy);
    const live = await Promise.all(Array.from({ length: 5 }, () => openLive(PORT_BASE)));
    await setWeight(cluster, 'web-v2', 0, 0, 50);
    await waitFor(
      async () => metricValue(await proxy!.metrics(), 'canary_l4_canary_weight', { service: 'web' }) === 50,
      'weight 50 served',
    );
    assert.deepEqual(await split(PORT_BASE, 100), { stable: 50, canary: 50 });
    for (const connection of live) {
      const payload = randomPayload(256 * 1024);
      connection.socket.end(payload);
      await once(connection.socket, 'close');
      assert.equal(
        sha256(Buffer.concat(connection.received)),
        sha256(payload),
        `live connection to ${connection.name} intact`,
      );
    }
    // Opened at 20 %: any five consecutive picks of a 4:1 smooth WRR are four stable, one canary.
    assert.deepEqual(live.map((connection) => connection.name).sort(), [
      'canary',
      'stable',
      'stable',
      'stable',
      'stable',
    ]);
    const release = await waitForRelease(
      cluster,
      'web-v2',
      'status shows 50',
      (found) => found?.status?.ports?.[0]?.weight === 50,
    );
    assert.match(conditionOf(release, 'Available')?.message ?? '', /web:8000\/TCP=50%/);
  });

  it('Adopted: the original selects the canary pods (nodePort and targetPort back), copies and finalizer gone', async () => {
    await patchRelease(cluster, 'web-v2', { spec: { transition: 'Adopted' } });
    const release = await waitForRelease(
      cluster,
      'web-v2',
      'phase Adopted',
      (found) => found?.status?.phase === 'Adopted' && !found.metadata.finalizers?.length,
    );
    assert.equal(conditionOf(release, 'Archived')?.status, 'True');
    const web = await getService(cluster, 'web');
    assert.deepEqual(web?.spec?.selector, { app: 'web', version: 'v2' });
    assert.deepEqual(web?.spec?.ports, beforeRelease?.spec?.ports, 'ports, targetPort and nodePort as before');
    assert.equal(web?.metadata?.annotations?.[ANNOTATION_ORIGINAL], undefined);
    assert.equal(await getService(cluster, 'web-forked'), undefined);
    assert.equal(await getService(cluster, 'web-canary'), undefined);
    await waitFor(() => proxy!.runtime.dataplane.config.listeners.length === 0, 'the proxy to stop listening');
    assert.equal(
      proxy?.logs().filter((line) => String(line.msg).startsWith('retargeted Service web')).length,
      1,
      'the retarget is logged once',
    );
    assert.equal(
      proxy?.logs().filter((line) => String(line.msg).startsWith('adopted: Service web')).length,
      1,
      'the adoption is logged once',
    );
    await proxy?.stop();
    await backends?.close();
    proxy = undefined;
    backends = undefined;
  });

  it('a second release, Deprecated: the original comes back exactly as it was', async () => {
    const adopted = await getService(cluster, 'web');
    await createRelease(cluster, 'web-v3', {
      services: [serviceEntry('web', [{ port: SERVICE_PORT, weight: 10 }], 'v3')],
    });
    proxy = await startProxy(cluster, 'web-v3', PORT_BASE + 10);
    backends = await startBackends(cluster, 'web', [{ port: SERVICE_PORT }]);
    await waitForRelease(cluster, 'web-v3', 'serving', serving);
    assert.deepEqual(await split(PORT_BASE + 10, 10), { stable: 9, canary: 1 });

    await patchRelease(cluster, 'web-v3', { spec: { transition: 'Deprecated' } });
    await waitForRelease(
      cluster,
      'web-v3',
      'phase Deprecated',
      (found) => found?.status?.phase === 'Deprecated' && !found.metadata.finalizers?.length,
    );
    assert.deepEqual(
      owned(await getService(cluster, 'web')),
      owned(adopted),
      'selector, ports, nodePorts, annotations and every other field as before',
    );
    assert.equal(await getService(cluster, 'web-forked'), undefined);
    assert.equal(await getService(cluster, 'web-canary'), undefined);
  });

  it('asked the API for what the proxy ClusterRole grants, but for leader election (one replica here) and what only spec.workloads uses', (t) => {
    const used = rbacUsed(cluster);
    t.diagnostic(`RBAC used by the proxy: ${used.join('; ')}`);
    assert.deepEqual(
      used,
      proxyGrantsWithoutWorkloads().filter((grant) => !grant.includes('coordination.k8s.io/leases')),
    );
  });
});
