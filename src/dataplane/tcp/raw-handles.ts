// The runtime's own TCP handles (libuv streams behind `net.Socket`), used directly by the fast
// path of plain TCP pipes (fast-pipe.ts). Why: a proxied short connection costs ~70 µs of user
// time through two `net.Socket`s (stream state machines, event emitters, timers) against ~10 µs
// for nginx; on the bare handles the same work is a read callback and a write per chunk.
//
// These are Node internals (`process.binding('tcp_wrap')` and `'stream_wrap'`, the `onconnection`
// of a listening handle), used as Node's own lib/net.js and lib/internal/stream_base_commons.js use
// them. EVERY use of them lives in this module. RAW_TCP_REQUIREMENTS names each thing it relies on;
// test/dataplane/tcp/fast-path.test.ts fails by that name when a runtime drops or changes one,
// and then RAW_TCP_AVAILABLE is false and every listener takes the `net.Socket` path, as it does
// with --no-tcp-fast-path.
import type net from 'node:net';
import { getSystemErrorMap, getSystemErrorName } from 'node:util';

/** A libuv TCP handle as tcp_wrap exposes it (only what is used here). */
interface TcpHandle {
  onread: ((this: TcpHandle, arrayBuffer: ArrayBuffer | undefined) => Buffer | undefined) | undefined;
  onconnection?: (this: TcpHandle, status: number, client: TcpHandle | undefined) => void;
  readStart(): number;
  readStop(): number;
  useUserBuffer(buffer: Buffer): void;
  writeBuffer(req: WriteRequest, buffer: Buffer): number;
  shutdown(req: ShutdownRequest): number;
  close(callback?: () => void): void;
  reset(callback?: () => void): number;
  connect(req: ConnectRequest, host: string, port: number): number;
  connect6(req: ConnectRequest, host: string, port: number): number;
  getpeername(out: { address?: string }): number;
  setNoDelay(enable: boolean): number;
}

interface WriteRequest {
  handle: TcpHandle;
  oncomplete: (this: WriteRequest, status: number) => void;
  buffer: Buffer | null;
  async: boolean;
  stream: RawStream;
}
interface ShutdownRequest {
  handle: TcpHandle;
  oncomplete: (this: ShutdownRequest, status: number) => void;
  stream: RawStream;
}
interface ConnectRequest {
  oncomplete: (this: ConnectRequest, status: number) => void;
  address: string;
  port: number;
}

type Binding = Record<string, unknown>;
type Constructor<T> = new (...args: unknown[]) => T;

function binding(name: string): Binding | undefined {
  try {
    return (process as unknown as { binding(name: string): Binding }).binding(name);
  } catch {
    return undefined;
  }
}

const tcpWrap = binding('tcp_wrap');
const streamWrap = binding('stream_wrap');
const TCP = tcpWrap?.TCP as (new (type: number) => TcpHandle) | undefined;
const TCPConnectWrap = tcpWrap?.TCPConnectWrap as Constructor<ConnectRequest> | undefined;
const SOCKET_TYPE = (tcpWrap?.constants as Record<string, unknown> | undefined)?.SOCKET;
const WriteWrap = streamWrap?.WriteWrap as Constructor<WriteRequest> | undefined;
const ShutdownWrap = streamWrap?.ShutdownWrap as Constructor<ShutdownRequest> | undefined;
const streamBaseState = streamWrap?.streamBaseState as Int32Array | undefined;
const kReadBytesOrError = streamWrap?.kReadBytesOrError;
const kLastWriteWasAsync = streamWrap?.kLastWriteWasAsync;
/** libuv's end-of-file status, read off the public error map. */
const UV_EOF = [...getSystemErrorMap()].find(([, [name]]) => name === 'EOF')?.[0];
const HANDLE_METHODS = [
  'readStart',
  'readStop',
  'useUserBuffer',
  'writeBuffer',
  'shutdown',
  'close',
  'reset',
  'connect',
  'connect6',
  'getpeername',
  'setNoDelay',
] as const;

function listeningHandle(server: net.Server): TcpHandle | undefined {
  return (server as unknown as { _handle?: TcpHandle | null })._handle ?? undefined;
}

function requirements(): { readonly name: string; readonly present: boolean }[] {
  const prototype = TCP?.prototype as Record<string, unknown> | undefined;
  return [
    { name: "process.binding('tcp_wrap')", present: tcpWrap !== undefined },
    { name: "process.binding('stream_wrap')", present: streamWrap !== undefined },
    { name: 'tcp_wrap.TCP', present: typeof TCP === 'function' },
    { name: 'tcp_wrap.TCPConnectWrap', present: typeof TCPConnectWrap === 'function' },
    { name: 'tcp_wrap.constants.SOCKET', present: typeof SOCKET_TYPE === 'number' },
    { name: 'stream_wrap.WriteWrap', present: typeof WriteWrap === 'function' },
    { name: 'stream_wrap.ShutdownWrap', present: typeof ShutdownWrap === 'function' },
    { name: 'stream_wrap.streamBaseState', present: streamBaseState instanceof Int32Array },
    { name: 'stream_wrap.kReadBytesOrError', present: typeof kReadBytesOrError === 'number' },
    { name: 'stream_wrap.kLastWriteWasAsync', present: typeof kLastWriteWasAsync === 'number' },
    { name: 'the EOF status in util.getSystemErrorMap()', present: typeof UV_EOF === 'number' },
    ...HANDLE_METHODS.map((method) => ({
      name: `TCP.prototype.${method}`,
      present: typeof prototype?.[method] === 'function',
    })),
  ];
}

/**
 * Each internal the fast path relies on, by name, and whether this runtime has it. (One more is
 * looked for on each bound server: its handle's `onconnection`, see takeAccepts.)
 */
export const RAW_TCP_REQUIREMENTS: readonly { readonly name: string; readonly present: boolean }[] = requirements();

/** Whether this runtime offers everything the fast path needs. */
export const RAW_TCP_AVAILABLE: boolean = RAW_TCP_REQUIREMENTS.every((requirement) => requirement.present);

/** The error code of a negative libuv status ('ECONNREFUSED', ...). */
function statusCode(status: number): string {
  return getSystemErrorName(status);
}

/** What a raw stream tells its owner. */
export interface RawStreamEvents {
  /** `bytes` landed in `buffer`; returns the buffer the next read lands in. */
  readonly onData: (bytes: number, buffer: Buffer) => Buffer;
  /** The peer sent its FIN. */
  readonly onEnd: () => void;
  /** A write that was pending (write returned false) is done. */
  readonly onWritten: () => void;
  /** Our FIN was sent (shutdown). */
  readonly onShutdown: () => void;
  /** A read, write or shutdown failed with this code ('ECONNRESET', 'EPIPE', ...). */
  readonly onError: (code: string) => void;
}

/** A pending write's end (one function for all: no closure per write). */
function onWriteComplete(this: WriteRequest, status: number): void {
  this.stream.completed(status, false);
}

function onShutdownComplete(this: ShutdownRequest, status: number): void {
  // ENOTCONN: the peer is gone already, nothing left to send a FIN on (as net.js).
  this.stream.completed(status !== 0 && statusCode(status) === 'ENOTCONN' ? 0 : status, true);
}

/**
 * One TCP socket on its bare handle: reads into buffers the owner gives, one write at a time,
 * shutdown of the write side, close. Not an EventEmitter: the owner's callbacks are called directly.
 */
export class RawStream {
  readonly #handle: TcpHandle;
  readonly #events: RawStreamEvents;
  #reading = false;
  #closed = false;
  /** Where the next read lands. */
  #buffer: Buffer | undefined;

  constructor(handle: TcpHandle, events: RawStreamEvents) {
    this.#handle = handle;
    this.#events = events;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** The peer's address, or '' once closed or when the kernel has none. */
  peerAddress(): string {
    const out: { address?: string } = {};
    return this.#closed || this.#handle.getpeername(out) !== 0 ? '' : (out.address ?? '');
  }

  /** TCP_NODELAY on, where the listening socket could not pass it on. */
  setNoDelay(): void {
    if (!this.#closed) this.#handle.setNoDelay(true);
  }

  /** Reads begin (or resume) into `buffer`, or into where the last read's onData pointed. */
  startReading(buffer?: Buffer): void {
    if (this.#closed || this.#reading) return;
    const handle = this.#handle;
    if (buffer !== undefined) this.readInto(buffer);
    this.#reading = true;
    const err = handle.readStart();
    if (err !== 0) this.#events.onError(statusCode(err));
  }

  /** The next read lands in `buffer` (each call stacks a small listener on the handle until it closes). */
  readInto(buffer: Buffer): void {
    if (this.#closed || buffer === this.#buffer) return;
    if (this.#buffer === undefined) this.#handle.onread = this.#makeOnread();
    this.#buffer = buffer;
    this.#handle.useUserBuffer(buffer);
  }

  stopReading(): void {
    if (this.#closed || !this.#reading) return;
    this.#reading = false;
    this.#handle.readStop();
  }

  #makeOnread(): (this: TcpHandle, arrayBuffer: ArrayBuffer | undefined) => Buffer | undefined {
    const state = streamBaseState!;
    const index = kReadBytesOrError as number;
    const eof = UV_EOF!;
    const events = this.#events;
    // Node's C++ side reads into the buffer this returns from then on (as net.js's onread does).
    return (_arrayBuffer) => {
      const nread = state[index]!;
      if (nread > 0) {
        const current = this.#buffer!;
        const next = events.onData(nread, current);
        if (next === current || this.#closed) return undefined;
        this.#buffer = next;
        return next;
      }
      if (nread === 0) return undefined;
      this.#reading = false;
      if (nread === eof) events.onEnd();
      else events.onError(statusCode(nread));
      return undefined;
    };
  }

  /**
   * Writes `buffer`. Returns true when the kernel took it all at once (the buffer is free again);
   * false when the write is pending: onWritten is called once it completes (the buffer is held until
   * then), never when it failed (onError is) or the stream closed meanwhile.
   */
  write(buffer: Buffer): boolean {
    if (this.#closed) return true;
    const req = new WriteWrap!();
    req.handle = this.#handle;
    req.async = false;
    req.buffer = buffer;
    req.stream = this;
    req.oncomplete = onWriteComplete;
    const err = this.#handle.writeBuffer(req, buffer);
    if (err !== 0) {
      this.#events.onError(statusCode(err));
      return true;
    }
    return streamBaseState![kLastWriteWasAsync as number] === 0;
  }

  /** Sends our FIN once the pending write is out; onShutdown once it is sent. */
  shutdown(): void {
    if (this.#closed) return;
    const req = new ShutdownWrap!();
    req.handle = this.#handle;
    req.stream = this;
    req.oncomplete = onShutdownComplete;
    const err = this.#handle.shutdown(req);
    // As net.js: 1 means it finished at once; ENOTCONN, that the peer is already gone.
    if (err === 1 || (err !== 0 && statusCode(err) === 'ENOTCONN')) this.#events.onShutdown();
    else if (err !== 0) this.#events.onError(statusCode(err));
  }

  /** @internal A pending write or shutdown completed with `status`. */
  completed(status: number, shutdown: boolean): void {
    if (this.#closed) return;
    if (status < 0) this.#events.onError(statusCode(status));
    else if (shutdown) this.#events.onShutdown();
    else this.#events.onWritten();
  }

  /**
   * Closes the socket (a reset when `reset`: the peer learns the stream broke). The descriptor goes
   * at once; no callback is asked for when the handle is freed (each would be one more call into JS).
   */
  close(reset: boolean): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#reading = false;
    const handle = this.#handle;
    if (reset && handle.reset() === 0) return;
    handle.close();
  }
}

/**
 * Takes the accepted connections of a bound `server` on their bare handles: `take` gets each one
 * and returns false to hand it to the server's own accept (a `net.Socket` and its 'connection'
 * event) instead. Returns false, changing nothing, when the server has no handle to take them from.
 */
export function takeAccepts(server: net.Server, take: (handle: TcpHandle) => boolean): boolean {
  const handle = listeningHandle(server);
  const own = handle?.onconnection;
  if (handle === undefined || typeof own !== 'function') return false;
  handle.onconnection = function onconnection(status, client) {
    if (status !== 0 || client === undefined || !take(client)) own.call(this, status, client);
  };
  return true;
}

/** An accepted connection's handle, as takeAccepts gives it. */
export type AcceptedHandle = TcpHandle;

/**
 * Connects a new TCP socket to `host` (an IP address) and `port`, with TCP_NODELAY on. `done` gets
 * the error code, or null and the connected handle. Returns a function that abandons the attempt
 * (closing the socket; `done` is then never called).
 */
export function connectTo(
  host: string,
  port: number,
  done: (code: string | null, handle: TcpHandle) => void,
): () => void {
  const handle = new TCP!(SOCKET_TYPE as number);
  let settled = false;
  const fail = (code: string) => {
    settled = true;
    handle.close();
    done(code, handle);
  };
  const req = new TCPConnectWrap!();
  req.address = host;
  req.port = port;
  req.oncomplete = (status) => {
    if (settled) return;
    if (status < 0) return fail(statusCode(status));
    settled = true;
    handle.setNoDelay(true);
    done(null, handle);
  };
  // An IP address (the caller's check): a colon makes it IPv6, without net.isIPv6's regex per connect.
  const err = host.includes(':') ? handle.connect6(req, host, port) : handle.connect(req, host, port);
  // Failed at once (EMFILE: no socket to be had): told on the next turn, as net does, unless abandoned by then.
  if (err !== 0) queueMicrotask(() => settled || fail(statusCode(err)));
  return () => {
    if (settled) return;
    settled = true;
    handle.close();
  };
}
