// How a connection ended by maxConnectionAgeMs finishes (TcpConnection.endGracefully): when the
// backend had closed its side before (through the proxy, addresses in the file's loopback range), and, on stand-in
// sockets with mocked timers, when the client has not taken the rest of the reply by the end of the
// linger and when the backend never closes its side at all.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import net from 'node:net';
import { Duplex } from 'node:stream';
import { after, afterEach, describe, mock, test } from 'node:test';
import { BackendHealth } from '../../../src/dataplane/choice/passive-health.ts';
import type { ReadForwarder } from '../../../src/dataplane/resources/socket-reads.ts';
import { BackendStats } from '../../../src/dataplane/stats/stats.ts';
import { TcpConnection } from '../../../src/dataplane/tcp/pipe.ts';

import { applyOnFreePort, createPlane } from '../../support/dataplane/test-plane.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { waitFor } from '../../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const HOST = addresses.ip(1);

/** A backend on its own port; `onConnection` is how it treats each connection. */
async function backendServer(onConnection: (socket: net.Socket) => void): Promise<{ port: number; close: () => void }> {
  const server = net.createServer({ allowHalfOpen: true }, onConnection);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { port: (server.address() as net.AddressInfo).port, close: () => server.close() };
}

describe('a connection ended by max age', { timeout: 60_000 }, () => {
  const plane = createPlane();
  const closers: (() => void)[] = [];
  after(async () => {
    await plane.close();
    for (const close of closers) close();
  });

  /** A listener of its own per test (`name`), so each test's counters start at zero. */
  async function proxyTo(name: string, backendPort: number, extra: Record<string, unknown>): Promise<number> {
    return applyOnFreePort(
      plane,
      (port) => ({
        listeners: [
          {
            name,
            listen: `${HOST}:${port}`,
            ...extra,
            backends: [{ name: 'b', host: '127.0.0.1', port: backendPort, weight: 1 }],
          },
        ],
      }),
      HOST,
    );
  }

  test("after the backend closed its side, the client's own FIN closes it at once", async () => {
    const backend = await backendServer((socket) => {
      socket.end('hello');
      socket.resume();
    });
    closers.push(backend.close);
    const port = await proxyTo('half-closed', backend.port, { maxConnectionAgeMs: 200 });
    const client = net.connect({ host: HOST, port, allowHalfOpen: true });
    let received = '';
    client.on('data', (chunk: Buffer) => (received += chunk.toString()));
    await once(client, 'end');
    await waitFor(() => plane.backend('half-closed', 'b').ended.max_age === 1, 'the max-age end', 3_000);
    assert.equal(received, 'hello');
    const closed = once(client, 'close');
    client.end();
    await closed;
    await waitFor(() => plane.backend('half-closed', 'b').active === 0, 'the proxy to let the connection go', 1_000);
  });
});

/** A socket stand-in whose writes stay queued until `flush()`: a client that reads nothing meanwhile. */
class StalledClient extends Duplex {
  readonly #held: (() => void)[] = [];
  override _read(): void {}
  override _write(_chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.#held.push(done);
  }
  flush(): void {
    for (const done of this.#held.splice(0)) done();
  }
}

/** A backend socket stand-in: takes writes, and `finish()` is its FIN. */
class Upstream extends Duplex {
  override _read(): void {}
  override _write(_chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    done();
  }
  finish(): void {
    this.push(null);
  }
}

describe('the end of a graceful end', () => {
  /** A connection over the stand-ins, the backend's FIN relayed to the client as joinSockets does. */
  function connection(): { client: StalledClient; upstream: Upstream; flow: TcpConnection } {
    const client = new StalledClient();
    const upstream = new Upstream();
    upstream.on('end', () => client.end());
    upstream.resume(); // a socket's reads flow (onread): its FIN is seen as soon as it comes
    const backend = {
      config: { name: 'b', host: '127.0.0.1', port: 1, weight: 1 },
      health: new BackendHealth(),
      stats: new BackendStats(),
    };
    const sockets = {
      client: client as unknown as net.Socket,
      clientReads: undefined,
      upstream: upstream as unknown as net.Socket,
      upstreamReads: {} as ReadForwarder,
    };
    return { client, upstream, flow: new TcpConnection(backend, 0, sockets, -1) };
  }
  const settle = () => new Promise((resolve) => setImmediate(resolve));
  afterEach(() => mock.timers.reset());

  test('the linger starts once the client has the whole reply and the FIN, not when the backend sent them', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const { client, upstream, flow } = connection();
    client.write(Buffer.alloc(10_000)); // the end of the reply, still queued for the client
    flow.end('max_age');
    upstream.finish();
    await settle();
    mock.timers.tick(6_000);
    assert.equal(client.destroyed, false, "cut 5 s after the backend's FIN, the queued reply would be lost");
    client.flush();
    await settle();
    mock.timers.tick(4_999);
    assert.equal(client.destroyed, false);
    mock.timers.tick(1);
    assert.equal(client.destroyed, true, 'a client that never sends its FIN is closed 5 s after it had everything');
    // Its 'close' clears the end's deadline: let that happen while the timers are still mocked.
    await settle();
  });

  test('a backend that never closes its side: both sockets go 30 s after the end began', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const { client, upstream, flow } = connection();
    flow.end('max_age');
    await settle();
    mock.timers.tick(29_999);
    assert.equal(client.destroyed || upstream.destroyed, false, 'it may still be answering');
    mock.timers.tick(1);
    assert.deepEqual([client.destroyed, upstream.destroyed], [true, true]);
  });
});
