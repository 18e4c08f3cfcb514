// What the data plane needs of a listener, whatever its protocol, and the address handling both share.
import type net from 'node:net';
import type { Logger } from 'pino';
import type { ListenAddress, ListenerConfig } from '../../config/types.ts';
import { formatListenAddress } from '../../config/listen-address.ts';
import type { DescriptorAccount } from '../resources/descriptor-budget.ts';
import type { IdleReadBuffers } from '../resources/idle-read-buffers.ts';
import type { ListenerSnapshot } from './routing.ts';
import type { LocalRefusal } from '../stats/stats.ts';

/** What the data plane gives each listener besides its routing snapshot. */
export interface ListenerContext {
  readonly log: Logger;
  /** Share listening ports with other worker processes (SO_REUSEPORT). */
  readonly reusePort: boolean;
  /** TCP: plain pipes take the fast path where the runtime allows (tcp/raw-handles.ts). */
  readonly tcpFastPath: boolean;
  /** The listener's share of the process's file descriptors; its listening socket is counted. */
  readonly descriptors: DescriptorAccount;
  /** A new connection or session was refused for want of local resources (logged, throttled). */
  readonly onLocalRefusal: (reason: LocalRefusal, err?: NodeJS.ErrnoException) => void;
  /** Where TCP connections are registered so that their read buffers go when they idle. */
  readonly idleReadBuffers: IdleReadBuffers;
}

export interface Listener {
  listen(): Promise<void>;
  /** New connections or sessions follow the new snapshot at once; live ones keep theirs. */
  update(snapshot: ListenerSnapshot): void;
  /**
   * Stop accepting; let live connections or sessions finish for up to graceMs, then end them.
   * Calling it again (a shutdown during a reload's drain) can only bring the deadline closer.
   */
  drain(graceMs: number): Promise<void>;
  readonly activeConnections: number;
}

/**
 * No host means every address, IPv4 and IPv6 alike. With `reusePort`, several worker processes
 * bind the same port (SO_REUSEPORT) and the kernel spreads connections among them; `exclusive`
 * keeps a cluster worker from routing its bind through the primary process.
 */
export function listenOptions(listen: ListenAddress, reusePort: boolean): net.ListenOptions {
  const address =
    listen.host === undefined ? { port: listen.port, ipv6Only: false } : { host: listen.host, port: listen.port };
  return reusePort ? { ...address, reusePort: true, exclusive: true } : address;
}

/**
 * Binds through `bind` (which calls back once bound): a failure rejects with bindError's one line;
 * errors after that are logged, since the listener keeps serving.
 */
export function bindListener(
  emitter: NodeJS.EventEmitter,
  config: ListenerConfig,
  log: { error(obj: object, msg: string): void },
  bind: (onBound: () => void) => void,
): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => reject(bindError(config, err));
    emitter.once('error', onError);
    bind(() => {
      emitter.off('error', onError);
      emitter.on('error', (err: Error) => log.error({ err }, 'listener error'));
      resolve();
    });
  });
}

/** A bind failure as one line naming the listener, the address and what to do about it. */
export function bindError(config: ListenerConfig, err: NodeJS.ErrnoException): Error {
  const where = `listener "${config.name}" cannot listen on ${config.protocol} ${formatListenAddress(config.listen)}`;
  const hint =
    err.code === 'EADDRINUSE'
      ? 'the address is in use by another process or listener; choose another port or stop the other one'
      : err.code === 'EACCES'
        ? 'permission denied; use a port above 1023 or grant CAP_NET_BIND_SERVICE'
        : err.code === 'EADDRNOTAVAIL'
          ? "no local interface has that address; use one of this host's addresses or omit the host"
          : err.message;
  return Object.assign(new Error(`${where}: ${hint} (${err.code ?? 'error'})`), { code: err.code });
}

/**
 * Waits for every member to leave the set, forcing the stragglers out at the deadline. `start`
 * may be called again with a shorter grace: the earliest deadline wins, the wait stays one.
 */
export class Drain<T> {
  readonly #members: Set<T>;
  readonly #force: (member: T) => void;
  #deadline = Infinity;
  #done: Promise<void> | undefined;

  constructor(members: Set<T>, force: (member: T) => void) {
    this.#members = members;
    this.#force = force;
  }

  get started(): boolean {
    return this.#done !== undefined;
  }

  start(graceMs: number): Promise<void> {
    this.#deadline = Math.min(this.#deadline, Date.now() + graceMs);
    this.#done ??= new Promise((resolve) => {
      const check = () => {
        if (this.#members.size === 0) return resolve();
        if (Date.now() >= this.#deadline) {
          for (const member of this.#members) this.#force(member);
          return resolve();
        }
        setTimeout(check, Math.min(100, Math.max(1, this.#deadline - Date.now()))).unref();
      };
      check();
    });
    return this.#done;
  }
}
