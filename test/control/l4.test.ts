import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { listenersStillTargeted } from '../../src/control/l4.ts';
import type { L4Config, ListenerConfig } from '../../src/config/types.ts';
import { PROXY, service } from './world.ts';

function listener(port: number): ListenerConfig {
  return {
    name: `l-${port}`, protocol: 'tcp', listen: { host: undefined, port }, balance: 'wrr', backends: [], connectTimeoutMs: 1,
    idleTimeoutMs: 1, maxConnections: 0, maxFails: 1, failTimeoutMs: 1, udp: { responses: 0, maxSessions: 1 },
  };
}

describe('listeners once the CanaryRelease is gone', () => {
  const config: L4Config = { listeners: [listener(8080), listener(8081), listener(8082)] };

  it('keeps those a Service selecting the proxy still targets, closes the others', () => {
    const services = [
      service('web', PROXY, [{ port: 80, targetPort: 8081 }]),
      service('api', { app: 'api' }, [{ port: 80, targetPort: 8082 }]),
    ];
    assert.deepEqual(listenersStillTargeted(config, services, PROXY).listeners.map((item) => item.listen.port), [8081]);
  });

  it('closes every listener when no Service selects the proxy', () => {
    assert.deepEqual(listenersStillTargeted(config, [service('web', { app: 'web' }, [{ port: 80, targetPort: 8080 }])], PROXY), { listeners: [] });
  });
});
