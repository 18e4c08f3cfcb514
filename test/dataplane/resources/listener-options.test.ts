// TCP_NODELAY set once on the listening socket (src/dataplane/resources/listener-options.ts): the Node
// internal it needs is where this Node keeps it, and accepted sockets inherit the option from the
// kernel (checked with getsockopt from Python where there is one). Should a Node upgrade move the
// handle's setNoDelay, this fails here, by name, rather than the proxy silently paying a
// setsockopt per connection again. Addresses in the file's loopback range.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { describe, it } from 'node:test';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { requireTool } from '../../support/process/required-tool.ts';
import { noDelayOnListener, type ServerWithNoDelay } from '../../../src/dataplane/resources/listener-options.ts';

const python3 = await requireTool('python3');
const addresses = loopbackRange(import.meta.url);

describe('options on the listening socket', () => {
  it('the listening handle of this Node takes TCP_NODELAY, and no accepted socket sets it again', async () => {
    const server = net.createServer({ pauseOnConnect: true });
    server.listen({ host: addresses.ip(1), port: 0 });
    await once(server, 'listening');
    try {
      assert.equal(
        noDelayOnListener(server),
        true,
        `Node ${process.version}: net.Server's _handle has no setNoDelay any more`,
      );
      assert.equal(
        (server as ServerWithNoDelay).noDelay,
        false,
        'accepted sockets must not each set TCP_NODELAY again',
      );
      const accepted = once(server, 'connection');
      const client = net.connect({ host: addresses.ip(1), port: (server.address() as net.AddressInfo).port });
      const [socket] = (await accepted) as [net.Socket];
      socket.destroy();
      client.destroy();
    } finally {
      server.close();
    }
  });

  it('Linux copies TCP_NODELAY from the listening socket to the sockets it accepts', python3, () => {
    const script = `
import socket
listening = socket.socket()
listening.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
listening.bind(('${addresses.ip(1)}', 0))
listening.listen()
client = socket.create_connection(listening.getsockname())
accepted, _ = listening.accept()
print(accepted.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))`;
    const result = spawnSync('python3', ['-c', script], { encoding: 'utf8', timeout: 10_000 });
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.stdout.trim(), '1');
  });
});
