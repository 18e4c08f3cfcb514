// A kubeconfig the proxy, the manager or the plugin cannot use is a start-up error a user caused:
// one line naming where it looked and what to do (exit 2 from the CLI, as every such error).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { ConfigError } from '../../src/errors.ts';
import { loadKubeConfig } from '../../src/kube/client.ts';

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
