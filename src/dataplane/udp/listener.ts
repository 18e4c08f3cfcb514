// One UDP listener: a session per client address and port, each with its own connected upstream
// socket to the backend picked when the session began; replies leave from the listening socket so
// the client sees the address it sent to. Sessions end when idle, after `responses` replies, or when
// the backend refuses (ICMP port unreachable).
import dgram from 'node:dgram';
import net from 'node:net';
import dns from 'node:dns';
import type { Logger } from 'pino';
import { chooseBackend, type BackendRuntime, type ListenerSnapshot } from '../routing/routing.ts';
import { formatListenAddress } from '../../config/validate.ts';
import { Drain, bindListener, type Listener, type ListenerContext } from '../routing/listener.ts';
import { UDP_SESSION_DESCRIPTORS } from '../resources/descriptor-budget.ts';
import { openMirrorLeg } from '../routing/mirror.ts';
import { connectErrorReason, isLocalResourceError, type LocalRefusal } from '../stats/stats.ts';
import { clientAddressHash } from '../choice/affinity.ts';
import { FlowLifetimes, LiveFlow } from '../routing/lifetimes.ts';
import { UdpMirrorLeg } from './mirror.ts';
import { datagramSender, receiveDatagrams, type DatagramSender } from './datagram-handle.ts';

/** Datagrams held per session while its upstream socket is still binding/connecting. */
const MAX_PENDING_DATAGRAMS = 64;
/** Capped by net.core.rmem_max (4 MiB here; 208 KiB on a stock kernel); a limit, not an allocation. */
const RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024;
/**
 * A session the lifetime policies end stops taking the client's datagrams at once (the next one
 * opens a session by the current weights), but its socket stays open this long for the replies
 * already on their way.
 */
const REPLY_LINGER_MS = 1_000;

/**
 * dgram looks up every destination, even an IP literal, and by default answers on a later tick.
 * Answering IP literals at once saves a deferred callback per connect, and per datagram where
 * datagram-handle.ts falls back to dgram's own send.
 */
const immediateLookup = ((hostname: string, options: dns.LookupOptions | number, callback: (err: Error | null, address: string, family: number) => void) => {
  const family = net.isIP(hostname);
  if (family !== 0) return callback(null, hostname, family);
  dns.lookup(hostname, { family: typeof options === 'number' ? options : (options.family ?? 0) }, callback);
}) as unknown as NonNullable<dgram.SocketOptions['lookup']>;

class UdpSession extends LiveFlow {
  readonly upstream: dgram.Socket;
  readonly toBackend: DatagramSender;
  readonly clientAddress: string;
  readonly clientPort: number;
  lastTick: number;
  replies = 0;
  /** Datagrams waiting for the upstream socket to connect; null once connected. */
  pending: Buffer[] | null = [];
  #clientHash: number;
  readonly #detach: (session: UdpSession) => void;

  constructor(backend: BackendRuntime, clientAddress: string, clientPort: number, tick: number, clientHash: number, detach: (session: UdpSession) => void) {
    super(backend, performance.now());
    this.clientAddress = clientAddress;
    this.clientPort = clientPort;
    this.lastTick = tick;
    this.#clientHash = clientHash;
    this.#detach = detach;
    this.upstream = upstreamSocket(backend.config.host);
    this.toBackend = datagramSender(this.upstream);
  }

  /** A client datagram to the backend, once the upstream socket is connected. */
  forward(datagram: Buffer): void {
    this.toBackend.send(datagram);
  }

  /** The session is over: its sockets close. */
  close(): void {
    this.upstream.close();
  }

  clientHash(): number {
    if (this.#clientHash === -1) this.#clientHash = clientAddressHash(this.clientAddress);
    return this.#clientHash;
  }

  protected endGracefully(): void {
    this.#detach(this);
  }
}

/** A session whose datagrams also go to the mirror backend: a class of its own, so that a listener without a mirror pays nothing per datagram. */
class MirroredUdpSession extends UdpSession {
  readonly mirror: UdpMirrorLeg;

  constructor(backend: BackendRuntime, clientAddress: string, clientPort: number, tick: number, clientHash: number, detach: (session: UdpSession) => void, mirror: UdpMirrorLeg) {
    super(backend, clientAddress, clientPort, tick, clientHash, detach);
    this.mirror = mirror;
  }

  override forward(datagram: Buffer): void {
    this.toBackend.send(datagram);
    this.mirror.send(datagram);
  }

  override close(): void {
    this.upstream.close();
    this.mirror.finish(REPLY_LINGER_MS);
  }
}

function upstreamSocket(host: string): dgram.Socket {
  return dgram.createSocket({
    type: net.isIPv6(host) ? 'udp6' : 'udp4',
    lookup: immediateLookup,
    // Replies queue here while the event loop is busy (a GC pause, a burst from other flows):
    // the default ~200 KiB holds a few milliseconds at 40 000 replies/s, then drops them.
    recvBufferSize: RECEIVE_BUFFER_BYTES,
  });
}

export class UdpListener implements Listener {
  readonly #socket: dgram.Socket;
  /** Replies to clients, from the listening socket. */
  readonly #toClients: DatagramSender;
  readonly #log: Logger;
  readonly #context: ListenerContext;
  /** Client address → client port → session: two small lookups instead of building a string key per datagram. */
  readonly #sessions = new Map<string, Map<number, UdpSession>>();
  readonly #live = new Set<UdpSession>();
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
    }, tickMs);
    this.#sweep.unref();
  }

  #onClientDatagram(msg: Buffer, address: string, port: number): void {
    let session = this.#sessions.get(address)?.get(port);
    if (session === undefined) {
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

  #open(address: string, port: number): UdpSession | undefined {
    const snapshot = this.#snapshot;
    const listenerStats = snapshot.stats;
    if (this.#drain.started) {
      listenerStats.refused.draining++;
      return undefined;
    }
    const { maxSessions } = snapshot.config.udp;
    if (maxSessions > 0 && this.#live.size >= maxSessions) {
      listenerStats.udpDropped.max_sessions++;
      return undefined;
    }
    const clientHash = snapshot.config.affinity === 'clientIP' ? clientAddressHash(address) : -1;
    const index = chooseBackend(snapshot, null, Date.now(), clientHash, this.#lifetimes.steering);
    if (index === -1) {
      listenerStats.udpDropped.no_backend++;
      return undefined;
    }
    if (!this.#context.descriptors.tryAcquire(UDP_SESSION_DESCRIPTORS)) {
      this.#dropLocally('fd_limit');
      return undefined;
    }
    listenerStats.accepted++;
    const backend = snapshot.backends[index]!;
    const route = snapshot.mirror;
    const mirror = route?.take(backend)
      ? openMirrorLeg(route, this.#context.descriptors, (release) => new UdpMirrorLeg(route, upstreamSocket(route.backend.config.host), release))
      : undefined;
    const session = mirror === undefined
      ? new UdpSession(backend, address, port, this.#tick, clientHash, this.#detachSession)
      : new MirroredUdpSession(backend, address, port, this.#tick, clientHash, this.#detachSession, mirror);
    const responses = snapshot.config.udp.responses;
    let byPort = this.#sessions.get(address);
    if (byPort === undefined) this.#sessions.set(address, (byPort = new Map()));
    byPort.set(port, session);
    this.#live.add(session);
    this.#lifetimes.add(session);
    backend.stats.active++;

    const { upstream } = session;
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
    const compared = mirror !== undefined && route?.config.compare === 'replies';
    receiveDatagrams(upstream, compared ? (reply: Buffer) => {
      mirror.stableReply(reply);
      relay(reply);
    } : relay);
    upstream.on('error', (err: NodeJS.ErrnoException) => {
      if (isLocalResourceError(err)) {
        this.#dropLocally('local_error', err);
      } else if (err.code === 'ECONNREFUSED') {
        backend.stats.connectErrors.refused++;
        const now = Date.now();
        if (backend.health.recordFailure(now, snapshot.config.maxFails, snapshot.config.failTimeoutMs)) backend.stats.takenOut(now, snapshot.config.failTimeoutMs, 'connect');
      } else {
        backend.stats.connectErrors.other++;
        this.#log.warn({ err, backend: backend.config.name }, 'udp upstream socket error');
      }
      this.#end(session);
    });
    // dgram hands a failed connect (a backend name that does not resolve, no route) to this
    // callback rather than to 'error'; sending on the unconnected socket would then throw.
    upstream.connect(backend.config.port, backend.config.host, (err?: NodeJS.ErrnoException) => {
      if (err && isLocalResourceError(err)) {
        this.#dropLocally('local_error', err);
        this.#end(session);
        return;
      }
      if (err) {
        const reason = connectErrorReason(err);
        backend.stats.connectErrors[reason]++;
        const now = Date.now();
        if (backend.health.recordFailure(now, snapshot.config.maxFails, snapshot.config.failTimeoutMs)) backend.stats.takenOut(now, snapshot.config.failTimeoutMs, 'connect');
        this.#log.warn({ err, backend: backend.config.name, reason }, 'udp upstream socket cannot connect');
        this.#end(session);
        return;
      }
      backend.stats.connections++;
      const pending = session.pending;
      session.pending = null;
      if (pending !== null) for (const datagram of pending) session.forward(datagram);
    });
    return session;
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
