// The admin server as an attacker or a misconfiguration meets it: loopback unless told otherwise,
// /config can be turned off, and a flood of half-sent requests (slowloris) takes neither the data
// plane's descriptors nor the probes' slots for more than a few seconds.
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';
import { describe, test } from 'node:test';
import { askName, startNamedBackend } from '../support/net/backends.ts';
import { freePort } from '../support/net/free-ports.ts';
import { startServe, type ServeChild } from '../support/process/serve-child.ts';
import { waitFor } from '../support/wait.ts';

const listenerTo = (port: number, backendPort: number) => ({
  listeners: [
    {
      name: 'web',
      listen: `127.0.0.1:${port}`,
      backends: [{ name: 'stable', host: '127.0.0.1', port: backendPort, weight: 1 }],
    },
  ],
});

/** Whether a TCP connection to host:port is accepted. */
function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('admin server: address and endpoints', { timeout: 30_000 }, () => {
  test('serve listens on 127.0.0.1 by default, not on every address', async () => {
    const stable = await startNamedBackend('stable');
    const serve = await startServe(listenerTo(await freePort(), stable.port), [], { adminAddress: 'default' });
    try {
      assert.equal(serve.logs().find((line) => line.msg === 'admin server listening')?.adminAddress, '127.0.0.1');
      assert.equal(await accepts('127.0.0.1', serve.adminPort), true);
      // Another address of this host (all of 127/8 is loopback on Linux) does not reach it.
      assert.equal(await accepts('127.0.0.2', serve.adminPort), false, 'the admin server listens on every address');
    } finally {
      await serve.stop();
      await stable.close();
    }
  });

  test('--admin-address * is every address; --admin-host is its old name', async () => {
    const stable = await startNamedBackend('stable');
    const children: ServeChild[] = [];
    try {
      const everywhere = await startServe(listenerTo(await freePort(), stable.port), [], { adminAddress: '*' });
      children.push(everywhere);
      assert.equal(await accepts('127.0.0.2', everywhere.adminPort), true);
      const oldName = await startServe(listenerTo(await freePort(), stable.port), ['--admin-host', '127.0.0.3'], {
        adminAddress: 'default',
      });
      children.push(oldName);
      assert.equal(oldName.logs().find((line) => line.msg === 'admin server listening')?.adminAddress, '127.0.0.3');
      assert.equal((await oldName.get('/healthz')).status, 200);
    } finally {
      await Promise.all(children.map((child) => child.stop()));
      await stable.close();
    }
  });

  test('--no-config-endpoint: /config answers 404 and shows no backend; the other endpoints answer', async () => {
    const stable = await startNamedBackend('stable');
    const serve = await startServe(listenerTo(await freePort(), stable.port), ['--no-config-endpoint']);
    try {
      const config = await serve.get('/config');
      assert.equal(config.status, 404);
      assert.doesNotMatch(config.body, new RegExp(String(stable.port)));
      assert.equal((await serve.get('/healthz')).status, 200);
      assert.equal((await serve.get('/metrics')).status, 200);
    } finally {
      await serve.stop();
      await stable.close();
    }
  });
});

describe('admin server under a slowloris flood, ulimit -n 256', { timeout: 40_000 }, () => {
  test('300 half-sent requests: the data plane keeps serving, the cap is logged, and the server frees its slots within seconds', async () => {
    const stable = await startNamedBackend('stable');
    const port = await freePort();
    const serve = await startServe(listenerTo(port, stable.port), ['--no-watch'], { fdLimit: 256 });
    const attackers: net.Socket[] = [];
    try {
      for (let i = 0; i < 300; i++) {
        const socket = net.connect({ host: '127.0.0.1', port: serve.adminPort });
        socket.on('error', () => {});
        socket.resume(); // reads the server's answer (a 408), so the socket sees the end
        socket.write('GET /healthz HTTP/1.1\r\nHost: admin\r\n'); // the blank line that ends the headers never comes
        attackers.push(socket);
      }
      await Promise.all(
        attackers.map((socket) => (socket.connecting ? once(socket, 'connect').catch(() => {}) : undefined)),
      );

      for (let i = 0; i < 20; i++)
        assert.equal(await askName(port), 'stable', `connection ${i} through the data plane`);
      await waitFor(
        () => serve.logs().some((line) => line.level === 40 && String(line.msg).startsWith('admin server at its')),
        'the connection cap to be logged',
      );
      // The headers timeout closes the half-sent requests; the probes get in again.
      await waitFor(
        async () => (await serve.get('/healthz').catch(() => undefined))?.status === 200,
        '/healthz to answer again',
        12_000,
      );
      await waitFor(
        () => attackers.every((socket) => socket.destroyed || socket.readableEnded),
        'every half-sent request to be closed',
        12_000,
      );
    } finally {
      for (const socket of attackers) socket.destroy();
      await serve.stop();
      await stable.close();
    }
  });
});
