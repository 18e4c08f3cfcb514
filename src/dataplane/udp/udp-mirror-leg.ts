// The mirror leg of a UDP flow: the client's datagrams also go to the mirror backend from a socket
// of the leg's own; its replies are read, paired with the stable's (compare: replies) and dropped,
// never sent to the client. A leg that fails is dropped and counted; the flow goes on untouched.
import type dgram from 'node:dgram';
import { ReplyPairing, type MirrorRoute } from '../routing/mirror-route.ts';
import type { MirrorCounts } from '../stats/stats.ts';
import { datagramSender, receiveDatagrams, type DatagramSender } from './datagram-handle.ts';

/** Datagrams held while the leg's socket connects; past this the leg is dropped. */
const MAX_PENDING_DATAGRAMS = 64;

export class UdpMirrorLeg {
  readonly #socket: dgram.Socket;
  readonly #sender: DatagramSender;
  readonly #counts: MirrorCounts;
  readonly #pairing: ReplyPairing | null;
  readonly #release: () => void;
  /** Datagrams waiting for the socket to connect; null once connected. */
  #pending: Buffer[] | null = [];
  #open = true;
  #finishing = false;

  /** `socket`: a new unconnected one for the leg; `release`: called once when it is closed. */
  constructor(route: MirrorRoute, socket: dgram.Socket, release: () => void) {
    this.#socket = socket;
    this.#sender = datagramSender(socket);
    this.#counts = route.counts;
    this.#pairing = route.config.compare === 'replies' ? new ReplyPairing(route.counts) : null;
    this.#release = release;
    const pairing = this.#pairing;
    receiveDatagrams(socket, pairing === null ? () => {} : (reply) => pairing.mirrorReply(reply));
    socket.on('error', () => this.#drop());
    const { host, port } = route.backend.config;
    socket.connect(port, host, (err?: Error) => {
      if (err) return this.#drop();
      const pending = this.#pending;
      this.#pending = null;
      if (pending !== null && this.#open) for (const datagram of pending) this.#sender.send(datagram);
    });
  }

  send(datagram: Buffer): void {
    if (!this.#open || this.#finishing) return;
    if (this.#pending === null) this.#sender.send(datagram);
    else if (this.#pending.length < MAX_PENDING_DATAGRAMS) this.#pending.push(datagram);
    else this.#drop();
  }

  /** A reply the stable sent the client (compare: replies only). */
  stableReply(reply: Buffer): void {
    if (this.#open) this.#pairing?.stableReply(reply);
  }

  /**
   * The flow ended: the mirror's replies still on their way are awaited for `lingerMs` (the flow's
   * reply window ends there), then the stable's replies it never matched are missing.
   */
  finish(lingerMs: number): void {
    if (!this.#open || this.#finishing) return;
    this.#finishing = true;
    setTimeout(() => {
      if (!this.#open) return;
      this.#pairing?.finish();
      this.#close();
    }, lingerMs).unref();
  }

  /** The mirror failed (refused, unreachable) or fell behind: the leg is given up, not judged. */
  #drop(): void {
    if (!this.#open) return;
    this.#counts.dropped++;
    this.#close();
  }

  #close(): void {
    this.#open = false;
    this.#pending = null;
    this.#socket.close();
    this.#release();
  }
}
