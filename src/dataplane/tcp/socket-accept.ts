// The `net.Socket` accept path of a TCP listener: what the fast path does not do — mirroring, backends
// named by host name, failOnReset and firstByteTimeoutMs — and every accept where the runtime lacks
// the fast path's internals. The client waits paused until its upstream is connected, then the two
// are joined (pipe.ts), with a mirror leg when the flow is mirrored.
import net from 'node:net';
import type { BackendRuntime } from '../routing/backend-runtime.ts';
import type { ListenerSnapshot } from '../routing/routing.ts';
import { joinSockets, upstreamReads } from './pipe.ts';
import { teeReads } from '../resources/socket-reads.ts';
import { TcpMirrorLeg } from './tcp-mirror-leg.ts';
import { clientAddressHash } from '../choice/affinity.ts';
import { TCP_CONNECTION_DESCRIPTORS, type DescriptorAccount } from '../resources/descriptor-budget.ts';
import { openMirrorLeg } from '../routing/mirror-route.ts';
import { connectTimeout, type ConnectAttempts } from './connect-attempts.ts';

export class SocketAccept {
  /** The listener's accepted clients, until they close. */
  readonly #connections: Set<{ destroy(): void }>;
  readonly #descriptors: DescriptorAccount;
  readonly #attempts: ConnectAttempts;

  constructor(connections: Set<{ destroy(): void }>, descriptors: DescriptorAccount, attempts: ConnectAttempts) {
    this.#connections = connections;
    this.#descriptors = descriptors;
    this.#attempts = attempts;
  }

  accept(client: net.Socket, snapshot: ListenerSnapshot): void {
    snapshot.stats.accepted++;
    const descriptors = this.#descriptors;
    if (!descriptors.tryAcquire(TCP_CONNECTION_DESCRIPTORS)) {
      this.#attempts.refuseLocally(() => client.resetAndDestroy(), snapshot, 'fd_limit');
      return;
    }
    this.#connections.add(client);
    client.once('close', () => {
      this.#connections.delete(client);
      descriptors.release(TCP_CONNECTION_DESCRIPTORS);
    });
    // Until joined, a client error (it gave up) just ends the attempt; joinSockets takes over after.
    const ignoreEarlyError = () => {};
    client.on('error', ignoreEarlyError);
    // Only affinity needs the client's address (a getpeername per connection).
    const clientHash = snapshot.config.affinity === 'clientIP' ? clientAddressHash(client.remoteAddress ?? '') : -1;
    this.#connect(client, snapshot, new Set(), clientHash, () => client.off('error', ignoreEarlyError));
  }

  #connect(
    client: net.Socket,
    snapshot: ListenerSnapshot,
    tried: Set<number>,
    clientHash: number,
    joined: () => void,
  ): void {
    if (client.destroyed) return;
    const attempts = this.#attempts;
    const backend = attempts.pick(snapshot, tried, clientHash);
    if (backend === undefined) {
      client.resetAndDestroy();
      return;
    }
    const { config } = snapshot;
    const started = performance.now();
    const mirrorRoute = snapshot.mirror?.take(backend) ? snapshot.mirror : null;
    // The leg opens once the stable is connected, before the stable's first byte can arrive.
    let mirror: TcpMirrorLeg | undefined;
    const plainForwarder = upstreamReads(client, backend.stats);
    const upstreamForwarder =
      mirrorRoute?.config.compare === 'replies'
        ? teeReads(plainForwarder, (buffer, bytes) => mirror?.stableReply(buffer, bytes))
        : plainForwarder;
    const upstream = net.connect({
      host: backend.config.host,
      port: backend.config.port,
      allowHalfOpen: true,
      noDelay: true,
      onread: upstreamForwarder,
    });
    const timer = setTimeout(() => upstream.destroy(connectTimeout(config.connectTimeoutMs)), config.connectTimeoutMs);
    // The client was destroyed (a drain deadline: paused, it cannot notice its peer leaving). A plain
    // destroy brings no 'error' to clear the connect timer, so it is cleared here.
    const abandon = () => {
      clearTimeout(timer);
      upstream.destroy();
    };
    client.once('close', abandon);

    upstream.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      client.off('close', abandon);
      if (client.destroyed) return;
      if (attempts.failed(err, backend, snapshot, () => client.resetAndDestroy()))
        this.#connect(client, snapshot, tried, clientHash, joined);
    });
    upstream.once('connect', () => {
      clearTimeout(timer);
      client.off('close', abandon);
      upstream.removeAllListeners('error');
      attempts.established(backend, started);
      if (config.failOnReset || (config.firstByteTimeoutMs ?? 0) > 0)
        this.#judgeByFirstByte(backend, upstream, snapshot);
      else {
        backend.health.recordSuccess();
        backend.stats.heldOut.succeeded();
      }
      joined();
      if (mirrorRoute !== null)
        mirror = openMirrorLeg(
          mirrorRoute,
          this.#descriptors,
          (release) => new TcpMirrorLeg(mirrorRoute, config.connectTimeoutMs, release),
        );
      const connection = joinSockets(
        client,
        upstream,
        upstreamForwarder,
        backend,
        started,
        clientHash,
        () => {
          attempts.flowClosed(connection, backend, started);
          mirror?.realClosed();
        },
        mirror,
      );
      attempts.joined(connection);
    });
  }

  /**
   * The opt-in passive health past the connect (failOnReset, firstByteTimeoutMs): a backend that
   * accepts is judged by its first byte. A reset before it, or silence past the timeout, is a
   * failure; a connection that closes after the backend sent something is the success that clears
   * the count (counting the connect as one would clear it every time, and maxFails > 1 would never
   * be reached by a backend that accepts and then resets).
   */
  #judgeByFirstByte(backend: BackendRuntime, upstream: net.Socket, snapshot: ListenerSnapshot): void {
    const { config } = snapshot;
    let failed = false;
    const fail = (reason: 'reset' | 'first_byte_timeout', detail: string) => {
      if (failed || upstream.bytesRead > 0) return;
      failed = true;
      backend.stats.failures[reason]++;
      this.#attempts.recordFailure(
        backend,
        snapshot,
        reason === 'reset' ? 'a reset before its first byte' : 'no first byte in time',
        detail,
        reason === 'reset' ? 'reset' : 'connect',
      );
    };
    const timeoutMs = config.firstByteTimeoutMs ?? 0;
    const timer =
      timeoutMs > 0
        ? setTimeout(() => fail('first_byte_timeout', `nothing within ${timeoutMs} ms`), timeoutMs)
        : undefined;
    if (config.failOnReset) {
      upstream.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ECONNRESET' || err.code === 'EPIPE') fail('reset', err.message);
      });
    }
    upstream.once('close', () => {
      clearTimeout(timer);
      if (failed || upstream.bytesRead === 0) return;
      backend.health.recordSuccess();
      backend.stats.heldOut.succeeded();
    });
  }
}
