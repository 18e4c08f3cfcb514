// A kubeconfig the proxy, the manager or the plugin cannot use is a start-up error a user caused:
// one line naming where it looked and what to do (exit 2 from the CLI, as every such error).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createSecureServer, type Http2SecureServer } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Watch } from '@kubernetes/client-node';
import { ConfigError } from '../../src/errors.ts';
import { loadKubeConfig, makeClients } from '../../src/kube/client.ts';
import { makePki } from '../cluster/pki.ts';
import { requireTool } from '../support/process/required-tool.ts';

const dir = mkdtempSync(join(tmpdir(), 'canary-l4-kubeconfig-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfig(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

function refusal(load: () => unknown): ConfigError {
  try {
    load();
  } catch (err) {
    assert.ok(err instanceof ConfigError, `a ConfigError, got ${String(err)}`);
    return err;
  }
  assert.fail('the kubeconfig was accepted');
}

describe('loadKubeConfig', () => {
  test('KUBECONFIG naming a missing file: names the variable and the fix', () => {
    const before = process.env.KUBECONFIG;
    process.env.KUBECONFIG = join(dir, 'missing');
    let err: ConfigError;
    try {
      err = refusal(() => loadKubeConfig(undefined));
    } finally {
      if (before === undefined) delete process.env.KUBECONFIG;
      else process.env.KUBECONFIG = before;
    }
    assert.match(
      err.message,
      /^KUBECONFIG=.*missing: cannot be read as a kubeconfig: ENOENT.*; pass --kubeconfig FILE or set KUBECONFIG$/,
    );
  });

  test('--kubeconfig with no current cluster', () => {
    const path = kubeconfig('empty.yaml', 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n');
    const err = refusal(() => loadKubeConfig(path));
    assert.equal(
      err.message,
      `--kubeconfig ${path}: no Kubernetes cluster configured: pass --kubeconfig FILE, set KUBECONFIG, or run in a pod`,
    );
  });

  test('a plain-http cluster without insecure-skip-tls-verify', () => {
    const path = kubeconfig(
      'http.yaml',
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters: [{name: local, cluster: {server: "http://127.0.0.1:1"}}]',
        'users: [{name: me, user: {}}]',
        'contexts: [{name: local, context: {cluster: local, user: me}}]',
        'current-context: local',
        '',
      ].join('\n'),
    );
    assert.match(
      refusal(() => loadKubeConfig(path)).message,
      /^--kubeconfig .*: cluster local \(http:\/\/127\.0\.0\.1:1\) is plain http: set insecure-skip-tls-verify: true/,
    );
  });
});

// client-node 2's undici offers HTTP/2 to a TLS API server unless told not to; canary-l4 speaks
// HTTP/1.1 (src/kube/client.ts says why: a client HTTP/2 session looping at full CPU on Node 26).
describe('the wire to the API server', await requireTool('openssl'), () => {
  let server: Http2SecureServer;
  let url: string;
  let caPem: string;
  const seen: { path: string; httpVersion: string; alpn: string | false | null }[] = [];

  before(async () => {
    const pki = await makePki(join(dir, 'pki'), ['127.0.0.1']);
    caPem = pki.caPem;
    server = createSecureServer(
      { allowHTTP1: true, cert: readFileSync(pki.servingCert), key: readFileSync(pki.servingKey) },
      (request, response) => {
        seen.push({
          path: request.url,
          httpVersion: request.httpVersion,
          alpn: (request.socket as TLSSocket).alpnProtocol ?? null,
        });
        const watching = request.url.includes('watch=true');
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(
          watching ? '' : JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: {}, items: [] }),
        );
      },
    );
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('API calls and watches speak HTTP/1.1 to a server that offers HTTP/2 too', async () => {
    const path = kubeconfig(
      'tls',
      `apiVersion: v1
kind: Config
clusters: [{name: tls, cluster: {server: "${url}", certificate-authority-data: ${Buffer.from(caPem).toString('base64')}}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: tls, user: u}}]
current-context: c
`,
    );
    const kubeConfig = loadKubeConfig(path);
    await makeClients(kubeConfig).core.listNamespace();
    const ended = new Promise<void>((resolve) => {
      void new Watch(kubeConfig).watch(
        '/api/v1/namespaces',
        {},
        () => {},
        () => resolve(),
      );
    });
    await ended;
    assert.deepEqual(
      seen.map(({ path: requested, httpVersion, alpn }) => ({
        watch: requested.includes('watch=true'),
        httpVersion,
        alpn,
      })),
      [
        { watch: false, httpVersion: '1.1', alpn: 'http/1.1' },
        { watch: true, httpVersion: '1.1', alpn: 'http/1.1' },
      ],
    );
  });
});
