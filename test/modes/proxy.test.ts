// `canary-l4 proxy` as a user runs it: one-line errors for bad flags, the environment fallbacks,
// readiness and metrics on the admin port, a SIGTERM that exits 0 promptly even while an API call
// hangs, and what it does once its release is over (on a host, exit; in a pod, stay).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';

import { freePort, freePortBlock } from '../support/net/free-ports.ts';
import { validateConfig } from '../../src/config/validate.ts';
import { saveServedConfig } from '../../src/runtime/state-dir.ts';
import { MAIN, runCli } from '../support/process/serve-child.ts';
import {
  createRelease,
  createService,
  getRelease,
  NAMESPACE,
  patchRelease,
  PROXY_USER,
  serviceEntry,
  serving,
  setWeight,
  startCluster,
  waitForRelease,
  writeProxyKubeconfig,
  type Cluster,
} from '../support/cluster/release-cluster.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const PORT_BASE = await freePortBlock(60);

/** Reconcile passes a proxy child has finished, by any result, from its admin server's /metrics. */
async function passes(adminPort: number): Promise<number> {
  const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  const counts = [...metrics.matchAll(/^canary_l4_reconcile_total\{[^}]*\} (\d+)$/gm)];
  return counts.reduce((sum, [, count]) => sum + Number(count), 0);
}

describe('canary-l4 proxy', { timeout: 90_000 }, () => {
  for (const [args, message] of [
    [['proxy', '--canary-release', 'web-v2'], 'canary-l4: --namespace: required (or set CANARY_RELEASE_NAMESPACE)'],
    [['proxy', '-n', 'shop'], 'canary-l4: --canary-release: required (or set CANARY_RELEASE_NAME)'],
    [
      ['proxy', '-n', 'shop', '--canary-release', 'web-v2', '--weight', 'web:80=500'],
      'canary-l4: --weight "web:80=500": expected SERVICE:PORT=PCT, PORT 1-65535 and PCT (the canary weight) an integer 0-100',
    ],
    [
      ['proxy', '-n', 'shop', '--canary-release', 'web-v2', '--proxy-selector', 'app'],
      'canary-l4: --proxy-selector "app": expected key=value, got "app"',
    ],
    [
      ['proxy', '-n', 'shop', '--canary-release', 'web-v2', '--port-base', '70000'],
      'canary-l4: --port-base: must be an integer 1-65535, got 70000',
    ],
    [
      ['proxy', '-n', 'shop', '--canary-release', 'web-v2', '--kubeconfig', '/nonexistent/kubeconfig'],
      "canary-l4: --kubeconfig /nonexistent/kubeconfig: cannot be read as a kubeconfig: ENOENT: no such file or directory, open '/nonexistent/kubeconfig'",
    ],
  ] as const) {
    it(`refuses ${args.slice(1).join(' ')} in one line, exit 2`, async () => {
      const result = await runCli(args);
      assert.equal(result.exit.code, 2);
      assert.equal(result.stderr.split('\n')[0], message);
    });
  }

  describe('against the fake apiserver', () => {
    let cluster: Cluster;
    let dir: string;
    let kubeconfig: string;

    before(async () => {
      cluster = await startCluster(addresses.cidr);
      dir = mkdtempSync(join(tmpdir(), 'canary-l4-proxy-cli-'));
      kubeconfig = join(dir, 'kubeconfig');
      writeProxyKubeconfig(cluster, kubeconfig);
    });

    after(async () => {
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('runs from the environment fallbacks; ready and counted; SIGTERM exits 0 at once though an API call hangs', async () => {
      await createService(cluster, 'web', [{ name: 'http', port: 8900 }]);
      await createRelease(cluster, 'web-v2', { services: [serviceEntry('web', [{ port: 8900, weight: 10 }])] });
      const child = spawn(
        process.execPath,
        [
          MAIN,
          'proxy',
          '--kubeconfig',
          kubeconfig,
          '--port-base',
          String(PORT_BASE),
          '--admin-port',
          '0',
          '--admin-host',
          '127.0.0.1',
          '--api-timeout',
          '30',
        ],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: { ...process.env, CANARY_RELEASE_NAMESPACE: NAMESPACE, CANARY_RELEASE_NAME: 'web-v2' },
        },
      );
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      try {
        await waitForRelease(cluster, 'web-v2', 'serving', serving);
        const adminPort = Number(/"adminPort":(\d+)/.exec(stdout)?.[1]);
        const readyz = await fetch(`http://127.0.0.1:${adminPort}/readyz`);
        assert.equal(readyz.status, 200);
        const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
        assert.match(metrics, /canary_l4_release_info\{release="web-v2",namespace="default",phase="Running"\} 1/);
        assert.match(metrics, /canary_l4_canary_weight\{service="web",port="8900",protocol="TCP"\} 10/);

        // Every request from here on hangs for a minute: the proxy's status write for this change among them.
        const hang = cluster.fake.onRequest((request) => {
          if (request.user !== PROXY_USER && request.verb === 'patch') cluster.fake.faults.setLatency(60_000);
        });
        await setWeight(cluster, 'web-v2', 0, 0, 20);
        hang();
        await waitFor(
          () =>
            cluster.fake.requests.some(
              (request) => request.user === PROXY_USER && request.verb === 'patch' && request.code === 0,
            ),
          'a hanging write of the proxy',
        );
        const signalled = Date.now();
        child.kill('SIGTERM');
        assert.equal(await exited, 0);
        assert.ok(Date.now() - signalled < 5_000, `exited ${Date.now() - signalled} ms after SIGTERM`);
        assert.match(stdout, /"msg":"drained; exiting"/);
      } finally {
        cluster.fake.faults.reset();
        child.kill('SIGKILL');
      }
    });

    it('a --state-dir holding the served config of another CanaryRelease of the namespace is ignored, and said; its ports stay closed', async () => {
      const stateDir = join(dir, 'state-of-web-v1');
      const savedPort = await freePort();
      await saveServedConfig(
        stateDir,
        { namespace: NAMESPACE, release: 'web-v1' },
        validateConfig(
          {
            listeners: [
              {
                name: 'web-8900-tcp',
                listen: `127.0.0.1:${savedPort}`,
                backends: [{ name: 'forked', host: '127.0.0.1', port: 9, weight: 100 }],
              },
            ],
          },
          'test',
        ),
      );
      const child = spawn(
        process.execPath,
        [
          MAIN,
          'proxy',
          '--kubeconfig',
          kubeconfig,
          '-n',
          NAMESPACE,
          '--canary-release',
          'web-v2',
          '--port-base',
          String(PORT_BASE + 50),
          '--admin-port',
          '0',
          '--admin-host',
          '127.0.0.1',
          '--state-dir',
          stateDir,
          '--no-leader-elect',
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      try {
        await waitFor(
          () => stdout.includes('ignoring the saved config in --state-dir'),
          "the proxy to say it ignores the other release's config",
          15_000,
        );
        const said = stdout.split('\n').find((line) => line.includes('ignoring the saved config'))!;
        assert.match(said, /holds the config of CanaryRelease default\/web-v1, not default\/web-v2/);
        // Its first pass done, successful or not: it had its chance to serve the saved listener.
        const adminPort = () => Number(/"adminPort":(\d+)/.exec(stdout)?.[1]);
        const passed = async () => Number.isFinite(adminPort()) && (await passes(adminPort())) > 0;
        await waitFor(passed, 'a first reconcile pass', 15_000);
        const refused = await new Promise<boolean>((resolve) =>
          net
            .connect({ host: '127.0.0.1', port: savedPort })
            .once('connect', function (this: net.Socket) {
              this.destroy();
              resolve(false);
            })
            .once('error', () => resolve(true)),
        );
        assert.ok(refused, "the other release's listener is not served");
      } finally {
        child.kill('SIGKILL');
      }
    });

    /**
     * A release of Service `service` (port `port`) served by `canary-l4 proxy` run as a child, its env
     * without KUBERNETES_SERVICE_HOST unless `inPod`; once it serves, the release is deprecated.
     */
    async function endedRelease(service: string, port: number, inPod: boolean) {
      const release = `${service}-v2`;
      await createService(cluster, service, [{ name: 'http', port }]);
      await createRelease(cluster, release, { services: [serviceEntry(service, [{ port, weight: 10 }])] });
      const { KUBERNETES_SERVICE_HOST: _, ...env } = process.env;
      const child = spawn(
        process.execPath,
        [
          MAIN,
          'proxy',
          '--kubeconfig',
          kubeconfig,
          '-n',
          NAMESPACE,
          '--canary-release',
          release,
          '--port-base',
          String(PORT_BASE + port - 8900),
          '--admin-port',
          '0',
          '--admin-host',
          '127.0.0.1',
          '--hand-back-grace',
          '1',
        ],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
          env: inPod ? { ...env, KUBERNETES_SERVICE_HOST: '10.96.0.1' } : env,
        },
      );
      // A proxy in a pod stays up for good: it must not outlive a test run cut short (--test-force-exit).
      const killChild = () => child.kill('SIGKILL');
      process.once('exit', killChild);
      let stdout = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
      const exited = new Promise<number | null>((resolve) =>
        child.once('exit', (code) => {
          process.off('exit', killChild);
          resolve(code);
        }),
      );
      try {
        await waitForRelease(cluster, release, 'serving', serving);
        await patchRelease(cluster, release, { spec: { transition: 'Deprecated' } });
      } catch (err) {
        child.kill('SIGKILL');
        throw err;
      }
      return { child, exited, stdout: () => stdout };
    }

    it('run by hand, exits 0 once its release is over, saying so', async () => {
      const proxy = await endedRelease('over', 8901, false);
      try {
        const code = await Promise.race([proxy.exited, delay(20_000, 'still running')]);
        assert.equal(code, 0, proxy.stdout());
        assert.equal(
          (await getRelease(cluster, 'over-v2'))?.status?.phase,
          'Deprecated',
          'it exits only once the phase is written',
        );
        assert.match(proxy.stdout(), /"msg":"release over-v2 is Deprecated; nothing left to serve; exiting"/);
      } finally {
        proxy.child.kill('SIGKILL');
      }
    });

    it('in a pod, stays once its release is over (a pod that exits is restarted), saying why', async () => {
      const proxy = await endedRelease('kept', 8902, true);
      try {
        await waitFor(
          () =>
            proxy
              .stdout()
              .includes(
                '"msg":"release kept-v2 is Deprecated; nothing left to serve; staying up until this pod\'s Deployment is deleted',
              ),
          'the proxy saying it stays',
          20_000,
        );
        const code = await Promise.race([proxy.exited, delay(1_500, 'still running')]);
        assert.equal(code, 'still running');
        proxy.child.kill('SIGTERM');
        assert.equal(await proxy.exited, 0);
      } finally {
        proxy.child.kill('SIGKILL');
      }
    });
  });
});
