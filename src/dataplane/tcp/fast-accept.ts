// The fast accept path of a TCP listener: accepts taken on their bare handles (raw-handles.ts),
// refused here at maxConnections, and joined to the upstream without `net.Socket` (fast-pipe.ts).
// The connect's timeout, failover and passive health are the `net.Socket` path's (connect-attempts.ts).
import type { ListenerSnapshot } from '../routing/routing.ts';
import { clientAddressHash } from '../choice/affinity.ts';
import { TCP_CONNECTION_DESCRIPTORS, type DescriptorAccount } from '../resources/descriptor-budget.ts';
import { connectTo, type AcceptedHandle } from './raw-handles.ts';
import { FastLeg, FastTcpConnection } from './fast-pipe.ts';
import { connectTimeout, type ConnectAttempts } from './connect-attempts.ts';

export class FastAccept {
  /** The listener's accepted clients, until they close. */
  readonly #connections: Set<{ destroy(): void }>;
  readonly #descriptors: DescriptorAccount;
  readonly #attempts: ConnectAttempts;
  /** Accepted sockets inherit TCP_NODELAY from the listening one (noDelayOnListener). */
  noDelayInherited = true;

  constructor(connections: Set<{ destroy(): void }>, descriptors: DescriptorAccount, attempts: ConnectAttempts) {
    this.#connections = connections;
    this.#descriptors = descriptors;
    this.#attempts = attempts;
  }

  /**
   * An accepted connection's bare handle: refused at the cap, joined when `fast` (the snapshot fits
   * the fast path), or left to net (false).
   */
  take(handle: AcceptedHandle, snapshot: ListenerSnapshot, fast: boolean): boolean {
    const cap = snapshot.config.maxConnections;
    if (cap > 0 && this.#connections.size >= cap) {
      snapshot.stats.refused.max_connections++;
      new FastLeg(handle).close(false);
      return true;
    }
    if (!fast) return false;
    this.#accept(new FastLeg(handle), snapshot);
    return true;
  }

  #accept(client: FastLeg, snapshot: ListenerSnapshot): void {
    snapshot.stats.accepted++;
    const descriptors = this.#descriptors;
    if (!descriptors.tryAcquire(TCP_CONNECTION_DESCRIPTORS)) {
      this.#attempts.refuseLocally(() => client.close(true), snapshot, 'fd_limit');
      return;
    }
    if (!this.noDelayInherited) client.stream.setNoDelay();
    this.#connections.add(client);
    client.onClosed = () => {
      this.#connections.delete(client);
      descriptors.release(TCP_CONNECTION_DESCRIPTORS);
    };
    const clientHash = snapshot.config.affinity === 'clientIP' ? clientAddressHash(client.stream.peerAddress()) : -1;
    this.#connect(client, snapshot, new Set(), clientHash);
  }

  #connect(client: FastLeg, snapshot: ListenerSnapshot, tried: Set<number>, clientHash: number): void {
    if (client.closed) return;
    const attempts = this.#attempts;
    const backend = attempts.pick(snapshot, tried, clientHash);
    if (backend === undefined) return client.close(true);
    const { host, port } = backend.config;
    const timeoutMs = snapshot.config.connectTimeoutMs;
    const started = performance.now();
    const failed = (err: NodeJS.ErrnoException) => {
      client.abandon = undefined;
      if (attempts.failed(err, backend, snapshot, () => client.close(true)))
        this.#connect(client, snapshot, tried, clientHash);
    };
    const timer = setTimeout(() => {
      abandon();
      failed(connectTimeout(timeoutMs));
    }, timeoutMs);
    const abandon = connectTo(host, port, (code, handle) => {
      clearTimeout(timer);
      if (code !== null) return failed(Object.assign(new Error(`connect ${code} ${host}:${port}`), { code }));
      client.abandon = undefined;
      attempts.established(backend, started);
      backend.health.recordSuccess();
      backend.stats.heldOut.succeeded();
      const connection: FastTcpConnection = new FastTcpConnection(
        backend,
        started,
        { client, upstream: new FastLeg(handle) },
        clientHash,
        () => attempts.flowClosed(connection, backend, started),
      );
      attempts.joined(connection);
    });
    // The client went (a drain deadline) while connecting: the attempt goes with it.
    client.abandon = () => {
      clearTimeout(timer);
      abandon();
    };
  }
}
