// Reads that land in buffers we own and reuse, instead of a fresh 64 KiB allocation per read
// (notes/performance.md, lever 1: +15–40 % bulk throughput, p99 latency 2.2× → 1.3× of nginx).
//
// Node offers this (`onread`) only for sockets it creates for us (`net.connect`). Accepted sockets
// get it here through Node internals: the three symbols behind `onread` and the handle's
// `useUserBuffer`. All of that lives in this module; `USER_BUFFER_READS` says whether it works
// on this Node, a test fails loudly when it stops working, and callers fall back to 'data' events.
import net from 'node:net';

/** 16 KiB cost 25–38 % of bulk throughput against 64 KiB (notes/performance.md, lever 2). */
export const MAX_READ_BYTES = 64 * 1024;
export const MIN_READ_BYTES = 4 * 1024;

/**
 * Every socket's first read lands in this one buffer and is copied out at once, so an idle
 * connection holds no read buffer of its own (10 000 idle connections must stay cheap). A socket
 * that went idle after carrying data is sent back here (releaseReadBuffer).
 */
export const FIRST_READ = Buffer.allocUnsafe(MAX_READ_BYTES);
/**
 * Each release leaves a few dozen bytes of Node's on the socket until it closes (see
 * swapReadBuffer), so a socket is released this many times at most.
 */
export const MAX_RELEASES_PER_SOCKET = 32;

export interface ReadForwarder {
  /** Where the next read goes; Node calls it once at start and after every read. */
  readonly buffer: () => Buffer;
  /** Returns false to stop reading (the destination is full); resume() restarts it. */
  readonly callback: (bytes: number, buffer: Buffer) => boolean;
  /** Bytes of the buffer the next read lands in, when it is this socket's own. */
  readonly heldBytes: () => number;
  /**
   * Lets go of the socket's own read buffer, so the next read lands in the shared one as a new
   * socket's does; for a socket that has been idle a while. `socket` must read through this
   * forwarder. False when there was nothing to release or it cannot be done.
   */
  readonly releaseBuffer: (socket: net.Socket) => boolean;
}

/**
 * Forwards every read to `to`. A buffer is reused when the write that took it finished at once
 * (the kernel copied the bytes); when the write is still queued, the next read gets a new one.
 * A socket's own buffer starts small and doubles each time a read fills it, up to 64 KiB, so
 * request/response traffic stays small and bulk transfers reach full-size reads in a few steps.
 */
export function createReadForwarder(to: net.Socket, count: (bytes: number) => void): ReadForwarder {
  let next = FIRST_READ;
  let releases = 0;
  return {
    heldBytes: () => (next === FIRST_READ ? 0 : next.length),
    releaseBuffer: (socket) => {
      if (next === FIRST_READ || releases >= MAX_RELEASES_PER_SOCKET || !swapReadBuffer(socket, FIRST_READ))
        return false;
      next = FIRST_READ;
      releases++;
      return true;
    },
    buffer: () => next,
    callback: (bytes, buffer) => {
      count(bytes);
      if (buffer === FIRST_READ) {
        const flowing = to.write(Buffer.copyBytesFrom(buffer, 0, bytes));
        next = ownReadBuffer(bytes);
        return flowing;
      }
      const flowing = to.write(buffer.subarray(0, bytes));
      const full = bytes === buffer.length && buffer.length < MAX_READ_BYTES;
      if (full || to.writableLength > 0) next = Buffer.allocUnsafe(full ? 2 * buffer.length : buffer.length);
      return flowing;
    },
  };
}

/** A socket's first buffer of its own, after a first read of `bytes` into FIRST_READ. */
export function ownReadBuffer(bytes: number) {
  return Buffer.allocUnsafe(Math.min(MAX_READ_BYTES, Math.max(MIN_READ_BYTES, 2 * bytes)));
}

/** `forwarder`, with every read also shown to `alsoTo` first (which must copy what it keeps: the buffer is reused). */
export function teeReads(forwarder: ReadForwarder, alsoTo: (buffer: Buffer, bytes: number) => void): ReadForwarder {
  const forward = forwarder.callback;
  return {
    ...forwarder,
    callback: (bytes, buffer) => {
      alsoTo(buffer, bytes);
      return forward(bytes, buffer);
    },
  };
}

interface OnreadSymbols {
  readonly buffer: symbol;
  readonly callback: symbol;
  readonly generator: symbol;
}

function findOnreadSymbols(): OnreadSymbols | undefined {
  const probe = new net.Socket({ onread: { buffer: () => FIRST_READ, callback: () => true } });
  const byName = new Map(Object.getOwnPropertySymbols(probe).map((s) => [s.description, s]));
  probe.destroy();
  const buffer = byName.get('kBuffer');
  const callback = byName.get('kBufferCb');
  const generator = byName.get('kBufferGen');
  return buffer && callback && generator ? { buffer, callback, generator } : undefined;
}

const SYMBOLS = findOnreadSymbols();

type HandleWithUserBuffer = { useUserBuffer?: (buffer: Buffer) => void; reading?: boolean };

/** Whether accepted sockets can read into our buffers on this Node. */
export const USER_BUFFER_READS: boolean = SYMBOLS !== undefined;

/**
 * Makes an accepted socket read through `forwarder`, as `net.connect({ onread })` would. It must
 * not be reading yet (the server uses pauseOnConnect). Returns false, changing nothing, where the
 * internals are missing; the caller then forwards 'data' events.
 */
export function readAcceptedSocketInto(socket: net.Socket, forwarder: ReadForwarder): boolean {
  const handle = (socket as unknown as { _handle?: HandleWithUserBuffer | null })._handle;
  if (SYMBOLS === undefined || typeof handle?.useUserBuffer !== 'function' || handle.reading) return false;
  const target = socket as unknown as Record<symbol, unknown>;
  target[SYMBOLS.generator] = forwarder.buffer;
  target[SYMBOLS.callback] = forwarder.callback;
  return swapReadBuffer(socket, forwarder.buffer());
}

/**
 * Makes `buffer` the one the socket's next read lands in. Node changes it itself only after a
 * read; `useUserBuffer` stacks a new read listener on the handle (the one below is never used
 * again, and all are freed with the socket).
 */
function swapReadBuffer(socket: net.Socket, buffer: Buffer): boolean {
  const handle = (socket as unknown as { _handle?: HandleWithUserBuffer | null })._handle;
  if (SYMBOLS === undefined || typeof handle?.useUserBuffer !== 'function') return false;
  (socket as unknown as Record<symbol, unknown>)[SYMBOLS.buffer] = buffer; // as Node's own onread setup leaves it
  handle.useUserBuffer(buffer);
  return true;
}

const discard = (): boolean => true;

/**
 * From now on the socket's reads are dropped rather than forwarded (a connection ending gracefully
 * waits for its client's FIN). `socket` reads either through a forwarder (onread) or 'data' events.
 */
export function discardReads(socket: net.Socket): void {
  if (SYMBOLS !== undefined && typeof (socket as unknown as Record<symbol, unknown>)[SYMBOLS.callback] === 'function') {
    (socket as unknown as Record<symbol, unknown>)[SYMBOLS.callback] = discard;
  } else {
    socket.removeAllListeners('data');
    socket.on('data', discard);
  }
}
