// The admin server of a `serve` child, as Prometheus and an operator see it: /readyz, /healthz,
// /config (the running config, overrides marked), /metrics (counts that match the traffic sent).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  exchange,
  randomPayload,
  sha256,
  startEchoBackend,
  startUdpEcho,
  udpAsk,
  type EchoBackend,
  type UdpBackend,
} from '../support/net/backends.ts';
import { freePort } from '../support/net/free-ports.ts';
import { metricValue } from '../support/dataplane/test-plane.ts';
import { startServe, type ServeChild } from '../support/process/serve-child.ts';
import { waitFor } from '../support/wait.ts';

describe('admin server of serve', { timeout: 40_000 }, () => {
  let serve: ServeChild;
  let stable: EchoBackend;
  let canary: EchoBackend;
  let udpBackend: UdpBackend;
  let tcpPort = 0;
  let udpPort = 0;

  before(async () => {
    stable = await startEchoBackend();
    canary = await startEchoBackend();
    udpBackend = await startUdpEcho('dns');
    tcpPort = await freePort('127.0.0.1', 'tcp');
    udpPort = await freePort('127.0.0.1', 'udp');
    serve = await startServe(
      {
        listeners: [
          {
            name: 'web',
            listen: `127.0.0.1:${tcpPort}`,
            backends: [
              { name: 'stable', host: '127.0.0.1', port: stable.port, weight: 90 },
              { name: 'canary', host: '127.0.0.1', port: canary.port, weight: 10 },
            ],
          },
          {
            name: 'dns',
            protocol: 'udp',
            listen: `127.0.0.1:${udpPort}`,
            backends: [{ name: 'resolver', host: '127.0.0.1', port: udpBackend.port, weight: 100 }],
          },
        ],
      },
      ['--weight', 'web:canary=50', '--weight', 'web:stable=50'],
    );
  });
  after(async () => {
    await serve?.stop();
    await Promise.all([stable?.close(), canary?.close(), udpBackend?.close()]);
  });

  test('/readyz and /healthz answer 200 while serving; unknown paths 404, other methods 405', async () => {
    assert.deepEqual(await serve.get('/readyz'), { status: 200, body: 'ready\n' });
    assert.deepEqual(await serve.get('/healthz'), { status: 200, body: 'ok\n' });
    assert.equal((await serve.get('/nope')).status, 404);
    const post = await fetch(`http://127.0.0.1:${serve.adminPort}/config`, { method: 'POST' });
    assert.equal(post.status, 405);
    await post.text();
  });

  test('/config is the running config with defaults filled and overrides marked with the file weight', async () => {
    const { status, body } = await serve.get('/config');
    assert.equal(status, 200);
    const config = JSON.parse(body) as { listeners: Record<string, unknown>[] };
    const web = config.listeners.find((listener) => listener.name === 'web')!;
    assert.deepEqual(web.listen, { host: '127.0.0.1', port: tcpPort });
    assert.equal(web.balance, 'wrr');
    assert.equal(web.connectTimeoutMs, 5000);
    assert.deepEqual(web.backends, [
      { name: 'stable', host: '127.0.0.1', port: stable.port, weight: 50, overriddenFrom: 90 },
      { name: 'canary', host: '127.0.0.1', port: canary.port, weight: 50, overriddenFrom: 10 },
    ]);
    const dns = config.listeners.find((listener) => listener.name === 'dns')!;
    assert.deepEqual(
      dns.backends,
      [{ name: 'resolver', host: '127.0.0.1', port: udpBackend.port, weight: 100 }],
      'not overridden, not marked',
    );
    assert.deepEqual(dns.udp, { responses: 0, maxSessions: 0 });
  });

  test('/metrics counts the traffic sent: connections, bytes each way, UDP datagrams, weights, health, reloads', async () => {
    const size = 100_000;
    for (let i = 0; i < 10; i++) {
      const payload = randomPayload(size);
      const { data } = await exchange(tcpPort, payload);
      assert.equal(sha256(data), sha256(payload));
    }
    for (let i = 0; i < 4; i++) assert.deepEqual(await udpAsk(udpPort, `q${i}`), [`dns:q${i}`]);

    const response = await fetch(`http://127.0.0.1:${serve.adminPort}/metrics`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await response.text();
    const value = (name: string, labels: Record<string, string> = {}) => metricValue(text, `canary_l4_${name}`, labels);

    assert.equal(value('listener_connections_total', { listener: 'web' }), 10);
    // The override made it 50/50: wrr gives each exactly 5.
    assert.equal(value('backend_connections_total', { listener: 'web', backend: 'stable' }), 5);
    assert.equal(value('backend_connections_total', { listener: 'web', backend: 'canary' }), 5);
    assert.equal(value('bytes_total', { listener: 'web', backend: 'stable', direction: 'to_backend' }), 5 * size);
    assert.equal(value('bytes_total', { listener: 'web', backend: 'stable', direction: 'to_client' }), 5 * size);
    assert.equal(value('bytes_total', { listener: 'web', backend: 'canary', direction: 'to_client' }), 5 * size);
    assert.equal(value('connect_duration_seconds_count', { listener: 'web', backend: 'stable' }), 5);
    assert.equal(value('connect_errors_total', { listener: 'web', backend: 'stable', reason: 'refused' }), 0);
    assert.equal(value('connections_refused_total', { listener: 'web', reason: 'no_backend' }), 0);
    assert.equal(value('backend_weight', { listener: 'web', backend: 'canary' }), 50);
    assert.equal(value('backend_healthy', { listener: 'web', backend: 'canary' }), 1);
    // serve's first config is a load, not a reload (docs/metrics.md).
    assert.equal(value('config_reloads_total', { result: 'success' }), 0);
    assert.equal(value('config_reloads_total', { result: 'failure' }), 0);
    assert.ok((value('config_last_reload_success_timestamp_seconds') ?? 0) > Date.now() / 1000 - 300);

    assert.equal(value('udp_datagrams_total', { listener: 'dns', backend: 'resolver', direction: 'to_backend' }), 4);
    assert.equal(value('udp_datagrams_total', { listener: 'dns', backend: 'resolver', direction: 'to_client' }), 4);
    assert.equal(
      value('backend_connections_total', { listener: 'dns', backend: 'resolver' }),
      4,
      'one UDP session per client socket',
    );

    // Default process metrics, with the prefix.
    assert.ok((value('process_resident_memory_bytes') ?? 0) > 0);
    // Connections that ended leave no active ones behind.
    await waitFor(async () => {
      const later = (await serve.get('/metrics')).body;
      return metricValue(later, 'canary_l4_active_connections', { listener: 'web', backend: 'stable' }) === 0;
    }, 'active connections back to 0');
  });
});
