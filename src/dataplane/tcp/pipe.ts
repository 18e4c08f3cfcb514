// Joins an accepted client socket and its upstream socket: bytes both ways with backpressure (a
// slow reader pauses the fast writer, so memory per connection stays bounded by the socket
// buffers), half-close carried across, a reset or error on one side ends the other. The joined pair
// is a LiveFlow: the listener's sweep times it out when idle, and its policies may end it gracefully.
import type { Socket } from 'node:net';
import { clientAddressHash } from '../choice/affinity.ts';
import type { ReadingPair } from '../resources/idle-read-buffers.ts';
import { LiveFlow } from '../flows/live-flow.ts';
import type { BackendRuntime } from '../routing/backend-runtime.ts';
import {
  createReadForwarder,
  discardReads,
  readAcceptedSocketInto,
  teeReads,
  type ReadForwarder,
} from '../resources/socket-reads.ts';
import type { TcpMirrorLeg } from './tcp-mirror-leg.ts';

export interface PipeCounters {
  bytesToBackend: number;
  bytesToClient: number;
  /** Resets from the backend once connected. */
  resets: number;
}

/**
 * After a graceful end has sent the client its FIN, how long the client gets to send its own
 * before the socket is closed anyway. Closing while the client's bytes sit unread would send a
 * reset, which can discard replies the client has not read yet (nginx's lingering_close).
 */
export const LINGER_MS = 5_000;
/**
 * The longest a graceful end takes, from its start: a backend that never closes its side after our
 * FIN (heartbeats keep the idle timeout away), or a client that never takes the rest of the
 * replies, would otherwise hold the connection open, the client's writes unread, for good.
 */
export const GRACEFUL_END_MS = 30_000;

/** The `onread` option for the upstream socket: its reads go straight to the client. */
export function upstreamReads(client: Socket, counters: PipeCounters): ReadForwarder {
  return createReadForwarder(client, (n) => (counters.bytesToClient += n));
}

/** One proxied TCP connection: the client's socket, the backend's, and how each reads. */
export class TcpConnection extends LiveFlow implements ReadingPair {
  readonly client: Socket;
  /** undefined when the client socket reads through 'data' events (no buffer of ours). */
  readonly clientReads: ReadForwarder | undefined;
  readonly upstream: Socket;
  readonly upstreamReads: ReadForwarder;
  #clientHash: number;

  constructor(
    backend: BackendRuntime,
    startedAt: number,
    sockets: { client: Socket; clientReads: ReadForwarder | undefined; upstream: Socket; upstreamReads: ReadForwarder },
    clientHash: number,
  ) {
    super(backend, startedAt);
    this.client = sockets.client;
    this.clientReads = sockets.clientReads;
    this.upstream = sockets.upstream;
    this.upstreamReads = sockets.upstreamReads;
    this.#clientHash = clientHash;
  }

  /** Every byte either way was read by one of the two sockets. */
  override activity(): number {
    return this.client.bytesRead + this.upstream.bytesRead;
  }

  heldReadBytes(): number {
    return (this.clientReads?.heldBytes() ?? 0) + this.upstreamReads.heldBytes();
  }

  releaseReadBuffers(): void {
    this.clientReads?.releaseBuffer(this.client);
    this.upstreamReads.releaseBuffer(this.upstream);
  }

  override expireIdle(): void {
    this.client.destroy();
    this.upstream.destroy();
  }

  clientHash(): number {
    if (this.#clientHash === -1) this.#clientHash = clientAddressHash(this.client.remoteAddress ?? '');
    return this.#clientHash;
  }

  /**
   * Stops reading the client after the current read; what was read goes to the backend, then the
   * backend gets a FIN. Its replies still flow to the client, and its own FIN (the relay's half-close)
   * is the client's: nothing already read in either direction is cut. A client that keeps sending
   * meanwhile sees its connection end, as when a server closes a keep-alive connection. The whole
   * end is bounded by GRACEFUL_END_MS.
   */
  protected endGracefully(): void {
    const { client, upstream } = this;
    if (client.destroyed || upstream.destroyed) return;
    client.pause();
    upstream.end();
    const deadline = setTimeout(() => {
      client.destroy();
      upstream.destroy();
    }, GRACEFUL_END_MS).unref();
    client.once('close', () => clearTimeout(deadline));
    // Once the client has the backend's last byte and FIN (written out, not merely queued), read on,
    // dropping what comes, until the client's FIN; a bounded wait (see LINGER_MS).
    const linger = () => {
      discardReads(client);
      client.resume();
      const timer = setTimeout(() => client.destroy(), LINGER_MS).unref();
      client.once('close', () => clearTimeout(timer));
    };
    const whenClientHasAll = () => (client.writableFinished ? linger() : client.once('finish', linger));
    // The backend may have sent its FIN before the end began: its 'end' is then past.
    if (upstream.readableEnded) whenClientHasAll();
    else upstream.once('end', whenClientHasAll);
  }
}

/** `upstream` must have been created with `onread: upstreamForwarder`, made by upstreamReads(client, counters). */
export function joinSockets(
  client: Socket,
  upstream: Socket,
  upstreamForwarder: ReadForwarder,
  backend: BackendRuntime,
  startedAt: number,
  clientHash: number,
  onClosed: () => void,
  mirror?: TcpMirrorLeg,
): TcpConnection {
  const counters = backend.stats;
  const countToBackend = (n: number) => (counters.bytesToBackend += n);
  const forwarder = createReadForwarder(upstream, countToBackend);
  let clientReads: ReadForwarder | undefined =
    mirror === undefined ? forwarder : teeReads(forwarder, (buffer, bytes) => mirror.copy(buffer, bytes));
  if (!readAcceptedSocketInto(client, clientReads)) {
    clientReads = undefined;
    const toUpstream = (chunk: Buffer) => {
      countToBackend(chunk.length);
      if (!upstream.write(chunk)) client.pause();
    };
    client.on(
      'data',
      mirror === undefined
        ? toUpstream
        : (chunk: Buffer) => {
            mirror.copy(chunk, chunk.length);
            toUpstream(chunk);
          },
    );
  }
  const connection = new TcpConnection(
    backend,
    startedAt,
    { client, clientReads, upstream, upstreamReads: upstreamForwarder },
    clientHash,
  );
  // Once a graceful end stopped the client's reads, a drained upstream must not restart them.
  upstream.on('drain', () => {
    if (!connection.ending) client.resume();
  });
  client.on('drain', () => upstream.resume());
  // Half-close: the peer's FIN becomes our FIN on the other side once the bytes before it are out.
  client.on('end', () => {
    upstream.end();
    mirror?.clientEnded();
  });
  upstream.on('end', () => client.end());

  const abortBoth = (err?: Error) => {
    // A reset is passed on as a reset, so the peer learns the stream broke rather than ended.
    const reset = (err as NodeJS.ErrnoException | undefined)?.code === 'ECONNRESET';
    for (const socket of [client, upstream]) {
      if (socket.destroyed) continue;
      if (reset) socket.resetAndDestroy();
      else socket.destroy();
    }
  };
  client.on('error', abortBoth);
  upstream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'ECONNRESET') counters.resets++;
    abortBoth(err);
  });
  // The idle timeout is the listener's sweep (lifetimes.ts), not a timer per socket.

  // A clean close means both directions of that socket ended, and those ends were passed on, so
  // the other socket closes by itself once its pending bytes are out; errors went through abortBoth.
  // Any other close (a listener's drain deadline destroyed the client) would leave the other
  // socket open with nobody to end it, so it is destroyed too.
  let open = 2;
  const closedOne = (socket: Socket, other: Socket) => () => {
    if (!(socket.readableEnded && socket.writableFinished)) other.destroy();
    if (--open === 0) onClosed();
  };
  client.once('close', closedOne(client, upstream));
  upstream.once('close', closedOne(upstream, client));
  client.resume();
  return connection;
}
