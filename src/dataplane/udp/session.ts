// A UDP session: one client address and port, its own connected upstream socket to the backend
// picked when it began, and the lifetime hooks its listener's policies call. A mirrored session is a
// class of its own, so that a listener without a mirror pays nothing per datagram.
import type dgram from 'node:dgram';
import type { BackendRuntime } from '../routing/backend-runtime.ts';
import { clientAddressHash } from '../choice/affinity.ts';
import { LiveFlow } from '../flows/live-flow.ts';
import type { UdpMirrorLeg } from './udp-mirror-leg.ts';
import { datagramSender, type DatagramSender } from './datagram-handle.ts';
import { upstreamSocket } from './sockets.ts';

/**
 * A session the lifetime policies end stops taking the client's datagrams at once (the next one
 * opens a session by the current weights), but its socket stays open this long for the replies
 * already on their way.
 */
export const REPLY_LINGER_MS = 1_000;

export class UdpSession extends LiveFlow {
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

  constructor(
    backend: BackendRuntime,
    clientAddress: string,
    clientPort: number,
    tick: number,
    clientHash: number,
    detach: (session: UdpSession) => void,
  ) {
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

/** A session whose datagrams also go to the mirror backend. */
export class MirroredUdpSession extends UdpSession {
  readonly mirror: UdpMirrorLeg;

  constructor(
    backend: BackendRuntime,
    clientAddress: string,
    clientPort: number,
    tick: number,
    clientHash: number,
    detach: (session: UdpSession) => void,
    mirror: UdpMirrorLeg,
  ) {
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
