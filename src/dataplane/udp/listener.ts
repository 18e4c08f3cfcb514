// One UDP listener: a session per client address and port (session.ts), each with its own connected
// upstream socket to the backend picked when the session began; replies leave from the listening
// socket so the client sees the address it sent to. Sessions end when idle, after `responses`
// replies, or when the backend refuses (ICMP port unreachable). A flow placed on a backend with
// `refuse: true` gets no session: its datagrams are dropped until it is idle (refused-flows.ts).
import dgram from 'node:dgram';
import net from 'node:net';
import type { Logger } from 'pino';
import { chooseBackend, type ListenerSnapshot } from '../routing/routing.ts';
import type { BackendRuntime } from '../routing/backend-runtime.ts';
import { formatListenAddress } from '../../config/listen-address.ts';
import { Drain, bindListener, type Listener, type ListenerContext } from '../routing/listener.ts';
import { UDP_SESSION_DESCRIPTORS } from '../resources/descriptor-budget.ts';
import { openMirrorLeg } from '../routing/mirror-route.ts';
import { connectErrorReason, isLocalResourceError, type LocalRefusal } from '../stats/stats.ts';
import { clientAddressHash } from '../choice/affinity.ts';
import { FlowLifetimes } from '../flows/lifetimes.ts';
import { UdpMirrorLeg } from './udp-mirror-leg.ts';
import { datagramSender, receiveDatagrams, type DatagramSender } from './datagram-handle.ts';
import { MirroredUdpSession, REPLY_LINGER_MS, UdpSession } from './session.ts';
import { RefusedFlows } from './refused-flows.ts';
import { RECEIVE_BUFFER_BYTES, immediateLookup, upstreamSocket } from './sockets.ts';

/** Datagrams held per session while its upstream socket is still binding/connecting. */
const MAX_PENDING_DATAGRAMS = 64;

export class UdpListener implements Listener {
  readonly #socket: dgram.Socket;
  /** Replies to clients, from the listening socket. */
  readonly #toClients: DatagramSender;
  readonly #log: Logger;
  readonly #context: ListenerContext;
  /** Client address → client port → session: two small lookups instead of building a string key per datagram. */
  readonly #sessions = new Map<string, Map<number, UdpSession>>();
  readonly #live = new Set<UdpSession>();
  /** Flows placed on a backend with `refuse: true`: dropped, datagram after datagram, until idle. */
  readonly #refused = new RefusedFlows();
  readonly #drain = new Drain(this.#live, (session) => this.#end(session));
  /** The sessions again, for maxConnectionAgeMs, rebalances and drains of removed backends. */
  readonly #lifetimes: FlowLifetimes;
  #snapshot: ListenerSnapshot;
  #tick = 0;
  #sweep: NodeJS.Timeout | undefined;

  constructor(snapshot: ListenerSnapshot, context: ListenerContext) {
    this.#snapshot = snapshot;
    this.#context = context;
    this.#lifetimes = new FlowLifetimes(snapshot, { idleTimeout: false });
    this.#log = context.log.child({ listener: snapshot.config.name });
    const { host } = snapshot.config.listen;
    const type = host === undefined || net.isIPv6(host) ? 'udp6' : 'udp4';
    // With reusePort the kernel hashes each client address to one worker, so a flow stays on one.
    this.#socket = dgram.createSocket({ type, ipv6Only: false, reusePort: context.reusePort, lookup: immediateLookup });
    this.#toClients = datagramSender(this.#socket);
    receiveDatagrams(this.#socket, (msg, sender) => this.#onClientDatagram(msg, sender.address, sender.port));
  }

  get activeConnections(): number {
    return this.#live.size;
  }

  async listen(): Promise<void> {
    const { config } = this.#snapshot;
    await bindListener(this.#socket, config, this.#log, (onBound) =>
      this.#socket.bind({ port: config.listen.port, address: config.listen.host, exclusive: true }, onBound),
    );
    try {
      this.#socket.setRecvBufferSize(RECEIVE_BUFFER_BYTES);
    } catch (err) {
      this.#log.debug({ err }, 'could not enlarge the receive buffer');
    }
    this.#startSweep();
    this.#log.debug({ address: formatListenAddress(config.listen) }, 'udp listener bound');
  }

  update(snapshot: ListenerSnapshot): void {
    const idleChanged = snapshot.config.idleTimeoutMs !== this.#snapshot.config.idleTimeoutMs;
    this.#snapshot = snapshot;
    if (idleChanged) this.#startSweep();
    this.#lifetimes.update(snapshot);
    if (this.#refused.size > 0)
      this.#refused.keepOnly(new Set(snapshot.config.backends.flatMap((b) => (b.refuse === true ? [b.name] : []))));
  }

  drain(graceMs: number): Promise<void> {
    if (this.#drain.started) return this.#drain.start(graceMs);
    this.#context.descriptors.stopReserving();
    this.#lifetimes.stop();
    // Replies leave from the listening socket, so it stays open until the last session ends.
    return this.#drain.start(graceMs).then(() => {
      clearInterval(this.#sweep);
      this.#socket.close();
      this.#context.descriptors.dispose();
    });
  }

  /** Idle expiry by a tick counter the sweep bumps, so a datagram costs no clock read. */
  #startSweep(): void {
    clearInterval(this.#sweep);
    const idleMs = this.#snapshot.config.idleTimeoutMs;
    const tickMs = Math.min(1000, Math.max(10, Math.floor(idleMs / 4)));
    const idleTicks = Math.ceil(idleMs / tickMs);
    this.#sweep = setInterval(() => {
      const tick = ++this.#tick;
      for (const session of this.#live) if (tick - session.lastTick > idleTicks) this.#end(session);
      this.#refused.expire(tick, idleTicks);
    }, tickMs);
    this.#sweep.unref();
  }

  #onClientDatagram(msg: Buffer, address: string, port: number): void {
    let session = this.#sessions.get(address)?.get(port);
    if (session === undefined) {
      if (this.#refused.takes(address, port, this.#tick)) {
        this.#snapshot.stats.udpDropped.backend_refused++;
        return;
      }
      session = this.#open(address, port);
      if (session === undefined) return;
    }
    session.lastTick = this.#tick;
    const { stats } = session.backend;
    if (session.pending !== null) {
      if (session.pending.length >= MAX_PENDING_DATAGRAMS) {
        this.#snapshot.stats.udpDropped.queue_full++;
        return;
      }
      session.pending.push(msg);
    } else {
      session.forward(msg);
    }
    stats.datagramsToBackend++;
    stats.bytesToBackend += msg.length;
  }

  /** A new client's first datagram: its session, or undefined (counted) when none is admitted. */
  #open(address: string, port: number): UdpSession | undefined {
    const snapshot = this.#snapshot;
    if (!this.#admits(snapshot)) return undefined;
    const clientHash = snapshot.config.affinity === 'clientIP' ? clientAddressHash(address) : -1;
    const backend = this.#pick(snapshot, clientHash);
    if (backend === undefined) return undefined;
    if (backend.config.refuse === true) {
      // Its share is refused whole: this flow's later datagrams are dropped too, not placed again.
      this.#refused.add(address, port, backend.config.name, this.#tick);
      backend.stats.refused++;
      snapshot.stats.udpDropped.backend_refused++;
      return undefined;
    }
    if (!this.#reserveDescriptors()) return undefined;
    snapshot.stats.accepted++;
    const mirror = this.#openMirror(snapshot, backend);
    const session =
      mirror === undefined
        ? new UdpSession(backend, address, port, this.#tick, clientHash, this.#detachSession)
        : new MirroredUdpSession(backend, address, port, this.#tick, clientHash, this.#detachSession, mirror);
    this.#register(session);
    this.#wireUpstream(session, snapshot, snapshot.mirror?.config.compare === 'replies' ? mirror : undefined);
    return session;
  }

  /** Not while draining, nor past maxSessions. */
  #admits(snapshot: ListenerSnapshot): boolean {
    if (this.#drain.started) {
      snapshot.stats.refused.draining++;
      return false;
    }
    const { maxSessions } = snapshot.config.udp;
    if (maxSessions > 0 && this.#live.size >= maxSessions) {
      snapshot.stats.udpDropped.max_sessions++;
      return false;
    }
    return true;
  }

  #pick(snapshot: ListenerSnapshot, clientHash: number): BackendRuntime | undefined {
    const index = chooseBackend(snapshot, null, Date.now(), clientHash, this.#lifetimes.steering);
    if (index === -1) {
      snapshot.stats.udpDropped.no_backend++;
      return undefined;
    }
    return snapshot.backends[index]!;
  }

  #reserveDescriptors(): boolean {
    if (this.#context.descriptors.tryAcquire(UDP_SESSION_DESCRIPTORS)) return true;
    this.#dropLocally('fd_limit');
    return false;
  }

  /** The mirror leg of a session placed on `backend`, when its flow is one the mirror takes. */
  #openMirror(snapshot: ListenerSnapshot, backend: BackendRuntime): UdpMirrorLeg | undefined {
    const route = snapshot.mirror;
    if (route === null || !route.take(backend)) return undefined;
    const open = (release: () => void) => new UdpMirrorLeg(route, upstreamSocket(route.backend.config.host), release);
    return openMirrorLeg(route, this.#context.descriptors, open);
  }

  #register(session: UdpSession): void {
    let byPort = this.#sessions.get(session.clientAddress);
    if (byPort === undefined) this.#sessions.set(session.clientAddress, (byPort = new Map()));
    byPort.set(session.clientPort, session);
    this.#live.add(session);
    this.#lifetimes.add(session);
    session.backend.stats.active++;
  }

  /**
   * The session's upstream socket: the backend's replies relayed to the client from the listening
   * socket (`compared`: also to that mirror leg, to pair), its errors, and its connect. The closures
   * share one scope per session; what they do past the relay is in the methods they call.
   */
  #wireUpstream(session: UdpSession, snapshot: ListenerSnapshot, compared: UdpMirrorLeg | undefined): void {
    const { backend, upstream } = session;
    const responses = snapshot.config.udp.responses;
    const relay = (reply: Buffer) => {
      session.lastTick = this.#tick;
      backend.stats.datagramsToClient++;
      backend.stats.bytesToClient += reply.length;
      this.#toClients.sendTo(reply, session.clientPort, session.clientAddress);
      if (++session.replies === 1) {
        backend.stats.sessionsReplied++;
        // A reply shows it serves: what it was offered while held out does not count against it.
        backend.stats.heldOut.succeeded();
      }
      if (responses > 0 && session.replies >= responses) this.#end(session);
    };
    receiveDatagrams(
      upstream,
      compared !== undefined
        ? (reply: Buffer) => {
            compared.stableReply(reply);
            relay(reply);
          }
        : relay,
    );
    upstream.on('error', (err: NodeJS.ErrnoException) => this.#upstreamError(session, snapshot, err));
    // dgram hands a failed connect (a backend name that does not resolve, no route) to this
    // callback rather than to 'error'; sending on the unconnected socket would then throw.
    const { host, port } = backend.config;
    upstream.connect(port, host, (err?: NodeJS.ErrnoException) => this.#connected(session, snapshot, err));
  }

  /** An error on the upstream socket ends the session; a refusal counts against the backend. */
  #upstreamError(session: UdpSession, snapshot: ListenerSnapshot, err: NodeJS.ErrnoException): void {
    const { backend } = session;
    if (isLocalResourceError(err)) {
      this.#dropLocally('local_error', err);
    } else if (err.code === 'ECONNREFUSED') {
      backend.stats.connectErrors.refused++;
      recordFailure(backend, snapshot);
    } else {
      backend.stats.connectErrors.other++;
      this.#log.warn({ err, backend: backend.config.name }, 'udp upstream socket error');
    }
    this.#end(session);
  }

  /** The upstream socket's connect: on success, what the client sent meanwhile goes out. */
  #connected(session: UdpSession, snapshot: ListenerSnapshot, err: NodeJS.ErrnoException | undefined): void {
    const { backend } = session;
    if (err && isLocalResourceError(err)) {
      this.#dropLocally('local_error', err);
      this.#end(session);
      return;
    }
    if (err) {
      const reason = connectErrorReason(err);
      backend.stats.connectErrors[reason]++;
      recordFailure(backend, snapshot);
      this.#log.warn({ err, backend: backend.config.name, reason }, 'udp upstream socket cannot connect');
      this.#end(session);
      return;
    }
    backend.stats.connections++;
    const pending = session.pending;
    session.pending = null;
    if (pending !== null) for (const datagram of pending) session.forward(datagram);
  }

  /**
   * The client's next datagram opens a new session (placed by the current weights); this one only
   * relays the replies still on their way, for REPLY_LINGER_MS.
   */
  readonly #detachSession = (session: UdpSession): void => {
    this.#forget(session);
    setTimeout(() => this.#end(session), REPLY_LINGER_MS).unref();
  };

  /** Takes the session out of the lookup (a newer session of the same client stays). */
  #forget(session: UdpSession): void {
    const byPort = this.#sessions.get(session.clientAddress);
    if (byPort?.get(session.clientPort) !== session) return;
    byPort.delete(session.clientPort);
    if (byPort.size === 0) this.#sessions.delete(session.clientAddress);
  }

  #end(session: UdpSession): void {
    if (!this.#live.delete(session)) return;
    this.#lifetimes.delete(session);
    this.#forget(session);
    const { stats } = session.backend;
    stats.active--;
    stats.sessionDuration.observe((performance.now() - session.startedAt) / 1000);
    session.close();
    this.#context.descriptors.release(UDP_SESSION_DESCRIPTORS);
  }

  #dropLocally(reason: LocalRefusal, err?: NodeJS.ErrnoException): void {
    this.#snapshot.stats.udpDropped[reason]++;
    this.#context.onLocalRefusal(reason, err);
  }
}

/** Passive health: a connect the backend refused or that failed counts against it (maxFails within failTimeoutMs). */
function recordFailure(backend: BackendRuntime, snapshot: ListenerSnapshot): void {
  const { maxFails, failTimeoutMs } = snapshot.config;
  const now = Date.now();
  if (backend.health.recordFailure(now, maxFails, failTimeoutMs)) backend.stats.takenOut(now, failTimeoutMs, 'connect');
}
