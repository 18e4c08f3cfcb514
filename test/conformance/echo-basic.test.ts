// The echo-basic and coredns simulations (test/cluster/node/echo-basic/, coredns.ts) answer as the images the
// conformance suite deploys: their TCP, UDP and DNS servers read by the suite's own clients (conformance_test.go's
// TestEchoSimulation, in the suite binary test/conformance/build.ts builds), the TLS listener of the tcpserver and
// the HTTP echo checked here against the image's protocol. On the file's loopback range (fixed ports, as the image's).
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { requireTool } from '../support/process/required-tool.ts';
import { ensureSuiteBinary } from './build.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';

const addresses = loopbackRange(import.meta.url);

const ECHO_BASIC = fileURLToPath(new URL('../cluster/node/echo-basic/main.ts', import.meta.url));
const COREDNS = fileURLToPath(new URL('../cluster/node/coredns.ts', import.meta.url));
const POD = { NAMESPACE: 'gateway-conformance-infra', POD_NAME: 'tcp-backend-v1-5d4f8-x2x7q', SERVICE_NAME: 'svc-v1' };
const run = promisify(execFile);

const skip = (await requireTool('go')).skip || (await requireTool('openssl')).skip;

describe('the echo-basic and coredns simulations', { skip, timeout: 900_000 }, () => {
  const children: ChildProcess[] = [];
  let dir = '';
  let suite = '';

  /** A simulation process, once it printed `ready` (its servers listen). */
  const start = async (script: string, env: Record<string, string>, ready: RegExp) => {
    const child = spawn(process.execPath, [script], { env: { ...process.env, ...POD, ...env }, stdio: 'pipe' });
    children.push(child);
    let output = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${script} did not start: ${output}`)), 15_000);
      const read = (chunk: Buffer) => {
        output += chunk.toString();
        if (ready.test(output)) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout.on('data', read);
      child.stderr.on('data', read);
      child.once('exit', (code) => reject(new Error(`${script} exited ${code}: ${output}`)));
    });
    return child;
  };

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-echo-basic-'));
    await run(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'].concat([
        '-subj',
        '/CN=abc.example.com',
        '-days',
        '1',
        '-keyout',
        join(dir, 'key'),
        '-out',
        join(dir, 'crt'),
      ]),
    );
    const tls = { TLS_SERVER_CERT: join(dir, 'crt'), TLS_SERVER_PRIV_KEY: join(dir, 'key') };
    await Promise.all([
      start(ECHO_BASIC, { ECHO_BASIC_BIND: addresses.ip(1), TCP_ECHO_SERVER: '1', ...tls }, /protocol=tls/),
      start(ECHO_BASIC, { ECHO_BASIC_BIND: addresses.ip(2), UDP_ECHO_SERVER: '1' }, /UDP server listening/),
      start(ECHO_BASIC, { ECHO_BASIC_BIND: addresses.ip(3) }, /port 3001 \(h2c\)/),
      start(COREDNS, { COREDNS_BIND: addresses.ip(4) }, /whoami/),
    ]);
    suite = (await ensureSuiteBinary((line) => console.error(line))).path;
  });

  after(() => {
    for (const child of children) child.kill('SIGTERM');
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it("answers the suite's own TCP, UDP and DNS clients (TestEchoSimulation)", async () => {
    const { stdout } = await run(suite, ['-test.run', '^TestEchoSimulation$', '-test.v', '-test.timeout', '60s'], {
      env: {
        ...process.env,
        ECHO_SIMULATION_TCP: `${addresses.ip(1)}:3000`,
        ECHO_SIMULATION_UDP: `${addresses.ip(2)}:8080`,
        ECHO_SIMULATION_DNS: `${addresses.ip(4)}:53`,
        ECHO_SIMULATION_NAMESPACE: POD.NAMESPACE,
        ECHO_SIMULATION_POD: POD.POD_NAME,
        ECHO_SIMULATION_SERVICE: POD.SERVICE_NAME,
      },
    }).catch((err: { stdout?: string; message: string }) => assert.fail(err.stdout ?? err.message));
    for (const name of ['tcpserver', 'udpechoserver', 'coredns_whoami'])
      assert.match(stdout, new RegExp(`--- PASS: TestEchoSimulation/${name}`), stdout);
    assert.doesNotMatch(stdout, /SKIP/);
  });

  it('the tcpserver over TLS: welcome, IS_TLS true, and TEST with the handshake (version, serverName, cipherSuite)', async () => {
    const socket = connect({
      host: addresses.ip(1),
      port: 8443,
      servername: 'abc.example.com',
      rejectUnauthorized: false,
    });
    const lines: string[] = [];
    let pending = '';
    const next = () =>
      new Promise<string>((resolve, reject) => {
        const take = () => {
          const end = pending.indexOf('\n');
          if (end === -1) return false;
          lines.push(pending.slice(0, end));
          pending = pending.slice(end + 1);
          resolve(lines.at(-1)!);
          return true;
        };
        if (take()) return;
        const onData = (chunk: Buffer) => {
          pending += chunk.toString();
          if (take()) socket.off('data', onData);
        };
        socket.on('data', onData);
        socket.once('error', reject);
      });
    assert.equal(await next(), 'Gateway API Test TCP Server');
    socket.write('PING\r\nIS_TLS\n');
    assert.equal(await next(), 'PONG');
    assert.equal(await next(), 'true');
    socket.write('NOISE\nTEST\n');
    const payload = JSON.parse(await next());
    socket.destroy();
    assert.deepEqual(Object.keys(payload), [
      'namespace',
      'ingress',
      'service',
      'pod',
      'tcpport',
      'tlsport',
      'isTLS',
      'tls',
    ]);
    assert.equal(payload.pod, POD.POD_NAME);
    assert.equal(payload.tcpport, '3000');
    assert.equal(payload.tlsport, '8443');
    assert.equal(payload.isTLS, true);
    assert.equal(payload.tls.serverName, 'abc.example.com');
    assert.equal(payload.tls.version, 'TLS 1.3');
    assert.match(payload.tls.cipherSuite, /^TLS_/);
  });

  it('the HTTP echo: the JSON of the request (canonical header names, Host apart), /health and /status/NNN', async () => {
    const response = await fetch(`http://${addresses.ip(3)}:3000/a//b?x=1`, { headers: { 'x-custom-header': 'v' } });
    const body = (await response.json()) as Record<string, any>;
    assert.equal(response.headers.get('content-type'), 'application/json');
    assert.equal(body.path, '/a//b?x=1');
    assert.equal(body.host, `${addresses.ip(3)}:3000`);
    assert.equal(body.method, 'GET');
    assert.equal(body.proto, 'HTTP/1.1');
    assert.deepEqual(body.headers['X-Custom-Header'], ['v']);
    assert.equal(body.headers.Host, undefined);
    assert.equal(body.httpPort, '3000');
    assert.equal(body.namespace, POD.NAMESPACE);
    assert.equal((await fetch(`http://${addresses.ip(3)}:3000/health`)).status, 200);
    assert.equal((await fetch(`http://${addresses.ip(3)}:3000/status/418`)).status, 418);
  });
});
