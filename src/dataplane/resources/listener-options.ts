// Socket options set once on a listening socket, where the kernel copies them to every socket it
// accepts (Linux does for TCP_NODELAY), instead of one setsockopt per accepted connection. Node has
// no public API for options on a listening socket, so this goes through the server's handle (an
// internal, kept here alone): where the handle lacks it, the server sets TCP_NODELAY per
// connection as before, and test/dataplane/resources/listener-options.test.ts fails loudly.
import type net from 'node:net';

type HandleWithNoDelay = { setNoDelay?: (enable: boolean) => number };
/** net.Server keeps its createServer({ noDelay }) here and reads it for each accepted socket. */
export type ServerWithNoDelay = net.Server & { noDelay: boolean };

/**
 * Turns TCP_NODELAY on for the listening socket of a bound `server`, so accepted sockets inherit it
 * (notes: a setsockopt less per connection). Returns false, and makes the server set it on each
 * accepted socket instead, where Node's handle offers no way.
 */
export function noDelayOnListener(server: net.Server): boolean {
  const handle = (server as unknown as { _handle?: HandleWithNoDelay | null })._handle;
  if (typeof handle?.setNoDelay === 'function' && handle.setNoDelay(true) === 0) return true;
  (server as ServerWithNoDelay).noDelay = true;
  return false;
}
