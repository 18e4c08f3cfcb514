// One TCP listener: binds, hands each accept to one of its two accept paths, and swaps the routing
// snapshot on reloads (live connections keep the one they started with). Plain pipes take the fast
// path (fast-accept.ts): accepts taken on their bare handles, both sides joined without `net.Socket`.
// The `net.Socket` path (socket-accept.ts) remains for what the fast path does not do — mirroring,
// backends named by host name, failOnReset and firstByteTimeoutMs — and for every listener where the
// runtime lacks the internals it needs, or with --no-tcp-fast-path (CANARY_L4_TCP_FAST_PATH=false).
// Both pick, connect, fail over and count through connect-attempts.ts.
import net from 'node:net';
import type { Logger } from 'pino';
import type { ListenerSnapshot } from '../routing/routing.ts';
import { FlowLifetimes } from '../flows/lifetimes.ts';
import { noDelayOnListener } from '../resources/listener-options.ts';
import { Drain, bindListener, listenOptions, type Listener, type ListenerContext } from '../routing/listener.ts';
import { RAW_TCP_AVAILABLE, RAW_TCP_REQUIREMENTS, takeAccepts, type AcceptedHandle } from './raw-handles.ts';
import { ConnectAttempts } from './connect-attempts.ts';
import { FastAccept } from './fast-accept.ts';
import { SocketAccept } from './socket-accept.ts';

/** Whether new connections of this snapshot can take the fast path (what it does not do: see the header). */
export function fitsFastPath(snapshot: ListenerSnapshot): boolean {
  const { config } = snapshot;
  return (
    snapshot.mirror === null &&
    config.failOnReset !== true &&
    (config.firstByteTimeoutMs ?? 0) === 0 &&
    snapshot.backends.every((backend) => backend.config.refuse === true || net.isIP(backend.config.host) !== 0)
  );
}

export class TcpListener implements Listener {
  readonly #server: net.Server;
  readonly #log: Logger;
  readonly #context: ListenerContext;
  /** Accepted clients (a net.Socket, or a FastLeg on the fast path) until they close. */
  readonly #connections = new Set<{ destroy(): void }>();
  readonly #drain = new Drain(this.#connections, (client) => client.destroy());
  /** The established connections, for maxConnectionAgeMs, rebalances and drains of removed backends. */
  readonly #lifetimes: FlowLifetimes;
  #snapshot: ListenerSnapshot;
  /** Accepts are taken on bare handles (takeAccepts): maxConnections is then checked there. */
  #takesAccepts = false;
  /** The current snapshot's new connections take the fast path. */
  #fast = false;
  readonly #attempts: ConnectAttempts;
  readonly #fastAccept: FastAccept;
  readonly #socketAccept: SocketAccept;

  constructor(snapshot: ListenerSnapshot, context: ListenerContext) {
    this.#snapshot = snapshot;
    this.#lifetimes = new FlowLifetimes(snapshot, { idleTimeout: true });
    this.#context = context;
    this.#log = context.log.child({ listener: snapshot.config.name });
    this.#attempts = new ConnectAttempts(context, this.#lifetimes, this.#log, () => this.#snapshot);
    this.#fastAccept = new FastAccept(this.#connections, context.descriptors, this.#attempts);
    this.#socketAccept = new SocketAccept(this.#connections, context.descriptors, this.#attempts);
    // Paused until the upstream is connected: early client bytes wait in the kernel, not in memory.
    // TCP_NODELAY (on, as nginx and HAProxy have it) is set once on the listening socket at bind.
    this.#server = net.createServer({ pauseOnConnect: true, allowHalfOpen: true });
    this.#server.on('connection', (client) => this.#socketAccept.accept(client, this.#snapshot));
    this.#server.on('drop', () => this.#snapshot.stats.refused.max_connections++);
    this.#applyCap();
  }

  /** Whether new connections take the fast path (raw-handles.ts) rather than `net.Socket`s. */
  get fastPath(): boolean {
    return this.#fast;
  }

  get activeConnections(): number {
    return this.#connections.size;
  }

  listen(): Promise<void> {
    const { config } = this.#snapshot;
    return bindListener(this.#server, config, this.#log, (onBound) =>
      this.#server.listen(listenOptions(config.listen, this.#context.reusePort), () => {
        this.#fastAccept.noDelayInherited = noDelayOnListener(this.#server);
        if (this.#context.tcpFastPath && RAW_TCP_AVAILABLE) {
          const take = (handle: AcceptedHandle) => this.#fastAccept.take(handle, this.#snapshot, this.#fast);
          this.#takesAccepts = takeAccepts(this.#server, take);
        }
        if (this.#context.tcpFastPath && !this.#takesAccepts) warnFastPathUnavailable(this.#log);
        this.#applyCap();
        onBound();
      }),
    );
  }

  update(snapshot: ListenerSnapshot): void {
    this.#snapshot = snapshot;
    this.#applyCap();
    this.#lifetimes.update(snapshot);
  }

  drain(graceMs: number): Promise<void> {
    if (this.#drain.started) return this.#drain.start(graceMs);
    this.#server.close();
    this.#lifetimes.stop();
    this.#attempts.stop();
    this.#context.descriptors.stopReserving();
    return this.#drain.start(graceMs).then(() => this.#context.descriptors.dispose());
  }

  #applyCap(): void {
    const cap = this.#snapshot.config.maxConnections;
    this.#server.maxConnections = cap > 0 && !this.#takesAccepts ? cap : Infinity;
    this.#fast = this.#takesAccepts && fitsFastPath(this.#snapshot);
  }
}

let warnedUnavailable = false;

/** Once per process, where this runtime lacks what the fast path needs. */
function warnFastPathUnavailable(log: Logger): void {
  if (warnedUnavailable) return;
  warnedUnavailable = true;
  const missing = RAW_TCP_REQUIREMENTS.filter((requirement) => !requirement.present).map(
    (requirement) => requirement.name,
  );
  log.warn(
    { missing: missing.length > 0 ? missing : ["a listening net.Server's _handle.onconnection"] },
    `TCP fast path unavailable on Node ${process.version}: TCP listeners use net.Socket (slower on short connections; --no-tcp-fast-path silences this)`,
  );
}
