// Shared by the UDP echo backend and the UDP load client.
import type { SocketOptions } from 'node:dgram';

/** Large socket buffers: loss should come from the proxy, not from the harness's own sockets. */
export const UDP_SOCKET_BUFFER_BYTES = 4 * 1024 * 1024;

/** Every address here is an IPv4 literal: answer at once instead of a deferred lookup per send. */
export const ipLiteralLookup: NonNullable<SocketOptions['lookup']> = (hostname, _options, callback) => {
  callback(null, hostname, 4);
};
