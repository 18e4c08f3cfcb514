// File descriptors: the budget's arithmetic (pure), a UDP flood under `ulimit -n` that must not
// starve a TCP listener or the admin server, and a process out of descriptors behind the
// budget's back, whose EMFILE must not be blamed on the backends.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';
import { DescriptorBudget, TCP_CONNECTION_DESCRIPTORS } from '../../../src/dataplane/resources/descriptor-budget.ts';
import { askName, exchange, startNamedBackend, startUdpEcho, udpAsk } from '../../support/net/backends.ts';
import { freePort } from '../../support/net/free-ports.ts';
import { metricValue } from '../../support/dataplane/test-plane.ts';
import { startServe } from '../../support/process/serve-child.ts';
import { waitFor } from '../../support/wait.ts';

/** How many `count`-descriptor acquisitions `account` gets before the budget says no. */
function takeAll(account: { tryAcquire(count: number): boolean }, count = 1): number {
  let taken = 0;
  while (account.tryAcquire(count)) taken++;
  return taken;
}

describe('descriptor budget (pure)', () => {
  test('one listener: its listening socket counts, the rest is its own', () => {
    const budget = new DescriptorBudget({ capacity: 100, maxReservePerListener: 256 });
    const web = budget.open();
    assert.equal(budget.inUse, 1);
    assert.equal(takeAll(web, TCP_CONNECTION_DESCRIPTORS), 49);
    web.release(TCP_CONNECTION_DESCRIPTORS);
    assert.ok(web.tryAcquire(TCP_CONNECTION_DESCRIPTORS), 'a released connection makes room for the next');
  });

  test('a flood on one listener leaves every other listener its reserve: min(maxReserve, capacity / (2 x listeners))', () => {
    const budget = new DescriptorBudget({ capacity: 100, maxReservePerListener: 256 });
    const [flood, web, dns] = [budget.open(), budget.open(), budget.open()];
    // Reserve 16 each (100 / 6); three listening sockets; the flood may take all but the others' 2 x 16.
    assert.equal(takeAll(flood), 100 - 3 - 32);
    assert.equal(takeAll(web), 16);
    assert.equal(takeAll(dns), 16);
    assert.equal(budget.inUse, 100);
  });

  test('the reserve is capped by maxReservePerListener', () => {
    const budget = new DescriptorBudget({ capacity: 1000, maxReservePerListener: 10 });
    const [flood, web] = [budget.open(), budget.open()];
    assert.equal(takeAll(flood), 1000 - 2 - 10);
    assert.equal(takeAll(web), 10);
  });

  test('a draining listener refuses, frees its reserve, and gives everything back once disposed', () => {
    const budget = new DescriptorBudget({ capacity: 100, maxReservePerListener: 256 });
    const [old, web] = [budget.open(), budget.open()];
    assert.ok(old.tryAcquire(10));
    old.stopReserving();
    assert.equal(old.tryAcquire(1), false, 'a draining listener takes no new connection');
    assert.equal(takeAll(web), 100 - 2 - 10, 'no reserve is kept for a draining listener');
    old.release(10);
    old.dispose();
    assert.equal(budget.inUse, 1 + 88);
    old.release(5); // a late close after dispose changes nothing
    assert.equal(budget.inUse, 89);
  });
});

describe('a UDP flood under ulimit -n 256', { timeout: 60_000 }, () => {
  test('sessions stop at the budget (counted fd_limit, logged once); TCP and /healthz keep answering; sessions are counted, not datagrams', async () => {
    const stable = await startNamedBackend('stable');
    const resolver = await startUdpEcho('resolver');
    const webPort = await freePort();
    const floodPort = await freePort('127.0.0.1', 'udp');
    const serve = await startServe(
      {
        listeners: [
          {
            name: 'web',
            listen: `127.0.0.1:${webPort}`,
            backends: [{ name: 'stable', host: '127.0.0.1', port: stable.port, weight: 1 }],
          },
          {
            name: 'flood',
            protocol: 'udp',
            listen: `127.0.0.1:${floodPort}`,
            idleTimeoutMs: 60_000,
            backends: [{ name: 'resolver', host: '127.0.0.1', port: resolver.port, weight: 1 }],
          },
        ],
      },
      ['--no-watch'],
      { fdLimit: 256 },
    );
    const flows = 300;
    const clients: dgram.Socket[] = [];
    try {
      // 300 flows of one datagram each, from 300 source ports: more than 256 descriptors' worth.
      for (let i = 0; i < flows; i++) {
        const client = dgram.createSocket('udp4');
        clients.push(client);
        client.send(`flow ${i}`, floodPort, '127.0.0.1');
      }
      const metric = async (name: string, labels: Record<string, string>) =>
        metricValue((await serve.get('/metrics')).body, name, labels);
      const dropped = () => metric('canary_l4_udp_dropped_datagrams_total', { listener: 'flood', reason: 'fd_limit' });
      const sessions = () => metric('canary_l4_listener_connections_total', { listener: 'flood' });
      await waitFor(
        async () => ((await dropped()) ?? 0) + ((await sessions()) ?? 0) === flows,
        'every flow to be served or refused',
        10_000,
      );
      assert.deepEqual((await serve.get('/healthz')).status, 200);
      for (let i = 0; i < 20; i++)
        assert.equal(await askName(webPort), 'stable', `TCP connection ${i} starved by the UDP flood`);

      const opened = (await sessions())!;
      assert.ok(opened > 50 && opened < flows, `${opened} sessions opened of ${flows}`);
      assert.equal(
        await metric('canary_l4_active_connections', { listener: 'flood', backend: 'resolver' }),
        opened,
        'the counter counts sessions',
      );
      assert.equal(await metric('canary_l4_connections_refused_total', { listener: 'web', reason: 'fd_limit' }), 0);

      const warnings = serve
        .logs()
        .filter((line) => line.level === 40 && String(line.msg).includes('file descriptors'));
      assert.equal(warnings.length, 1, 'the pressure is logged once, not per datagram');
      assert.equal(warnings[0]!.reason, 'fd_limit');
      assert.ok(
        !serve.logs().some((line) => line.level === 50 || line.msg === 'udp upstream socket error'),
        'an error logged per refused flow',
      );
    } finally {
      for (const client of clients) client.close();
      await serve.stop();
      await Promise.all([stable.close(), resolver.close()]);
    }
  });
});

describe("a process out of descriptors (EMFILE) behind the budget's back", { timeout: 30_000 }, () => {
  test('refusals are counted as local_error; no backend is blamed, marked failed or counted as no_backend', async () => {
    const tcpBackend = await startNamedBackend('a');
    const udpBackend = await startUdpEcho('resolver');
    const script = fileURLToPath(new URL('../../support/dataplane/exhausted-plane.ts', import.meta.url));
    const child = spawn(
      'sh',
      [
        '-c',
        'ulimit -n 200 && exec "$0" "$@"',
        process.execPath,
        script,
        String(tcpBackend.port),
        String(udpBackend.port),
      ],
      {
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
    try {
      const { tcpPort, udpPort } = JSON.parse((await lines.next()).value as string) as {
        tcpPort: number;
        udpPort: number;
      };
      for (let i = 0; i < 3; i++) {
        const { data, error } = await exchange(tcpPort, 'hello');
        assert.equal(data.length, 0);
        assert.equal(error?.code, 'ECONNRESET', 'the client is reset, as for any refusal');
      }
      child.stdin!.write('take-last\n');
      await lines.next();
      assert.deepEqual(await udpAsk(udpPort, 'question', { timeoutMs: 300 }), []);
      child.stdin!.write('report\n');
      const report = JSON.parse((await lines.next()).value as string) as {
        web: Record<string, number>;
        dns: Record<string, number>;
        backends: Record<string, Record<string, number>>;
        healthy: Record<string, boolean>;
      };
      assert.equal(report.web.local_error, 3);
      assert.equal(report.web.no_backend, 0);
      assert.equal(report.dns.local_error, 1);
      const noErrors = { timeout: 0, refused: 0, reset: 0, unreachable: 0, other: 0, connections: 0 };
      assert.deepEqual(report.backends, { a: noErrors, b: noErrors, resolver: noErrors });
      assert.deepEqual(report.healthy, { 'web/a': true, 'web/b': true, 'dns/resolver': true });
    } finally {
      child.kill();
      if (child.exitCode === null) await once(child, 'exit');
      await Promise.all([tcpBackend.close(), udpBackend.close()]);
    }
  });
});
