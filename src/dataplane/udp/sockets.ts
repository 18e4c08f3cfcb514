// How a UDP listener's dgram sockets are made: destinations that are IP literals answered at once
// rather than looked up, and receive buffers sized for replies that queue while the loop is busy.
import dgram from 'node:dgram';
import net from 'node:net';
import dns from 'node:dns';

/** Capped by net.core.rmem_max (4 MiB here; 208 KiB on a stock kernel); a limit, not an allocation. */
export const RECEIVE_BUFFER_BYTES = 4 * 1024 * 1024;

/**
 * dgram looks up every destination, even an IP literal, and by default answers on a later tick.
 * Answering IP literals at once saves a deferred callback per connect, and per datagram where
 * datagram-handle.ts falls back to dgram's own send.
 */
export const immediateLookup = ((
  hostname: string,
  options: dns.LookupOptions | number,
  callback: (err: Error | null, address: string, family: number) => void,
) => {
  const family = net.isIP(hostname);
  if (family !== 0) return callback(null, hostname, family);
  dns.lookup(hostname, { family: typeof options === 'number' ? options : (options.family ?? 0) }, callback);
}) as unknown as NonNullable<dgram.SocketOptions['lookup']>;

/** A new unconnected socket to `host`: a session's upstream, or a mirror leg's. */
export function upstreamSocket(host: string): dgram.Socket {
  return dgram.createSocket({
    type: net.isIPv6(host) ? 'udp6' : 'udp4',
    lookup: immediateLookup,
    // Replies queue here while the event loop is busy (a GC pause, a burst from other flows):
    // the default ~200 KiB holds a few milliseconds at 40 000 replies/s, then drops them.
    recvBufferSize: RECEIVE_BUFFER_BYTES,
  });
}
