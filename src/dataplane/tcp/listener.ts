// One TCP listener: accepts, picks a backend, connects with a timeout and fails over, then joins the
// two sockets. Reloads swap the routing snapshot; live connections keep the one they started with.
import net from 'node:net';
import type { Logger } from 'pino';
import { chooseBackend, type BackendRuntime, type ListenerSnapshot } from '../routing/routing.ts';
import { connectErrorReason, isLocalResourceError, type LocalRefusal } from '../stats/stats.ts';
import { joinSockets, upstreamReads } from './pipe.ts';
import { teeReads } from '../resources/socket-reads.ts';
import { TcpMirrorLeg } from './mirror.ts';
import { clientAddressHash } from '../choice/affinity.ts';
import { FlowLifetimes } from '../routing/lifetimes.ts';
import { noDelayOnListener } from '../resources/listener-options.ts';
import { TCP_CONNECTION_DESCRIPTORS } from '../resources/descriptor-budget.ts';
import { openMirrorLeg } from '../routing/mirror.ts';
import { Drain, bindListener, listenOptions, type Listener, type ListenerContext } from '../routing/listener.ts';

export class TcpListener implements Listener {
  readonly #server: net.Server;
  readonly #log: Logger;
  readonly #context: ListenerContext;
  readonly #connections = new Set<net.Socket>();
  readonly #drain = new Drain(this.#connections, (socket) => socket.destroy());
  /** The established connections, for maxConnectionAgeMs, rebalances and drains of removed backends. */
  readonly #lifetimes: FlowLifetimes;
  #snapshot: ListenerSnapshot;

  constructor(snapshot: ListenerSnapshot, context: ListenerContext) {
    this.#snapshot = snapshot;
    this.#lifetimes = new FlowLifetimes(snapshot, { idleTimeout: true });
    this.#context = context;
    this.#log = context.log.child({ listener: snapshot.config.name });
    // Paused until the upstream is connected: early client bytes wait in the kernel, not in memory.
    // TCP_NODELAY (on, as nginx and HAProxy have it) is set once on the listening socket at bind.
    this.#server = net.createServer({ pauseOnConnect: true, allowHalfOpen: true });
    this.#server.on('connection', (client) => this.#accept(client));
    this.#server.on('drop', () => this.#snapshot.stats.refused.max_connections++);
    this.#applyCap();
  }

  get activeConnections(): number {
    return this.#connections.size;
  }

  listen(): Promise<void> {
    const { config } = this.#snapshot;
    return bindListener(this.#server, config, this.#log, (onBound) =>
      this.#server.listen(listenOptions(config.listen, this.#context.reusePort), () => {
        noDelayOnListener(this.#server);
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
    this.#context.descriptors.stopReserving();
    return this.#drain.start(graceMs).then(() => this.#context.descriptors.dispose());
  }

  #applyCap(): void {
    const cap = this.#snapshot.config.maxConnections;
    this.#server.maxConnections = cap > 0 ? cap : Infinity;
  }

  #accept(client: net.Socket): void {
    const snapshot = this.#snapshot;
    snapshot.stats.accepted++;
    const { descriptors } = this.#context;
    if (!descriptors.tryAcquire(TCP_CONNECTION_DESCRIPTORS)) {
      this.#refuseLocally(client, snapshot, 'fd_limit');
      return;
    }
    this.#connections.add(client);
    client.once('close', () => {
      this.#connections.delete(client);
      descriptors.release(TCP_CONNECTION_DESCRIPTORS);
    });
    // Until joined, a client error (it gave up) just ends the attempt; joinSockets takes over after.
    const ignoreEarlyError = () => {};
    client.on('error', ignoreEarlyError);
    // Only affinity needs the client's address (a getpeername per connection).
    const clientHash = snapshot.config.affinity === 'clientIP' ? clientAddressHash(client.remoteAddress ?? '') : -1;
    this.#connectUpstream(client, snapshot, new Set(), clientHash, () => client.off('error', ignoreEarlyError));
  }

  #connectUpstream(client: net.Socket, snapshot: ListenerSnapshot, tried: Set<number>, clientHash: number, joined: () => void): void {
    if (client.destroyed) return;
    const index = chooseBackend(snapshot, tried, Date.now(), clientHash, this.#lifetimes.steering);
    if (index === -1) {
      snapshot.stats.refused.no_backend++;
      client.resetAndDestroy();
      return;
    }
    tried.add(index);
    const backend = snapshot.backends[index]!;
    const { config } = snapshot;
    const started = performance.now();
    const mirrorRoute = snapshot.mirror !== null && snapshot.mirror.take(backend) ? snapshot.mirror : null;
    // The leg opens once the stable is connected, before the stable's first byte can arrive.
    let mirror: TcpMirrorLeg | undefined;
    const plainForwarder = upstreamReads(client, backend.stats);
    const upstreamForwarder = mirrorRoute?.config.compare === 'replies' ? teeReads(plainForwarder, (buffer, bytes) => mirror?.stableReply(buffer, bytes)) : plainForwarder;
    const upstream = net.connect({
      host: backend.config.host,
      port: backend.config.port,
      allowHalfOpen: true,
      noDelay: true,
      onread: upstreamForwarder,
    });
    const timer = setTimeout(() => upstream.destroy(connectTimeout(config.connectTimeoutMs)), config.connectTimeoutMs);
    // The client was destroyed (a drain deadline: paused, it cannot notice its peer leaving). A plain
    // destroy brings no 'error' to clear the connect timer, so it is cleared here.
    const abandon = () => {
      clearTimeout(timer);
      upstream.destroy();
    };
    client.once('close', abandon);

    upstream.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      client.off('close', abandon);
      if (client.destroyed) return;
      // Not the backend's fault, and the next backend would fail the same way.
      if (isLocalResourceError(err)) return this.#refuseLocally(client, snapshot, 'local_error', err);
      const reason = connectErrorReason(err);
      backend.stats.connectErrors[reason]++;
      this.#recordFailure(backend, snapshot, `connect failure (${reason})`, err.message);
      this.#connectUpstream(client, snapshot, tried, clientHash, joined);
    });
    upstream.once('connect', () => {
      clearTimeout(timer);
      client.off('close', abandon);
      upstream.removeAllListeners('error');
      const { stats } = backend;
      stats.connectDuration.observe((performance.now() - started) / 1000);
      stats.connections++;
      stats.active++;
      if (config.failOnReset || (config.firstByteTimeoutMs ?? 0) > 0) this.#judgeByFirstByte(backend, upstream, snapshot);
      else backend.health.recordSuccess();
      joined();
      const { idleReadBuffers } = this.#context;
      const lifetimes = this.#lifetimes;
      if (mirrorRoute !== null) mirror = openMirrorLeg(mirrorRoute, this.#context.descriptors, (release) => new TcpMirrorLeg(mirrorRoute, config.connectTimeoutMs, release));
      const connection = joinSockets(client, upstream, upstreamForwarder, backend, started, clientHash, () => {
        idleReadBuffers.delete(connection);
        lifetimes.delete(connection);
        stats.active--;
        stats.sessionDuration.observe((performance.now() - started) / 1000);
        mirror?.realClosed();
      }, mirror);
      idleReadBuffers.add(connection);
      lifetimes.add(connection);
    });
  }

  #refuseLocally(client: net.Socket, snapshot: ListenerSnapshot, reason: LocalRefusal, err?: NodeJS.ErrnoException): void {
    snapshot.stats.refused[reason]++;
    this.#context.onLocalRefusal(reason, err);
    client.resetAndDestroy();
  }

  /**
   * The opt-in passive health past the connect (failOnReset, firstByteTimeoutMs): a backend that
   * accepts is judged by its first byte. A reset before it, or silence past the timeout, is a
   * failure; a connection that closes after the backend sent something is the success that clears
   * the count (counting the connect as one would clear it every time, and maxFails > 1 would never
   * be reached by a backend that accepts and then resets).
   */
  #judgeByFirstByte(backend: BackendRuntime, upstream: net.Socket, snapshot: ListenerSnapshot): void {
    const { config } = snapshot;
    let failed = false;
    const fail = (reason: 'reset' | 'first_byte_timeout', detail: string) => {
      if (failed || upstream.bytesRead > 0) return;
      failed = true;
      backend.stats.failures[reason]++;
      this.#recordFailure(backend, snapshot, reason === 'reset' ? 'a reset before its first byte' : 'no first byte in time', detail);
    };
    const timeoutMs = config.firstByteTimeoutMs ?? 0;
    const timer = timeoutMs > 0 ? setTimeout(() => fail('first_byte_timeout', `nothing within ${timeoutMs} ms`), timeoutMs) : undefined;
    if (config.failOnReset) {
      upstream.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ECONNRESET' || err.code === 'EPIPE') fail('reset', err.message);
      });
    }
    upstream.once('close', () => {
      clearTimeout(timer);
      if (!failed && upstream.bytesRead > 0) backend.health.recordSuccess();
    });
  }

  /** Passive health (maxFails within failTimeoutMs); logs when the backend is taken out. */
  #recordFailure(backend: BackendRuntime, snapshot: ListenerSnapshot, what: string, detail: string): void {
    const { config } = snapshot;
    const now = Date.now();
    if (backend.health.recordFailure(now, config.maxFails, config.failTimeoutMs)) {
      backend.stats.takenOut(now, config.failTimeoutMs);
      this.#log.warn(
        { backend: backend.config.name, address: `${backend.config.host}:${backend.config.port}`, err: detail },
        `backend marked failed for ${config.failTimeoutMs} ms after ${what}`,
      );
    }
  }
}

function connectTimeout(ms: number): NodeJS.ErrnoException {
  return Object.assign(new Error(`connect timed out after ${ms} ms`), { code: 'ETIMEDOUT' });
}
