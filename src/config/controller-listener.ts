// The listener a release's proxy port and a Gateway's listener become: the defaults `serve` has,
// recovery probes on TCP (a backend held out comes back as soon as it answers), and UDP sessions
// that end on idle, not after a number of replies (nginx's proxy_responses 1 fits DNS only).
import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_FAIL_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_FAILS,
  DEFAULT_UDP_IDLE_TIMEOUT_MS,
  DEFAULT_UDP_MAX_SESSIONS,
  RELEASE_PROBE_INTERVAL_MS,
} from '../defaults.ts';
import type { BackendConfig, ListenAddress, ListenerConfig, Protocol } from './types.ts';

export function controllerListener(
  name: string,
  protocol: Protocol,
  listen: ListenAddress,
  backends: readonly BackendConfig[],
): ListenerConfig {
  const udp = protocol === 'udp';
  return {
    name,
    protocol,
    listen,
    balance: 'wrr',
    backends,
    connectTimeoutMs: DEFAULT_CONNECT_TIMEOUT_MS,
    idleTimeoutMs: udp ? DEFAULT_UDP_IDLE_TIMEOUT_MS : DEFAULT_IDLE_TIMEOUT_MS,
    maxConnections: 0,
    maxFails: DEFAULT_MAX_FAILS,
    failTimeoutMs: DEFAULT_FAIL_TIMEOUT_MS,
    ...(udp ? {} : { probeIntervalMs: RELEASE_PROBE_INTERVAL_MS }),
    udp: { responses: 0, maxSessions: DEFAULT_UDP_MAX_SESSIONS },
  };
}
