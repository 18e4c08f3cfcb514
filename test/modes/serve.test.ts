// `canary-l4 serve` as a user runs it: a child process, a config file, signals. Bad input exits
// non-zero with the field path; SIGHUP and file changes reload, keeping the old config when the
// new one is invalid or cannot bind; --weight changes the split; SIGTERM drains a live transfer.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdtempSync, openSync, rmSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import {
  askName,
  countBy,
  exchange,
  randomPayload,
  runConcurrently,
  sha256,
  startNamedBackend,
  startTcpBackend,
  type TcpBackend,
} from '../support/net/backends.ts';
import { freePort } from '../support/net/free-ports.ts';
import { metricValue } from '../support/dataplane/test-plane.ts';
import {
  runCli,
  runServeExpectingExit,
  spawnServe,
  startServe,
  untilReady,
  type ServeChild,
} from '../support/process/serve-child.ts';
import { afterDelivery } from '../support/process/signal-delivery.ts';
import { sleep, waitFor } from '../support/wait.ts';

const MiB = 1024 * 1024;

function web(port: number, stablePort: number, canaryPort: number, stableWeight: number, canaryWeight: number) {
  return {
    name: 'web',
    protocol: 'tcp',
    listen: `127.0.0.1:${port}`,
    backends: [
      { name: 'stable', host: '127.0.0.1', port: stablePort, weight: stableWeight },
      { name: 'canary', host: '127.0.0.1', port: canaryPort, weight: canaryWeight },
    ],
  };
}

async function names(port: number, n: number): Promise<Record<string, number>> {
  return countBy(await runConcurrently(n, 10, () => askName(port)));
}

describe('serve: bad input at startup', { timeout: 60_000 }, () => {
  test('an invalid config exits 2 with one line per problem, each naming the field path', async () => {
    const { exit, stderr, stdout } = await runServeExpectingExit(`
listeners:
  - name: web
    listen: 18080
    backends:
      - { name: stable, host: 127.0.0.1, port: 8081, weight: 90 }
      - { name: canary, host: 127.0.0.1, port: 8082, weight: 150 }
    idleTimeoutMS: 1000
`);
    assert.equal(exit.code, 2, stderr);
    const lines = stderr.trim().split('\n');
    assert.ok(
      lines.some((line) =>
        /^canary-l4: .*lb\.yaml: listeners\[0\]\.backends\[1\]\.weight: must be an integer 0-100, got 150$/.test(line),
      ),
      stderr,
    );
    assert.ok(
      lines.some((line) => /listeners\[0\]\.idleTimeoutMS: unknown key, did you mean "idleTimeoutMs"\?/.test(line)),
      stderr,
    );
    assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace');
    assert.doesNotMatch(stdout, /"msg":"serving"/);
  });

  test('a missing config file exits 2 naming the file', async () => {
    const { exit, stderr } = await (await import('../support/process/serve-child.ts')).runCli([
      'serve',
      '--config',
      '/nonexistent/canary-l4/lb.yaml',
      '--admin-port',
      '0',
      '--admin-address',
      '127.0.0.1',
    ]);
    assert.equal(exit.code, 2);
    assert.match(stderr, /\/nonexistent\/canary-l4\/lb\.yaml: cannot read the file \(ENOENT\)/);
  });

  test('a --weight naming an unknown backend exits 2 naming the flag', async () => {
    const { exit, stderr } = await runServeExpectingExit({ listeners: [web(18081, 1, 2, 90, 10)] }, [
      '--weight',
      'web:canry=5',
    ]);
    assert.equal(exit.code, 2);
    assert.match(
      stderr,
      /--weight "web:canry=5": listener "web" has no backend "canry"; the backends are stable, canary/,
    );
  });

  test('an empty or repeated --admin-address exits 2 naming the flag, rather than binding every address', async () => {
    const empty = await runCli(['serve', '--config', '/dev/null', '--admin-address', '']);
    assert.equal(empty.exit.code, 2);
    assert.match(
      empty.stderr,
      /^canary-l4: --admin-address: must be one address of this host, or \* for every address, got ""$/m,
    );
    const twice = await runServeExpectingExit({ listeners: [web(18081, 1, 2, 90, 10)] }, ['--admin-address', '::1']);
    assert.equal(twice.exit.code, 2);
    assert.match(
      twice.stderr,
      /--admin-address: must be one address of this host, or \* for every address, got \["127.0.0.1","::1"\]/,
    );
  });

  test('an open-file limit that leaves no descriptor for connections exits 2 saying so, rather than serving nothing', {
    timeout: 20_000,
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'canary-l4-test-'));
    const path = join(dir, 'lb.yaml');
    writeFileSync(path, 'listeners: []\n');
    const serve = spawnServe(path, ['--no-watch'], { fdLimit: 96, ownDir: dir });
    // One that starts anyway is stopped, not left behind.
    const exit = await Promise.race([serve.exited, sleep(10_000).then(() => undefined)]);
    await serve.stop();
    assert.equal(exit?.code, 2, serve.stderr());
    assert.match(
      serve.stderr(),
      /^canary-l4: open files: the limit of 96 \(ulimit -n\) leaves no descriptor for connections .*raise it, e\.g\. ulimit -n 65536/m,
    );
  });

  test('an admin port in use exits 2, like every start-up error, naming both flags and the fix', async () => {
    const holder = net.createServer().listen({ host: '127.0.0.1', port: 0 });
    await once(holder, 'listening');
    const dir = mkdtempSync(join(tmpdir(), 'canary-l4-test-'));
    const path = join(dir, 'lb.yaml');
    writeFileSync(path, 'listeners: []\n');
    try {
      const port = (holder.address() as net.AddressInfo).port;
      const { exit, stderr } = await runCli([
        'serve',
        '--config',
        path,
        '--no-watch',
        '--admin-address',
        '127.0.0.1',
        '--admin-port',
        String(port),
      ]);
      assert.equal(exit.code, 2, stderr);
      assert.match(
        stderr,
        new RegExp(
          `^canary-l4: --admin-address 127\\.0\\.0\\.1 --admin-port ${port}: cannot listen \\(EADDRINUSE\\); choose another port \\(0: any free one\\)`,
          'm',
        ),
      );
    } finally {
      holder.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a listener that cannot bind at startup exits 2, like any config error: the file, the field path, the listener, the address', async () => {
    const holder = net.createServer().listen({ host: '127.0.0.1', port: 0 });
    await once(holder, 'listening');
    try {
      const port = (holder.address() as net.AddressInfo).port;
      const { exit, stderr } = await runServeExpectingExit({
        listeners: [web(await freePort(), 1, 2, 90, 10), { ...web(port, 1, 2, 90, 10), name: 'held' }],
      });
      assert.equal(exit.code, 2, stderr);
      assert.match(
        stderr,
        new RegExp(
          `^canary-l4: .*lb\\.yaml: listeners\\[1\\]\\.listen: listener "held" cannot listen on tcp 127\\.0\\.0\\.1:${port}: the address is in use.*\\(EADDRINUSE\\)$`,
          'm',
        ),
      );
      assert.doesNotMatch(stderr, /\n\s+at /, 'no stack trace');
    } finally {
      holder.close();
    }
  });
});

describe('serve: reloads', { timeout: 60_000 }, () => {
  let stable: TcpBackend;
  let canary: TcpBackend;
  let serve: ServeChild;
  let port = 0;
  let holder: net.Server;

  before(async () => {
    stable = await startNamedBackend('stable');
    canary = await startNamedBackend('canary');
    holder = net.createServer().listen({ host: '127.0.0.1', port: 0 });
    await once(holder, 'listening');
    port = await freePort();
    serve = await startServe({ listeners: [web(port, stable.port, canary.port, 100, 0)] }, ['--no-watch']);
  });
  after(async () => {
    await serve?.stop();
    holder.close();
    await Promise.all([stable.close(), canary.close()]);
  });

  const reloadLogs = () =>
    serve
      .logs()
      .filter((line) => line.msg === 'config reloaded' || String(line.msg).startsWith('config reload refused'));

  test('SIGHUP reloads the file: the new weights take the next connections', async () => {
    assert.deepEqual(await names(port, 20), { stable: 20 });
    serve.writeConfig({ listeners: [web(port, stable.port, canary.port, 0, 100)] });
    serve.child.kill('SIGHUP');
    await waitFor(() => reloadLogs().length === 1, 'the reload log line');
    assert.equal(reloadLogs()[0]!.msg, 'config reloaded');
    assert.equal(reloadLogs()[0]!.trigger, 'SIGHUP');
    // What changed, so that the log alone says what the reload did.
    assert.deepEqual(
      { ...reloadLogs()[0], level: undefined, time: undefined, pid: undefined, hostname: undefined },
      {
        level: undefined,
        time: undefined,
        pid: undefined,
        hostname: undefined,
        msg: 'config reloaded',
        trigger: 'SIGHUP',
        listeners: 1,
        added: [],
        removed: [],
        changed: [],
        weights: ['web: stable 100→0, canary 0→100'],
      },
    );
    assert.deepEqual(await names(port, 20), { canary: 20 });
  });

  test('an invalid file on SIGHUP is refused with the field path, and the running config keeps serving', async () => {
    serve.writeConfig({ listeners: [web(port, stable.port, canary.port, -1, 100)] });
    serve.child.kill('SIGHUP');
    await waitFor(() => reloadLogs().length === 2, 'the refusal log line');
    const refusal = reloadLogs()[1]!;
    assert.match(String(refusal.msg), /config reload refused; the previous config keeps serving/);
    assert.match(String(refusal.error), /listeners\[0\]\.backends\[0\]\.weight: must be an integer 0-100, got -1/);
    assert.equal(serve.child.exitCode, null, 'serve exited on a bad reload');
    assert.deepEqual(await names(port, 10), { canary: 10 });
  });

  test('a file whose new listener cannot bind is refused, counted as a failed reload, and the old config keeps serving', async () => {
    const heldPort = (holder.address() as net.AddressInfo).port;
    serve.writeConfig({
      listeners: [
        web(port, stable.port, canary.port, 100, 0),
        {
          name: 'held',
          listen: `127.0.0.1:${heldPort}`,
          backends: [{ name: 'x', host: '127.0.0.1', port: stable.port, weight: 1 }],
        },
      ],
    });
    serve.child.kill('SIGHUP');
    await waitFor(() => reloadLogs().length === 3, 'the refusal log line');
    assert.match(
      String(reloadLogs()[2]!.error),
      /lb\.yaml: listeners\[1\]\.listen: listener "held" cannot listen on tcp 127\.0\.0\.1:\d+: the address is in use/,
    );
    assert.deepEqual(await names(port, 10), { canary: 10 }, 'the weights of the refused file were applied');
    const metrics = (await serve.get('/metrics')).body;
    assert.equal(metricValue(metrics, 'canary_l4_config_reloads_total', { result: 'failure' }), 2);
    // The SIGHUP's reload; the first load is not one.
    assert.equal(metricValue(metrics, 'canary_l4_config_reloads_total', { result: 'success' }), 1);
    assert.equal((await serve.get('/readyz')).status, 200);
  });
});

describe('serve: file watch', { timeout: 30_000 }, () => {
  test('a changed config file is reloaded without a signal', async () => {
    const stable = await startNamedBackend('stable');
    const canary = await startNamedBackend('canary');
    const port = await freePort();
    const serve = await startServe({ listeners: [web(port, stable.port, canary.port, 100, 0)] });
    try {
      assert.equal(await askName(port), 'stable');
      await sleep(50); // a different mtime
      serve.writeConfig({ listeners: [web(port, stable.port, canary.port, 0, 100)] });
      await waitFor(async () => (await askName(port)) === 'canary', 'the file change to be picked up', 10_000);
      assert.ok(serve.logs().some((line) => line.msg === 'config reloaded' && line.trigger === 'file change'));
    } finally {
      await serve.stop();
      await Promise.all([stable.close(), canary.close()]);
    }
  });
});

describe('serve: warnings about a valid config', { timeout: 30_000 }, () => {
  test('a listener whose weights are all 0 and a backend host that does not resolve are warned about, naming the field', async () => {
    const stable = await startNamedBackend('stable');
    const [dark, web] = [await freePort(), await freePort()];
    const serve = await startServe({
      listeners: [
        {
          name: 'dark',
          listen: `127.0.0.1:${dark}`,
          backends: [{ name: 'stable', host: '127.0.0.1', port: stable.port, weight: 0 }],
        },
        {
          name: 'web',
          listen: `127.0.0.1:${web}`,
          backends: [
            { name: 'stable', host: '127.0.0.1', port: stable.port, weight: 90 },
            { name: 'canary', host: 'no-such-host.invalid', port: 80, weight: 10 },
          ],
        },
      ],
    });
    try {
      const warning = (msg: string) => serve.logs().find((line) => line.level === 40 && line.msg === msg);
      const zero = warning('every backend has weight 0: the listener refuses every new connection');
      assert.ok(zero, serve.stdout());
      assert.equal(zero.field, 'listeners[0].backends');
      assert.equal(zero.listener, 'dark');
      await waitFor(
        () => warning('backend host does not resolve: connections to it will fail') !== undefined,
        'the unresolvable host warning',
      );
      const unresolved = warning('backend host does not resolve: connections to it will fail')!;
      assert.equal(unresolved.field, 'listeners[1].backends[1].host');
      assert.equal(unresolved.host, 'no-such-host.invalid');
    } finally {
      await serve.stop();
      await stable.close();
    }
  });
});

describe('serve: a reload that changes nothing', { timeout: 30_000 }, () => {
  test('touching the file or a SIGHUP with the same config reloads nothing: logged and counted as unchanged', async () => {
    const stable = await startNamedBackend('stable');
    const canary = await startNamedBackend('canary');
    const port = await freePort();
    const serve = await startServe({ listeners: [web(port, stable.port, canary.port, 90, 10)] });
    try {
      const unchanged = () => serve.logs().filter((line) => line.msg === 'config unchanged; nothing to reload');
      await sleep(50); // a different mtime
      const now = new Date();
      utimesSync(serve.configPath, now, now);
      await waitFor(() => unchanged().length === 1, 'the touched file to be read', 10_000);
      assert.equal(unchanged()[0]!.trigger, 'file change');
      serve.child.kill('SIGHUP');
      await waitFor(() => unchanged().length === 2, 'the SIGHUP to be handled');
      assert.ok(!serve.logs().some((line) => line.msg === 'config reloaded'));
      const metrics = (await serve.get('/metrics')).body;
      assert.equal(
        metricValue(metrics, 'canary_l4_config_reloads_total', { result: 'success' }),
        0,
        'the first load counted as a reload',
      );
      assert.equal(metricValue(metrics, 'canary_l4_config_reloads_total', { result: 'unchanged' }), 2);
    } finally {
      await serve.stop();
      await Promise.all([stable.close(), canary.close()]);
    }
  });
});

describe('serve: --weight', { timeout: 30_000 }, () => {
  test('overrides change the split: canary=0 takes it out, 50/50 splits exactly', async () => {
    const stable = await startNamedBackend('stable');
    const canary = await startNamedBackend('canary');
    const children: ServeChild[] = [];
    try {
      const config = (p: number) => ({ listeners: [web(p, stable.port, canary.port, 90, 10)] });
      const p1 = await freePort();
      children.push(await startServe(config(p1), ['--weight', 'web:canary=0']));
      assert.deepEqual(await names(p1, 50), { stable: 50 });
      const p2 = await freePort();
      children.push(await startServe(config(p2), ['--weight', 'web:canary=50', '--weight', 'web:stable=50']));
      assert.deepEqual(await names(p2, 100), { stable: 50, canary: 50 });
    } finally {
      await Promise.all(children.map((child) => child.stop()));
      await Promise.all([stable.close(), canary.close()]);
    }
  });
});

describe('serve: a listener with a mirror', { timeout: 30_000 }, () => {
  test('clients are served by the stable only; the weight-0 canary gets every connection too, counted in /metrics and /stats', async () => {
    const stable = await startNamedBackend('stable');
    const canary = await startNamedBackend('canary');
    const port = await freePort();
    const serve = await startServe(
      {
        listeners: [
          {
            ...web(port, stable.port, canary.port, 100, 0),
            mirror: { to: 'canary', percent: 100, compare: 'replies' },
          },
        ],
      },
      ['--no-watch'],
    );
    try {
      assert.deepEqual(await names(port, 20), { stable: 20 });
      await waitFor(() => canary.accepted === 20, 'the mirror to get every connection');
      const metrics = async () => (await serve.get('/metrics')).body;
      const outcome = async (name: string) =>
        metricValue(await metrics(), 'canary_l4_mirror_total', { listener: 'web', backend: 'canary', outcome: name });
      await waitFor(async () => (await outcome('compared')) === 20, 'every connection judged', 10_000);
      assert.equal(await outcome('different'), 20, '"canary" is not "stable"');
      const stats = JSON.parse((await serve.get('/stats')).body) as {
        listeners: Record<string, Record<string, { mirror: Record<string, number> }>>;
      };
      assert.deepEqual(stats.listeners.web!.canary!.mirror, {
        mirrored: 20,
        compared: 20,
        equal: 0,
        different: 20,
        missing: 0,
        dropped: 0,
      });
    } finally {
      await serve.stop();
      await Promise.all([stable.close(), canary.close()]);
    }
  });
});

describe('serve: SIGTERM', { timeout: 30_000 }, () => {
  test('drains: not ready, new connections refused, a live transfer finishes byte-exact, then exit 0', async () => {
    // Sends 8 MiB in 16 slices, 100 ms apart: a transfer of about 1.6 s.
    const payload = randomPayload(8 * MiB);
    const backend = await startTcpBackend((socket) => {
      socket.resume();
      let slice = 0;
      const timer = setInterval(() => {
        const start = slice * (payload.length / 16);
        socket.write(payload.subarray(start, start + payload.length / 16));
        if (++slice === 16) {
          clearInterval(timer);
          socket.end();
        }
      }, 100);
      socket.on('close', () => clearInterval(timer));
    });
    const port = await freePort();
    const serve = await startServe(
      {
        listeners: [
          {
            name: 'slow',
            listen: `127.0.0.1:${port}`,
            backends: [{ name: 'b', host: '127.0.0.1', port: backend.port, weight: 1 }],
          },
        ],
      },
      ['--drain-timeout', '20'],
    );
    try {
      const client = net.connect({ host: '127.0.0.1', port });
      const chunks: Buffer[] = [];
      client.on('data', (chunk: Buffer) => chunks.push(chunk));
      const ended = new Promise<{ error?: Error }>((resolve) => {
        client.on('error', (error) => resolve({ error }));
        client.on('end', () => resolve({}));
      });
      await once(client, 'data');
      serve.child.kill('SIGTERM');
      await waitFor(() => serve.logs().some((line) => line.msg === 'signal received'), 'the signal to be handled');
      assert.equal((await serve.get('/readyz')).status, 503, 'still ready while draining');
      assert.equal(
        (await exchange(port, 'x')).error?.code,
        'ECONNREFUSED',
        'a new connection was accepted while draining',
      );

      const outcome = await ended;
      assert.equal(outcome.error, undefined);
      assert.equal(sha256(Buffer.concat(chunks)), sha256(payload), 'the live transfer was cut or corrupted');
      const exit = await serve.exited;
      assert.deepEqual(exit, { code: 0, signal: null });
    } finally {
      await serve.stop();
      await backend.close();
    }
  });

  test('the drain timeout ends connections that do not finish, then exit 0', async () => {
    const backend = await startTcpBackend((socket) => socket.resume()); // never answers, never ends
    const port = await freePort();
    const serve = await startServe(
      {
        listeners: [
          {
            name: 'stuck',
            listen: `127.0.0.1:${port}`,
            backends: [{ name: 'b', host: '127.0.0.1', port: backend.port, weight: 1 }],
          },
        ],
      },
      ['--drain-timeout', '1'],
    );
    try {
      const client = net.connect({ host: '127.0.0.1', port });
      client.on('error', () => {});
      await once(client, 'connect');
      await waitFor(() => backend.sockets.size === 1, 'the proxied connection');
      const signalledAt = Date.now();
      serve.child.kill('SIGTERM');
      const exit = await serve.exited;
      const took = Date.now() - signalledAt;
      assert.deepEqual(exit, { code: 0, signal: null });
      assert.ok(took >= 900 && took < 8000, `exited ${took} ms after SIGTERM with a 1 s drain timeout`);
      if (!client.destroyed) await once(client, 'close');
    } finally {
      await serve.stop();
      await backend.close();
    }
  });
});

/**
 * Opens a FIFO for writing once a reader waits on it (a non-blocking open fails with ENXIO until
 * then), so the test knows `serve` is blocked reading its config.
 */
async function fifoWriterOnceRead(fifo: string, timeoutMs: number): Promise<number | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENXIO') throw err;
      if (Date.now() > deadline) return undefined;
      await sleep(20);
    }
  }
}

async function feedFifo(fifo: string, config: unknown): Promise<void> {
  const fd = await fifoWriterOnceRead(fifo, 10_000);
  assert.ok(fd !== undefined, 'serve never read its config file');
  writeSync(fd, JSON.stringify(config));
  closeSync(fd);
}

describe('serve: SIGHUP during start-up', { timeout: 30_000 }, () => {
  test('a SIGHUP before the first config is served neither kills serve nor is lost: the SIGHUPs held become one reload', async () => {
    const stable = await startNamedBackend('stable');
    const canary = await startNamedBackend('canary');
    const port = await freePort();
    // A FIFO holds serve inside its first read of the config until the test writes it.
    const dir = mkdtempSync(join(tmpdir(), 'canary-l4-test-'));
    const fifo = join(dir, 'lb.yaml');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
    const serve = spawnServe(fifo, ['--no-watch'], { ownDir: dir });
    try {
      const reading = await fifoWriterOnceRead(fifo, 10_000);
      assert.ok(reading !== undefined, 'serve never read its config file');
      serve.child.kill('SIGHUP');
      serve.child.kill('SIGHUP');
      // Once delivered, a signal without a handler would have begun to end the process.
      assert.equal(await afterDelivery(serve.child.pid!, 'SIGHUP'), 'alive', 'serve died of a SIGHUP during start-up');
      assert.equal(
        serve.hasExited,
        false,
        `serve died of a SIGHUP during start-up: ${JSON.stringify(await Promise.race([serve.exited, sleep(0)]))}`,
      );
      writeSync(reading, JSON.stringify({ listeners: [web(port, stable.port, canary.port, 100, 0)] }));
      closeSync(reading);
      await untilReady(serve);

      // Once serving, the held SIGHUPs make one reload, which reads the file again.
      await feedFifo(fifo, { listeners: [web(port, stable.port, canary.port, 0, 100)] });
      await waitFor(
        () => serve.logs().some((line) => line.msg === 'config reloaded' && line.trigger === 'SIGHUP'),
        'the held SIGHUP to reload',
      );
      assert.deepEqual(await names(port, 10), { canary: 10 });
      assert.equal(await fifoWriterOnceRead(fifo, 500), undefined, 'two SIGHUPs held at start-up made a second reload');
    } finally {
      await serve.stop();
      await Promise.all([stable.close(), canary.close()]);
    }
  });
});
