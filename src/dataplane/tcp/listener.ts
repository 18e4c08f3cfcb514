// One TCP listener: accepts, picks a backend, connects with a timeout and fails over, then joins the
// two sockets. Reloads swap the routing snapshot; live connections keep the one they started with.
// Plain pipes take the fast path (raw-handles.ts, fast-pipe.ts): accepts taken on their bare
// handles, both sides joined without `net.Socket`. The `net.Socket` path (pipe.ts) remains for what
// the fast path does not do — mirroring, backends named by host name, failOnReset and
// firstByteTimeoutMs — and for every listener where the runtime lacks the internals it needs, or
// with --no-tcp-fast-path (CANARY_L4_TCP_FAST_PATH=false).
import net from 'node:net';
import type { Logger } from 'pino';
import { chooseBackend, type BackendRuntime, type ListenerSnapshot } from '../routing/routing.ts';
import { connectErrorReason, isLocalResourceError, type LocalRefusal } from '../stats/stats.ts';
import type { TakeOutCause } from '../stats/held-out.ts';
import { joinSockets, upstreamReads } from './pipe.ts';
import { teeReads } from '../resources/socket-reads.ts';
import { TcpMirrorLeg } from './mirror.ts';
import { clientAddressHash } from '../choice/affinity.ts';
import { FlowLifetimes, type LiveFlow } from '../routing/lifetimes.ts';
import { noDelayOnListener } from '../resources/listener-options.ts';
import { TCP_CONNECTION_DESCRIPTORS } from '../resources/descriptor-budget.ts';
import type { ReadingPair } from '../resources/idle-read-buffers.ts';
import { openMirrorLeg } from '../routing/mirror.ts';
import { Drain, bindListener, listenOptions, type Listener, type ListenerContext } from '../routing/listener.ts';
import { RAW_TCP_AVAILABLE, RAW_TCP_REQUIREMENTS, connectTo, takeAccepts, type AcceptedHandle } from './raw-handles.ts';
import { FastLeg, FastTcpConnection } from './fast-pipe.ts';
import { RecoveryProbes } from './recovery-probe.ts';

/** Whether new connections of this snapshot can take the fast path (what it does not do: see the header). */
export function fitsFastPath(snapshot: ListenerSnapshot): boolean {
  const { config } = snapshot;
  return (
    snapshot.mirror === null &&
    config.failOnReset !== true &&
    (config.firstByteTimeoutMs ?? 0) === 0 &&
    snapshot.backends.every((backend) => net.isIP(backend.config.host) !== 0)
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
  /** Accepts are taken on bare handles (takeAccepts): maxConnections is then checked here. */
  #takesAccepts = false;
  /** The current snapshot's new connections take the fast path. */
  #fast = false;
  /** Accepted sockets inherit TCP_NODELAY from the listening one (noDelayOnListener). */
  #noDelayInherited = true;
  readonly #probes = new RecoveryProbes(() => this.#snapshot);

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
        this.#noDelayInherited = noDelayOnListener(this.#server);
        if (this.#context.tcpFastPath && RAW_TCP_AVAILABLE) this.#takesAccepts = takeAccepts(this.#server, (handle) => this.#take(handle));
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
    this.#probes.stop();
    this.#context.descriptors.stopReserving();
    return this.#drain.start(graceMs).then(() => this.#context.descriptors.dispose());
  }

  #applyCap(): void {
    const cap = this.#snapshot.config.maxConnections;
    this.#server.maxConnections = cap > 0 && !this.#takesAccepts ? cap : Infinity;
    this.#fast = this.#takesAccepts && fitsFastPath(this.#snapshot);
  }

  /** An accepted connection's bare handle: refused at the cap, joined on the fast path, or left to net (false). */
  #take(handle: AcceptedHandle): boolean {
    const cap = this.#snapshot.config.maxConnections;
    if (cap > 0 && this.#connections.size >= cap) {
      this.#snapshot.stats.refused.max_connections++;
      new FastLeg(handle).close(false);
      return true;
    }
    if (!this.#fast) return false;
    this.#acceptFast(new FastLeg(handle));
    return true;
  }

  #acceptFast(client: FastLeg): void {
    const snapshot = this.#snapshot;
    snapshot.stats.accepted++;
    const { descriptors } = this.#context;
    if (!descriptors.tryAcquire(TCP_CONNECTION_DESCRIPTORS)) {
      this.#refuseLocally(() => client.close(true), snapshot, 'fd_limit');
      return;
    }
    if (!this.#noDelayInherited) client.stream.setNoDelay();
    this.#connections.add(client);
    client.onClosed = () => {
      this.#connections.delete(client);
      descriptors.release(TCP_CONNECTION_DESCRIPTORS);
    };
    const clientHash = snapshot.config.affinity === 'clientIP' ? clientAddressHash(client.stream.peerAddress()) : -1;
    this.#connectFast(client, snapshot, new Set(), clientHash);
  }

  /** As #connectUpstream, on bare handles: the connect's timeout, failover and passive health are the same. */
  #connectFast(client: FastLeg, snapshot: ListenerSnapshot, tried: Set<number>, clientHash: number): void {
    if (client.closed) return;
    const backend = this.#pick(snapshot, tried, clientHash);
    if (backend === undefined) return client.close(true);
    const { host, port } = backend.config;
    const timeoutMs = snapshot.config.connectTimeoutMs;
    const started = performance.now();
    const failed = (err: NodeJS.ErrnoException) => {
      client.abandon = undefined;
      if (this.#connectFailed(err, backend, snapshot, () => client.close(true))) this.#connectFast(client, snapshot, tried, clientHash);
    };
    const timer = setTimeout(() => {
      abandon();
      failed(connectTimeout(timeoutMs));
    }, timeoutMs);
    const abandon = connectTo(host, port, (code, handle) => {
      clearTimeout(timer);
      if (code !== null) return failed(Object.assign(new Error(`connect ${code} ${host}:${port}`), { code }));
      client.abandon = undefined;
      this.#established(backend, started);
      backend.health.recordSuccess();
      backend.stats.heldOut.succeeded();
      const connection: FastTcpConnection = new FastTcpConnection(backend, started, { client, upstream: new FastLeg(handle) }, clientHash, () =>
        this.#flowClosed(connection, backend, started),
      );
      this.#context.idleReadBuffers.add(connection);
      this.#lifetimes.add(connection);
    });
    // The client went (a drain deadline) while connecting: the attempt goes with it.
    client.abandon = () => {
      clearTimeout(timer);
      abandon();
    };
  }

  /** Chooses the next backend to try, or undefined (counted) when none is left. */
  #pick(snapshot: ListenerSnapshot, tried: Set<number>, clientHash: number): BackendRuntime | undefined {
    const index = chooseBackend(snapshot, tried, Date.now(), clientHash, this.#lifetimes.steering);
    if (index === -1) {
      snapshot.stats.refused.no_backend++;
      return undefined;
    }
    tried.add(index);
    return snapshot.backends[index]!;
  }

  /**
   * A connect to `backend` failed: true when the next backend is to be tried. A failure of this
   * process's own (not the backend's fault, and the next would fail the same way) refuses the client.
   */
  #connectFailed(err: NodeJS.ErrnoException, backend: BackendRuntime, snapshot: ListenerSnapshot, refuse: () => void): boolean {
    if (isLocalResourceError(err)) {
      this.#refuseLocally(refuse, snapshot, 'local_error', err);
      return false;
    }
    const reason = connectErrorReason(err);
    backend.stats.connectErrors[reason]++;
    this.#recordFailure(backend, snapshot, `connect failure (${reason})`, err.message, reason === 'reset' ? 'reset' : 'connect');
    return true;
  }

  #established(backend: BackendRuntime, started: number): void {
    const { stats } = backend;
    stats.connectDuration.observe((performance.now() - started) / 1000);
    stats.connections++;
    stats.active++;
  }

  #flowClosed(connection: LiveFlow & ReadingPair, backend: BackendRuntime, started: number): void {
    this.#context.idleReadBuffers.delete(connection);
    this.#lifetimes.delete(connection);
    backend.stats.active--;
    backend.stats.sessionDuration.observe((performance.now() - started) / 1000);
  }

  #accept(client: net.Socket): void {
    const snapshot = this.#snapshot;
    snapshot.stats.accepted++;
    const { descriptors } = this.#context;
    if (!descriptors.tryAcquire(TCP_CONNECTION_DESCRIPTORS)) {
      this.#refuseLocally(() => client.resetAndDestroy(), snapshot, 'fd_limit');
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
    const backend = this.#pick(snapshot, tried, clientHash);
    if (backend === undefined) {
      client.resetAndDestroy();
      return;
    }
    const { config } = snapshot;
    const started = performance.now();
    const mirrorRoute = snapshot.mirror?.take(backend) ? snapshot.mirror : null;
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
      if (this.#connectFailed(err, backend, snapshot, () => client.resetAndDestroy())) this.#connectUpstream(client, snapshot, tried, clientHash, joined);
    });
    upstream.once('connect', () => {
      clearTimeout(timer);
      client.off('close', abandon);
      upstream.removeAllListeners('error');
      this.#established(backend, started);
      if (config.failOnReset || (config.firstByteTimeoutMs ?? 0) > 0) this.#judgeByFirstByte(backend, upstream, snapshot);
      else {
        backend.health.recordSuccess();
        backend.stats.heldOut.succeeded();
      }
      joined();
      if (mirrorRoute !== null) mirror = openMirrorLeg(mirrorRoute, this.#context.descriptors, (release) => new TcpMirrorLeg(mirrorRoute, config.connectTimeoutMs, release));
      const connection = joinSockets(client, upstream, upstreamForwarder, backend, started, clientHash, () => {
        this.#flowClosed(connection, backend, started);
        mirror?.realClosed();
      }, mirror);
      this.#context.idleReadBuffers.add(connection);
      this.#lifetimes.add(connection);
    });
  }

  /** `reset` resets the client's connection. */
  #refuseLocally(reset: () => void, snapshot: ListenerSnapshot, reason: LocalRefusal, err?: NodeJS.ErrnoException): void {
    snapshot.stats.refused[reason]++;
    this.#context.onLocalRefusal(reason, err);
    reset();
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
      this.#recordFailure(backend, snapshot, reason === 'reset' ? 'a reset before its first byte' : 'no first byte in time', detail, reason === 'reset' ? 'reset' : 'connect');
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
      if (failed || upstream.bytesRead === 0) return;
      backend.health.recordSuccess();
      backend.stats.heldOut.succeeded();
    });
  }

  /** Passive health (maxFails within failTimeoutMs); logs when the backend is taken out. */
  #recordFailure(backend: BackendRuntime, snapshot: ListenerSnapshot, what: string, detail: string, cause: TakeOutCause): void {
    const { config } = snapshot;
    const now = Date.now();
    if (backend.health.recordFailure(now, config.maxFails, config.failTimeoutMs)) {
      backend.stats.takenOut(now, config.failTimeoutMs, cause);
      this.#probes.start(backend);
      this.#log.warn(
        { backend: backend.config.name, address: `${backend.config.host}:${backend.config.port}`, err: detail },
        `backend marked failed for ${config.failTimeoutMs} ms after ${what}${(config.probeIntervalMs ?? 0) > 0 ? `, or until a recovery probe (every ${config.probeIntervalMs} ms) finds it serving` : ''}`,
      );
    }
  }
}

let warnedUnavailable = false;

/** Once per process, where this runtime lacks what the fast path needs. */
function warnFastPathUnavailable(log: Logger): void {
  if (warnedUnavailable) return;
  warnedUnavailable = true;
  const missing = RAW_TCP_REQUIREMENTS.filter((requirement) => !requirement.present).map((requirement) => requirement.name);
  log.warn(
    { missing: missing.length > 0 ? missing : ["a listening net.Server's _handle.onconnection"] },
    `TCP fast path unavailable on Node ${process.version}: TCP listeners use net.Socket (slower on short connections; --no-tcp-fast-path silences this)`,
  );
}

function connectTimeout(ms: number): NodeJS.ErrnoException {
  return Object.assign(new Error(`connect timed out after ${ms} ms`), { code: 'ETIMEDOUT' });
}
