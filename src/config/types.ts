// The L4 config: what the data plane runs. Both modes produce it — `serve` from a file,
// `proxy` from a CanaryRelease — and it is always validated and frozen before use.

export type Protocol = 'tcp' | 'udp';
export type BalanceStrategy = 'wrr' | 'random';
/** clientIP: a client address keeps its backend while the weights hold (rendezvous hashing). */
export type Affinity = 'none' | 'clientIP';

export interface BackendConfig {
  readonly name: string;
  /** '' allowed when `refuse` is true (not used then). */
  readonly host: string;
  /** 0 allowed when `refuse` is true (not used then). */
  readonly port: number;
  /** Integer 0–100; 0 = no new traffic. */
  readonly weight: number;
  /** Set when a `--weight` override replaced the weight the source asked for; holds that weight. */
  readonly overriddenFrom?: number;
  /**
   * Absent = false. True: the backend's share of new connections is refused (the TCP client reset,
   * no connect tried) and of new UDP flows dropped — Gateway API's invalid backendRef, whose share
   * must not go to the others. Never a mirror's target; never marked failed.
   */
  readonly refuse?: boolean;
}

export interface ListenAddress {
  /** undefined = every address, dual-stack (IPv4 and IPv6). */
  readonly host: string | undefined;
  readonly port: number;
}

export interface UdpOptions {
  /** > 0: end a session after this many replies (nginx proxy_responses). 0 = unlimited. */
  readonly responses: number;
  /** Cap on live sessions; 0 = none of its own (the process's descriptor budget bounds them). */
  readonly maxSessions: number;
}

/** replies: the canary's replies are compared with the stable's; none: only sent, read and dropped. */
export type MirrorCompare = 'replies' | 'none';

/**
 * A dark canary: a share of new connections (TCP) or flows (UDP) is also sent to one backend, whose
 * replies are read, judged and never reach the client.
 */
export interface MirrorConfig {
  /** A backend of the listener (weight 0 allowed: it then serves no client). */
  readonly to: string;
  /** Integer 0–100: the share of new connections or flows mirrored. */
  readonly percent: number;
  readonly compare: MirrorCompare;
  /** tcp: client bytes copied per mirrored connection, at most. */
  readonly maxBytes: number;
}

export interface ListenerConfig {
  /** Unique; used in metric labels. */
  readonly name: string;
  readonly protocol: Protocol;
  readonly listen: ListenAddress;
  readonly balance: BalanceStrategy;
  readonly backends: readonly BackendConfig[];
  /** tcp: how long a backend connect may take before the next backend is tried. */
  readonly connectTimeoutMs: number;
  /** tcp: a connection idle both ways this long is closed (nginx proxy_timeout); udp: session idle. */
  readonly idleTimeoutMs: number;
  /** tcp: cap on concurrent client connections; 0 = no cap. */
  readonly maxConnections: number;
  /** Passive health (nginx max_fails / fail_timeout): this many connect failures within
   * failTimeoutMs mark a backend failed for failTimeoutMs. */
  readonly maxFails: number;
  readonly failTimeoutMs: number;
  /**
   * tcp, opt-in (absent = false): a backend that resets a connection before sending a byte counts
   * as a failure too. nginx's stream module counts connect failures only.
   */
  readonly failOnReset?: boolean;
  /**
   * tcp, opt-in (absent or 0 = off): a backend that has sent nothing this long after the connection
   * was established counts as a failure too (the connection itself is left to idleTimeoutMs).
   */
  readonly firstByteTimeoutMs?: number;
  /**
   * tcp, opt-in (absent or 0 = off): while passive health holds a backend out, a connection of the
   * proxy's own is tried to it this often; one that succeeds brings it back at once, one that fails
   * keeps it out failTimeoutMs more.
   */
  readonly probeIntervalMs?: number;
  /**
   * Opt-in (absent or 0 = never): a connection (TCP) or session (UDP) this old is ended gracefully
   * so that its client reconnects by the current weights; jittered up to +10 % so that a pool does
   * not reconnect at once.
   */
  readonly maxConnectionAgeMs?: number;
  /**
   * Opt-in (absent or 0 = never): on a weight change, the connections and sessions of the backends
   * that lost share are ended, spread over this window, just as many as the new split needs.
   */
  readonly rebalanceWindowMs?: number;
  /** Opt-in (absent or 0 = never): connections and sessions of a backend removed from the config end this long after. */
  readonly drainTimeoutMs?: number;
  /** Absent = 'none': each new connection or session is placed by `balance`. */
  readonly affinity?: Affinity;
  /** Opt-in (absent = off): mirror a share of the traffic to one backend (a dark canary). */
  readonly mirror?: MirrorConfig;
  readonly udp: UdpOptions;
}

export interface L4Config {
  readonly listeners: readonly ListenerConfig[];
}

/** `--weight LISTENER:BACKEND=N` */
export interface WeightOverride {
  readonly listener: string;
  readonly backend: string;
  readonly weight: number;
}
