/** `npm run fake-apiserver` entry point: flags, kubeconfig output, serving until SIGTERM. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { parse } from 'yaml';

const main = fileURLToPath(new URL('../support/fake-apiserver/main.ts', import.meta.url));

it('serves with --port 0 --service-cidr --kubeconfig-out and stops on SIGTERM', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'fake-cli-'));
  const out = join(dir, 'kubeconfig');
  const child = spawn(process.execPath, [main, '--port', '0', '--service-cidr', '127.0.30.0/24', '--kubeconfig-out', out], { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    let text = '';
    child.stdout.setEncoding('utf8');
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: string) => {
        text += d;
        if (text.includes('kubeconfig:')) resolve();
      });
      child.once('exit', (code) => reject(new Error(`exited early with ${code}`)));
    });
    assert.match(text, /listening on http:\/\/127\.0\.0\.1:\d+/);
    assert.ok(text.includes(`kubeconfig: ${out}`));
    const file = parse(await readFile(out, 'utf8'));
    const server: string = file.clusters[0].cluster.server;
    assert.ok(text.includes(server));
    // client-node needs skipTLSVerify for plain http; kubectl (the file's user) does not.
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server, skipTLSVerify: true }],
      users: [{ name: 'u', token: file.users[0].user.token }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u', namespace: file.contexts[0].context.namespace }],
      currentContext: 'x',
    });
    const core = kc.makeApiClient(CoreV1Api);
    const s = await core.createNamespacedService({ namespace: 'default', body: { metadata: { name: 'cli' }, spec: { ports: [{ port: 80 }] } } });
    assert.match(s.spec!.clusterIP!, /^127\.0\.30\./);
    // Faults reach it over HTTP, from another process.
    assert.match(text, /fault injection: curl -XPOST http:\/\/127\.0\.0\.1:\d+\/_fake\/faults\/latency/);
    const armed = await fetch(`${server}/_fake/faults/fail-next`, { method: 'POST', body: JSON.stringify({ verb: 'create', resource: 'services', code: 503 }) });
    assert.equal(armed.status, 200);
    await assert.rejects(core.createNamespacedService({ namespace: 'default', body: { metadata: { name: 'cli2' }, spec: { ports: [{ port: 80 }] } } }), (e: any) => e.code === 503);
  } finally {
    child.kill('SIGTERM');
    const [code] = await once(child, 'exit');
    await rm(dir, { recursive: true, force: true });
    assert.equal(code, 0);
  }
});

it('rejects a bad flag with a usage message', async () => {
  const child = spawn(process.execPath, [main, '--bogus'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
  const [code] = await once(child, 'exit');
  assert.equal(code, 2);
  assert.match(err, /usage: fake-apiserver/);
});
