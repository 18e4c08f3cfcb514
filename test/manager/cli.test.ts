// `canary-l4 manager` as a user runs it: one line and exit 2 for what the user got wrong; and the
// environment the proxy Deployment and the manager Deployment are given is one their commands
// accept (yargs refuses an unknown CANARY_L4_* variable as an unknown flag, so a stray one would
// keep every pod from starting).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { V1Container, V1Deployment } from '@kubernetes/client-node';
import { KIND } from '../../src/api/names.ts';
import { renderProxy } from '../../src/manager/render.ts';
import type { ManagedRelease } from '../../src/api/proxy-types.ts';
import { theOnly } from '../deploy/manifests.ts';
import { startFakeApiServer, type FakeApiServer } from '../support/fake-apiserver/index.ts';
import { MAIN, runCli } from '../support/process/serve-child.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';

const addresses = loopbackRange(import.meta.url);

/** The CLI with `env` added to the environment; its stderr once it exits (within 20 s). */
function stderrWith(args: readonly string[], env: Record<string, string>): Promise<string> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [MAIN, ...args],
      { env: { ...process.env, ...env }, timeout: 20_000 },
      (_err, _stdout, stderr) => resolve(stderr),
    );
  });
}

/** The container's environment as the kubelet would give it (a fieldRef as some value). */
function envOf(container: V1Container | undefined): Record<string, string> {
  return Object.fromEntries(
    (container?.env ?? []).map((variable) => [variable.name, variable.value ?? 'from-the-downward-api']),
  );
}

describe('canary-l4 manager', { timeout: 40_000 }, () => {
  let api: FakeApiServer;
  let dir: string;
  let unreachable: string;

  before(async () => {
    api = await startFakeApiServer({ serviceCidr: addresses.cidr });
    dir = mkdtempSync(join(tmpdir(), 'canary-l4-manager-cli-'));
    unreachable = join(dir, 'kubeconfig');
    // Never contacted: every case here stops before the first request.
    writeFileSync(
      unreachable,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        'current-context': 'c',
        clusters: [{ name: 'c', cluster: { server: 'http://127.0.0.1:1', 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'u', user: { token: 't' } }],
        contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }],
      }),
    );
  });
  after(async () => {
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const refused: [string, () => string[], string][] = [
    [
      'no image and no pod to learn it from',
      () => ['manager', '--kubeconfig', unreachable],
      "canary-l4: --proxy-image: required unless --pod-name and --pod-namespace name the manager's own pod (whose image the proxies then run)",
    ],
    [
      'a namespace that cannot be one',
      () => ['manager', '--proxy-image', 'x', '-n', 'shop,Bad_NS'],
      'canary-l4: --namespace: must be a namespace name (lower-case letters, digits and \'-\'), got "Bad_NS"',
    ],
    [
      'no resync',
      () => ['manager', '--proxy-image', 'x', '--resync', '0'],
      'canary-l4: --resync: must be a number of seconds > 0, got 0',
    ],
    ['an empty image', () => ['manager', '--proxy-image', ' '], 'canary-l4: --proxy-image: must name an image, got ""'],
    [
      'its own pod not found',
      () => ['manager', '--kubeconfig', api.kubeconfigPath, '--pod-name', 'nope', '--pod-namespace', 'default'],
      'canary-l4: --pod-name nope: cannot read the manager\'s own pod in default to learn its image (404 NotFound: pods "nope" not found); pass --proxy-image',
    ],
  ];
  for (const [what, args, message] of refused) {
    it(`refuses ${what} in one line, exit 2`, async () => {
      const result = await runCli(args());
      assert.equal(result.stderr.split('\n')[0], message, result.stderr);
      assert.equal(result.exit.code, 2);
    });
  }

  it('the proxy accepts every variable of the environment the manager gives it', async () => {
    const example = theOnly<ManagedRelease>(KIND);
    const rendered = renderProxy(
      { ...example, metadata: { ...example.metadata, namespace: 'default', uid: 'u' } },
      { proxyImage: 'canary-l4:0.1.0' },
    );
    assert.ok(rendered.ok);
    const env = envOf(rendered.objects.deployment.spec?.template.spec?.containers[0]);
    const stderr = await stderrWith(['proxy', '--kubeconfig', '/nonexistent/kubeconfig'], env);
    assert.match(
      stderr,
      /^canary-l4: --kubeconfig \/nonexistent\/kubeconfig: cannot be read/,
      `stopped at the kubeconfig, not at a flag: ${stderr}`,
    );
  });

  it('the manager accepts every variable of the environment deploy/ gives it', async () => {
    const env = envOf(theOnly<V1Deployment>('Deployment').spec?.template.spec?.containers[0]);
    const stderr = await stderrWith(['manager', '--kubeconfig', '/nonexistent/kubeconfig'], env);
    assert.match(
      stderr,
      /^canary-l4: --kubeconfig \/nonexistent\/kubeconfig: cannot be read/,
      `stopped at the kubeconfig, not at a flag: ${stderr}`,
    );
  });
});
