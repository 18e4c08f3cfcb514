// Joins an accepted client socket and its upstream socket: bytes both ways with backpressure (a
// slow reader pauses the fast writer, so memory per connection stays bounded by the socket
// buffers), half-close carried across, a reset or error on one side ends the other, and an idle
// timeout for the pair.
import type { Socket } from 'node:net';
import type { ReadingPair } from './idle-read-buffers.ts';
import { createReadForwarder, readAcceptedSocketInto, type ReadForwarder } from './socket-reads.ts';

export interface PipeCounters {
  bytesToBackend: number;
  bytesToClient: number;
  /** Resets from the backend once connected. */
  resets: number;
}

/** The `onread` option for the upstream socket: its reads go straight to the client. */
export function upstreamReads(client: Socket, counters: PipeCounters): ReadForwarder {
  return createReadForwarder(client, (n) => (counters.bytesToClient += n));
}

/** `upstream` must have been created with `onread: upstreamForwarder`, made by upstreamReads(client, counters). */
export function joinSockets(
  client: Socket,
  upstream: Socket,
  upstreamForwarder: ReadForwarder,
  counters: PipeCounters,
  idleTimeoutMs: number,
  onClosed: () => void,
): ReadingPair {
  const countToBackend = (n: number) => (counters.bytesToBackend += n);
  let clientReads: ReadForwarder | undefined = createReadForwarder(upstream, countToBackend);
  if (!readAcceptedSocketInto(client, clientReads)) {
    clientReads = undefined;
    client.on('data', (chunk: Buffer) => {
      countToBackend(chunk.length);
      if (!upstream.write(chunk)) client.pause();
    });
  }
  relayFlowControl(client, upstream);
  relayFlowControl(upstream, client);

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
  // Activity in either direction reads or writes the client socket, so its timer covers both ways.
  client.setTimeout(idleTimeoutMs, () => abortBoth());

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
  return { client, clientReads, upstream, upstreamReads: upstreamForwarder };
}

/** Reads from `from` stop when `to` is full (the read callback returned false); this restarts them. */
function relayFlowControl(from: Socket, to: Socket): void {
  to.on('drain', () => from.resume());
  // Half-close: the peer's FIN becomes our FIN on the other side once the bytes before it are out.
  from.on('end', () => to.end());
}
