// Defaults shared by the config loader, the CLI and the control loop. nginx's stream-module
// defaults where nginx has one, so operators migrating from it see the same behaviour.

export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;
/** nginx proxy_timeout default: 10 minutes. */
export const DEFAULT_IDLE_TIMEOUT_MS = 600_000;
/** UDP sessions idle out much sooner than TCP connections. */
export const DEFAULT_UDP_IDLE_TIMEOUT_MS = 30_000;
export const DEFAULT_MAX_FAILS = 1;
export const DEFAULT_FAIL_TIMEOUT_MS = 10_000;
/**
 * A release's TCP listeners probe a held-out side this often (probeIntervalMs): a canary that came
 * back serves again within a second, and one still failing is known to be, so what passive health
 * kept from it counts against it (the analysis' evidence) without waiting out failTimeoutMs.
 */
export const RELEASE_PROBE_INTERVAL_MS = 1_000;
/** 0: no cap of its own; the process's descriptor budget bounds UDP sessions (see below). */
export const DEFAULT_UDP_MAX_SESSIONS = 0;
export const DEFAULT_ADMIN_PORT = 9090;
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
/** How long a listener removed by a reload lets its live connections finish. */
export const DEFAULT_LISTENER_GRACE_MS = 30_000;
export const DEFAULT_PORT_BASE = 8080;
/** Admin server connections at once (Prometheus, probes, an operator): more are dropped. */
export const ADMIN_MAX_CONNECTIONS = 32;
/**
 * File descriptors kept out of the data plane's budget for the process itself: stdio, the event
 * loop, config reads, DNS lookups, the config-parsing thread. The admin server's are kept too.
 */
export const DESCRIPTORS_KEPT_FOR_THE_PROCESS = 64;
/** The most descriptors a listener keeps for itself, that a flood on another listener cannot take. */
export const MAX_DESCRIPTORS_RESERVED_PER_LISTENER = 256;
export const METRIC_PREFIX = 'canary_l4_';
