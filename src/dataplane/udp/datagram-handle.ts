// The one module that reaches below node:dgram's public API, to the socket's own libuv handle
// (`udp_wrap`), as dgram itself does: a send there skips dgram's per-call work (argument shuffling,
// an address lookup and a closure, a new array and a new request object per datagram), and a
// datagram is handed to the listener without an EventEmitter dispatch. Every use of a Node internal
// is here. When the runtime's internals are not what this expects, the public API is used instead,
// and the test of this module fails naming what changed.
import dgram from 'node:dgram';

/** What a datagram is handed to: the payload and the sender (`address` and `port` are all that is read). */
export type DatagramHandler = (datagram: Buffer, sender: dgram.RemoteInfo) => void;

/** Sends on one socket: `send` once it is connected, `sendTo` on one that is not. */
export interface DatagramSender {
  send(datagram: Buffer): void;
  sendTo(datagram: Buffer, port: number, address: string): void;
}

/** The parts of the runtime's `udp_wrap` handle this uses (lib/dgram.js calls them the same way). */
interface UdpHandle {
  send(
    request: object,
    buffers: Buffer[],
    count: number,
    ...rest: [hasCallback: boolean] | [port: number, address: string, hasCallback: boolean]
  ): number;
  onmessage: ((nread: number, handle: UdpHandle, datagram: Buffer, sender: dgram.RemoteInfo) => void) | undefined;
}

/** dgram's per-socket state: its handle (null once closed) and the block lists it would check. */
interface SocketState {
  handle: UdpHandle | null;
  receiveBlockList?: unknown;
  sendBlockList?: unknown;
}

interface RuntimeInternals {
  readonly stateSymbol: symbol;
  readonly SendWrap: new () => object;
}

/** Why the handle cannot be used on this runtime, or null when it can. */
export function udpHandleProblem(): string | null {
  return INTERNALS instanceof Error ? INTERNALS.message : null;
}

const INTERNALS: RuntimeInternals | Error = findInternals();

function findInternals(): RuntimeInternals | Error {
  const probe = dgram.createSocket('udp4');
  try {
    const stateSymbol = Object.getOwnPropertySymbols(probe).find((symbol) => symbol.description === 'state symbol');
    if (stateSymbol === undefined) return new Error("a dgram.Socket has no 'state symbol' property");
    const state = (probe as unknown as Record<symbol, Partial<SocketState> | undefined>)[stateSymbol];
    if (typeof state?.handle?.send !== 'function')
      return new Error("a dgram.Socket's state has no handle with a send method");
    // process.binding is deprecated (DEP0111) but udp_wrap stays on its allow list in Node 24 and 26.
    const binding = (process as unknown as { binding(name: string): { SendWrap?: unknown } }).binding('udp_wrap');
    if (typeof binding.SendWrap !== 'function') return new Error("process.binding('udp_wrap') has no SendWrap");
    return { stateSymbol, SendWrap: binding.SendWrap as new () => object };
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  } finally {
    probe.close();
  }
}

function stateOf(socket: dgram.Socket, internals: RuntimeInternals): SocketState {
  // findInternals saw every dgram.Socket carry it.
  return (socket as unknown as Record<symbol, SocketState>)[internals.stateSymbol]!;
}

/**
 * The datagrams `socket` receives go to `onDatagram`: call it before the socket binds. Through
 * 'message' until dgram starts receiving, then straight from the handle; errors (a refused
 * datagram's ICMP) still go through dgram to 'error'.
 */
export function receiveDatagrams(
  socket: dgram.Socket,
  onDatagram: DatagramHandler,
  internals: RuntimeInternals | Error = INTERNALS,
): void {
  socket.on('message', onDatagram);
  if (internals instanceof Error) return;
  const takeOver = () => {
    const state = stateOf(socket, internals);
    const handle = state.handle;
    const dgramOnMessage = handle?.onmessage;
    if (handle === null || typeof dgramOnMessage !== 'function' || state.receiveBlockList) return;
    handle.onmessage = (nread, fromHandle, datagram, sender) => {
      if (nread < 0) dgramOnMessage(nread, fromHandle, datagram, sender);
      else onDatagram(datagram, sender);
    };
  };
  // dgram sets the handle's onmessage when it starts receiving, just before 'listening'.
  socket.once('listening', takeOver);
}

/** Sends on `socket` once it is bound (and connected, for `send`). */
export function datagramSender(socket: dgram.Socket, internals: RuntimeInternals | Error = INTERNALS): DatagramSender {
  if (internals instanceof Error || stateOf(socket, internals).sendBlockList) return new PublicSender(socket);
  return new HandleSender(stateOf(socket, internals), internals.SendWrap);
}

/** dgram's own send, without a callback: a failed send is dropped, as dgram drops it. */
class PublicSender implements DatagramSender {
  readonly #socket: dgram.Socket;

  constructor(socket: dgram.Socket) {
    this.#socket = socket;
  }

  send(datagram: Buffer): void {
    this.#socket.send(datagram);
  }

  sendTo(datagram: Buffer, port: number, address: string): void {
    this.#socket.send(datagram, port, address);
  }
}

/**
 * Sends through the handle with one request object and one buffer list, reused while sends
 * complete at once (the usual case: the kernel takes the datagram); a send the kernel queues keeps
 * them until it completes, so the next send gets new ones. A failed send is dropped, as dgram does
 * without a callback; a closed socket sends nothing.
 */
class HandleSender implements DatagramSender {
  readonly #state: SocketState;
  readonly #SendWrap: new () => object;
  #request: object;
  #buffers: Buffer[];

  constructor(state: SocketState, SendWrap: new () => object) {
    this.#state = state;
    this.#SendWrap = SendWrap;
    this.#request = new SendWrap();
    this.#buffers = [EMPTY];
  }

  send(datagram: Buffer): void {
    const handle = this.#state.handle;
    if (handle === null) return;
    this.#buffers[0] = datagram;
    this.#settle(handle.send(this.#request, this.#buffers, 1, false));
  }

  sendTo(datagram: Buffer, port: number, address: string): void {
    const handle = this.#state.handle;
    if (handle === null) return;
    this.#buffers[0] = datagram;
    this.#settle(handle.send(this.#request, this.#buffers, 1, port, address, false));
  }

  /** `result`: the length + 1 when sent at once, 0 when queued, a negative errno when it failed. */
  #settle(result: number): void {
    if (result !== 0) return;
    // Queued: the request keeps the buffers alive until the kernel has them (dgram does the same).
    (this.#request as { list?: Buffer[] }).list = this.#buffers;
    this.#request = new this.#SendWrap();
    this.#buffers = [EMPTY];
  }
}

const EMPTY = Buffer.alloc(0);
