// Free ports: a single port binds once handed out and lies below the ephemeral range; a block's ports all bind, for TCP and
// UDP alike, lie below the ephemeral range, and no two blocks of one process overlap.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';
import { describe, it } from 'node:test';
import { allBind, freePort, freePortBlock } from './free-ports.ts';

async function bindBoth(port: number): Promise<void> {
  const server = net.createServer().listen({ host: '0.0.0.0', port, exclusive: true });
  await once(server, 'listening');
  const socket = dgram.createSocket('udp4');
  socket.bind({ address: '0.0.0.0', port });
  await once(socket, 'listening');
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await new Promise<void>((resolve) => socket.close(() => resolve()));
}

describe('free ports', () => {
  it('freePort hands out a port that binds, below the ephemeral range (where no outgoing connection takes it)', async () => {
    const port = await freePort();
    assert.ok(port >= 10_000 && port < 32_768, `${port} is below the ephemeral range`);
    const udpPort = await freePort('127.0.0.1', 'udp');
    assert.ok(udpPort >= 10_000 && udpPort < 32_768, `${udpPort} is below the ephemeral range`);
    const server = net.createServer().listen({ host: '127.0.0.1', port });
    await once(server, 'listening');
    server.close();
  });

  it('freePortBlock: every port of a block binds, below 32768, and blocks do not overlap', async () => {
    const blocks = [await freePortBlock(20, { udp: true }), await freePortBlock(20, { udp: true })];
    for (const base of blocks) {
      assert.ok(base >= 10_000 && base + 20 <= 32_768, `${base} is below the ephemeral range`);
      for (let port = base; port < base + 20; port++) await bindBoth(port);
    }
    const [a, b] = blocks as [number, number];
    assert.ok(a + 20 <= b || b + 20 <= a, `blocks at ${a} and ${b} do not overlap`);
  });

  it("a probe that meets a port another process holds says it is taken, so the search moves on (it crashed a test file's load)", async () => {
    const base = await freePortBlock(2, { udp: true });
    const held = net.createServer().listen({ host: '0.0.0.0', port: base + 1, exclusive: true });
    await once(held, 'listening');
    const socket = dgram.createSocket('udp4');
    socket.bind({ address: '0.0.0.0', port: base + 1 });
    await once(socket, 'listening');
    try {
      assert.equal(await allBind('0.0.0.0', base, 2, { tcp: true, udp: false }), false, 'TCP taken');
      assert.equal(await allBind('0.0.0.0', base, 2, { tcp: false, udp: true }), false, 'UDP taken');
      assert.equal(await allBind('0.0.0.0', base, 1, { tcp: true, udp: true }), true, 'the free one binds');
    } finally {
      held.close();
      socket.close();
    }
  });
});
