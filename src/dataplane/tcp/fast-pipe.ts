// The fast path's pipe: a client and its upstream joined on their bare TCP handles (raw-handles.ts),
// with what pipe.ts guarantees on `net.Socket`s. Backpressure: at most MAX_PENDING_WRITES writes
// in flight per direction; at that many the reading side stops until the oldest is out, so memory
// per connection stays two read buffers a direction plus the kernel's socket buffers. Half-close: a FIN read on one side becomes our FIN
// on the other once the bytes before it are out; the other direction keeps flowing. A reset or
// error on one side ends the other (a reset as a reset). The pair is a LiveFlow, timed out and
// ended gracefully by its listener's policies as pipe.ts's is.
import { clientAddressHash } from '../choice/affinity.ts';
import type { ReadingPair } from '../resources/idle-read-buffers.ts';
import { FIRST_READ, MAX_READ_BYTES, MAX_RELEASES_PER_SOCKET, ownReadBuffer } from '../resources/socket-reads.ts';
import { LiveFlow } from '../flows/live-flow.ts';
import type { BackendRuntime } from '../routing/backend-runtime.ts';
import { GRACEFUL_END_MS, LINGER_MS, type PipeCounters } from './pipe.ts';
import { RawStream, type AcceptedHandle, type RawStreamEvents } from './raw-handles.ts';

const ignore = (): void => {};

/**
 * Writes in flight into one side before the other stops reading. Two: the next read goes on into
 * the second buffer while the first is written out (one alone left the socket idle between a
 * write's end and the next read).
 */
const MAX_PENDING_WRITES = 2;

/**
 * One side of a proxied connection on its bare handle. Its reads go to the other side; the
 * accepted client's exists from accept on (not reading until joined), the upstream's once connected.
 */
export class FastLeg implements RawStreamEvents {
  readonly stream: RawStream;
  /** Set when the connection is joined. */
  pipe: FastTcpConnection | undefined;
  bytesRead = 0;
  /** Where the next read lands: the shared buffer until a second read, then one of its own. */
  next: Buffer = FIRST_READ;
  /** The other buffer of its own, once a write held one: reads alternate between the two. */
  spare: Buffer | undefined;
  /** Reads so far, up to 2 (whether it earned a buffer of its own). */
  reads = 0;
  releases = 0;
  /** The peer's FIN was read. */
  readEnded = false;
  /** Our FIN was asked for, and then sent. */
  shutdownAsked = false;
  writeShut = false;
  /** Writes into this side in flight (at MAX_PENDING_WRITES the other side is not reading). */
  pendingWrites = 0;
  /** A graceful end stopped this side's reads; a finished write must not restart them. */
  held = false;
  /** Reads are dropped (a graceful end waits for the client's FIN). */
  discarding = false;
  /** Called once the socket is closed; the listener's bookkeeping. */
  onClosed: () => void = ignore;
  /** While connecting: gives up the upstream attempt. */
  abandon: (() => void) | undefined;

  constructor(handle: AcceptedHandle) {
    this.stream = new RawStream(handle, this);
  }

  get closed(): boolean {
    return this.stream.closed;
  }

  onData(bytes: number, buffer: Buffer): Buffer {
    this.bytesRead += bytes;
    return this.pipe === undefined || this.discarding ? buffer : this.pipe.forward(this, bytes, buffer);
  }

  onEnd(): void {
    this.readEnded = true;
    this.pipe?.ended(this);
  }

  onError(code: string): void {
    if (this.pipe === undefined) this.close(false);
    else this.pipe.failed(this, code);
  }

  onWritten(): void {
    this.pendingWrites--;
    this.pipe?.written(this);
  }

  onShutdown(): void {
    this.writeShut = true;
    this.pipe?.shutDown(this);
  }

  /** Sends our FIN once what is queued is out (once). */
  shutdown(): void {
    if (this.shutdownAsked || this.closed) return;
    this.shutdownAsked = true;
    this.stream.shutdown();
  }

  /** Closes the socket, at once (a reset when `reset`). */
  close(reset: boolean): void {
    if (this.closed) return;
    this.abandon?.();
    this.stream.close(reset);
    this.onClosed();
    this.pipe?.closed(this);
  }

  /** The Drain's and the idle timeout's way out: the whole connection goes. */
  destroy(): void {
    if (this.pipe === undefined) this.close(false);
    else this.pipe.destroy();
  }
}

/** One proxied TCP connection on the fast path. */
export class FastTcpConnection extends LiveFlow implements ReadingPair {
  readonly client: FastLeg;
  readonly upstream: FastLeg;
  readonly #counters: PipeCounters;
  readonly #onClosed: () => void;
  #clientHash: number;
  #open = 2;
  #lingering = false;
  /** Set when an error ends both sides: whether they go with a reset. */
  #reset = false;

  /** Joins the two legs and starts reading both; `onClosed` once both sockets are closed. */
  constructor(
    backend: BackendRuntime,
    startedAt: number,
    legs: { client: FastLeg; upstream: FastLeg },
    clientHash: number,
    onClosed: () => void,
  ) {
    super(backend, startedAt);
    this.client = legs.client;
    this.upstream = legs.upstream;
    this.#counters = backend.stats;
    this.#clientHash = clientHash;
    this.#onClosed = onClosed;
    this.client.pipe = this;
    this.upstream.pipe = this;
    this.upstream.stream.startReading(this.upstream.next);
    this.client.stream.startReading(this.client.next);
  }

  override activity(): number {
    return this.client.bytesRead + this.upstream.bytesRead;
  }

  override expireIdle(): void {
    this.destroy();
  }

  clientHash(): number {
    if (this.#clientHash === -1) this.#clientHash = clientAddressHash(this.client.stream.peerAddress());
    return this.#clientHash;
  }

  heldReadBytes(): number {
    return heldBytes(this.client) + heldBytes(this.upstream);
  }

  releaseReadBuffers(): void {
    releaseBuffer(this.client);
    releaseBuffer(this.upstream);
  }

  destroy(): void {
    this.client.close(false);
    this.upstream.close(false);
  }

  /** `bytes` read by `from` into `buffer` go to the other side; returns where its next read lands. */
  forward(from: FastLeg, bytes: number, buffer: Buffer): Buffer {
    const to = from === this.client ? this.upstream : this.client;
    if (from === this.client) this.#counters.bytesToBackend += bytes;
    else this.#counters.bytesToClient += bytes;
    if (buffer === FIRST_READ) {
      // The shared buffer is the next read's, anyone's: what was read is copied out at once.
      if (!to.stream.write(Buffer.copyBytesFrom(buffer, 0, bytes))) this.#pending(from, to);
      // A side that reads more than once (not a one-shot request or reply) gets a buffer of its own.
      if (from.reads++ > 0) from.next = ownReadBuffer(bytes);
      return from.next;
    }
    // A full read asks for a bigger buffer.
    const grow = bytes === buffer.length && buffer.length < MAX_READ_BYTES;
    if (to.stream.write(bytes === buffer.length ? buffer : buffer.subarray(0, bytes))) {
      if (grow) from.next = Buffer.allocUnsafe(2 * buffer.length);
      return from.next;
    }
    // The buffer stays with its write; the next read goes to the other one. (At MAX_PENDING_WRITES
    // that one is the oldest write's: reads resume once it is out, in order, and it is free.)
    from.next = from.spare ?? Buffer.allocUnsafe(grow ? 2 * buffer.length : buffer.length);
    from.spare = buffer;
    this.#pending(from, to);
    return from.next;
  }

  #pending(from: FastLeg, to: FastLeg): void {
    if (++to.pendingWrites >= MAX_PENDING_WRITES) from.stream.stopReading();
  }

  /** A write into `to` that was pending is out: the side it came from reads again (if it had stopped). */
  written(to: FastLeg): void {
    const from = to === this.client ? this.upstream : this.client;
    if (to.pendingWrites < MAX_PENDING_WRITES && !from.readEnded && !from.held) from.stream.startReading();
  }

  /** `leg` read its peer's FIN: ours goes to the other side once the bytes before it are out. */
  ended(leg: FastLeg): void {
    if (leg.discarding) return this.#closeIfDone(leg);
    const other = leg === this.client ? this.upstream : this.client;
    other.shutdown();
    this.#closeIfDone(leg);
    if (leg === this.upstream) this.#lingerWhenClientHasAll();
  }

  /** `leg`'s FIN was sent. */
  shutDown(leg: FastLeg): void {
    this.#closeIfDone(leg);
    if (leg === this.client) this.#lingerWhenClientHasAll();
  }

  /** A read, write or shutdown of `leg` failed: both sides go (a reset passed on as a reset). */
  failed(leg: FastLeg, code: string): void {
    if (leg === this.upstream && code === 'ECONNRESET') this.#counters.resets++;
    this.#reset = code === 'ECONNRESET';
    this.client.close(this.#reset);
    this.upstream.close(this.#reset);
  }

  /**
   * `leg` was closed. A clean close (both of its directions ended, and those ends passed on) leaves
   * the other side to close by itself once its pending bytes are out; any other (a drain deadline)
   * would leave it open with nobody to end it, so it goes too.
   */
  closed(leg: FastLeg): void {
    if (!(leg.readEnded && leg.writeShut)) (leg === this.client ? this.upstream : this.client).close(this.#reset);
    if (--this.#open === 0) this.#onClosed();
  }

  #closeIfDone(leg: FastLeg): void {
    if (leg.readEnded && leg.writeShut) leg.close(false);
  }

  /**
   * As pipe.ts: stops reading the client; the backend gets what was read, then a FIN; its replies
   * and its FIN still reach the client. Once the client has them all (written out), the client's
   * reads are dropped until its FIN, for at most LINGER_MS; the whole end within GRACEFUL_END_MS.
   */
  protected endGracefully(): void {
    const { client, upstream } = this;
    if (client.closed || upstream.closed) return;
    client.held = true;
    client.stream.stopReading();
    upstream.shutdown();
    const deadline = setTimeout(() => this.destroy(), GRACEFUL_END_MS).unref();
    const onClientClosed = client.onClosed;
    client.onClosed = () => {
      clearTimeout(deadline);
      onClientClosed();
    };
    this.#lingerWhenClientHasAll();
  }

  /** During a graceful end, once the backend's FIN was read and relayed (sent, not merely queued). */
  #lingerWhenClientHasAll(): void {
    const { client } = this;
    if (!this.ending || this.#lingering || !this.upstream.readEnded || !client.writeShut || client.closed) return;
    this.#lingering = true;
    client.discarding = true;
    client.held = false;
    if (client.readEnded) return this.#closeIfDone(client);
    client.stream.startReading();
    const timer = setTimeout(() => client.close(false), LINGER_MS).unref();
    const onClientClosed = client.onClosed;
    client.onClosed = () => {
      clearTimeout(timer);
      onClientClosed();
    };
  }
}

function heldBytes(leg: FastLeg): number {
  return (leg.next === FIRST_READ ? 0 : leg.next.length) + (leg.spare?.length ?? 0);
}

/** An idle side's own buffers go; its next read lands in the shared one (a bounded number of times: each stacks a listener on the handle). */
function releaseBuffer(leg: FastLeg): void {
  if (leg.next === FIRST_READ || leg.releases >= MAX_RELEASES_PER_SOCKET || leg.closed) return;
  leg.releases++;
  leg.next = FIRST_READ;
  leg.spare = undefined;
  leg.stream.readInto(FIRST_READ);
}
