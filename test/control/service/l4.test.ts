import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { listenerName, listenersStillTargeted, withPortPolicies } from '../../../src/control/service/l4.ts';
import type { L4Config, ListenerConfig } from '../../../src/config/types.ts';
import { takeoverValue } from '../../../src/control/service/takeover-selector.ts';
import { PROXY, service } from '../reconcile/world.ts';

function listener(port: number): ListenerConfig {
  return {
    name: `l-${port}`,
    protocol: 'tcp',
    listen: { host: undefined, port },
    balance: 'wrr',
    backends: [],
    connectTimeoutMs: 1,
    idleTimeoutMs: 1,
    maxConnections: 0,
    maxFails: 1,
    failTimeoutMs: 1,
    udp: { responses: 0, maxSessions: 1 },
  };
}

describe('listeners once the CanaryRelease is gone', () => {
  const config: L4Config = { listeners: [listener(8080), listener(8081), listener(8082)] };

  it('keeps those a Service selecting the proxy still targets, closes the others', () => {
    const services = [
      service('web', PROXY, [{ port: 80, targetPort: 8081 }]),
      service('api', { app: 'api' }, [{ port: 80, targetPort: 8082 }]),
    ];
    assert.deepEqual(
      listenersStillTargeted(config, services, 'web-v2', PROXY).listeners.map((item) => item.listen.port),
      [8081],
    );
  });

  it('keeps those a Service taken over with values targets, by number or by a declared name', () => {
    const services = [
      service('web', { app: takeoverValue('web-v2') }, [
        { port: 80, targetPort: 8080 },
        { port: 81, targetPort: 'http' },
      ]),
      service('api', { app: 'api' }, [{ port: 80, targetPort: 8081 }]),
    ];
    const named = [{ name: 'http', containerPort: 8082, protocol: 'TCP' as const }];
    assert.deepEqual(
      listenersStillTargeted(config, services, 'web-v2', PROXY, named).listeners.map((item) => item.listen.port),
      [8080, 8082],
    );
  });

  it('closes every listener when no Service selects the proxy', () => {
    assert.deepEqual(
      listenersStillTargeted(
        config,
        [service('web', { app: 'web' }, [{ port: 80, targetPort: 8080 }])],
        'web-v2',
        PROXY,
      ),
      { listeners: [] },
    );
  });
});

describe('connection policies of a port (spec.services[].ports[].config)', () => {
  const web80 = { ...listener(8080), name: listenerName({ service: 'web', port: 80, protocol: 'TCP' }) };
  const dns53 = {
    ...listener(8081),
    name: listenerName({ service: 'dns', port: 53, protocol: 'UDP' }),
    protocol: 'udp' as const,
  };
  const config: L4Config = { listeners: [web80, dns53] };

  it("reach the port's listener, and only it", () => {
    const served = withPortPolicies(config, {
      services: [
        {
          service: 'web',
          ports: [
            {
              port: 80,
              config: { weight: 10, maxConnectionAgeMs: 60_000, rebalanceWindowMs: 30_000, affinity: 'clientIP' },
            },
          ],
        },
        { service: 'dns', ports: [{ port: 53, protocol: 'UDP', config: { weight: 5, drainTimeoutMs: 5_000 } }] },
      ],
    });
    assert.deepEqual(served.listeners[0], {
      ...web80,
      maxConnectionAgeMs: 60_000,
      rebalanceWindowMs: 30_000,
      drainTimeoutMs: 0,
      affinity: 'clientIP',
    });
    assert.deepEqual(served.listeners[1], {
      ...dns53,
      maxConnectionAgeMs: 0,
      rebalanceWindowMs: 0,
      drainTimeoutMs: 5_000,
      affinity: 'none',
    });
  });

  it('a port that asks for none keeps the defaults, which cut nothing', () => {
    const served = withPortPolicies(config, {
      services: [{ service: 'web', ports: [{ port: 80, config: { weight: 10 } }] }],
    });
    assert.deepEqual(served.listeners[0], {
      ...web80,
      maxConnectionAgeMs: 0,
      rebalanceWindowMs: 0,
      drainTimeoutMs: 0,
      affinity: 'none',
    });
    assert.equal(withPortPolicies(config, undefined), config);
  });
});
