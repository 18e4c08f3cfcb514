// The dashboard's server over HTTP against the fake apiserver: the list as JSON, a change made
// elsewhere (a kubectl-like patch) on the event stream within a second, the actions' guards (token,
// Origin, Host, --read-only), a promote that patches the release, and a forbidden patch that answers
// with the API's words.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { suiteTimeout } from '../../support/cluster/api-under-test.ts';
import { GROUP, PLURAL, VERSION } from '../../../src/api/names.ts';

import { PLUGIN } from '../../support/process/kubectl-plugin.ts';
import { startDashboard, TOKEN_HEADER, type Dashboard } from '../../../src/plugin/dashboard/server.ts';
import type { ReleaseDetail } from '../../../src/plugin/dashboard/view-model.ts';
import {
  createRelease,
  getRelease,
  patchRelease,
  startCluster,
  type Cluster,
} from '../../support/cluster/release-cluster.ts';
import { startDashboards, writeStatus } from './dashboards.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { waitFor } from '../../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const STEPS = [
  { weight: 10, pause: {} },
  { weight: 50, pause: {} },
];

interface Answer {
  readonly status: number;
  readonly body: string;
}

/** One request as a browser (or another site) would send it. */
function send(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body = '',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, url), { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const tokenOf = (html: string) => /name="canary-l4-token" content="([^"]+)"/.exec(html)?.[1] ?? '';

/** The releases of each `releases` event, as they arrive. */
function subscribe(url: string): {
  next(test: (releases: ReleaseDetail[]) => boolean, ms: number): Promise<ReleaseDetail[]>;
  close(): void;
} {
  const seen: ReleaseDetail[][] = [];
  const waiting = new Set<() => void>();
  const req = request(new URL('/api/events', url), { headers: { accept: 'text/event-stream' } }, (res) => {
    let buffer = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffer += chunk;
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const message = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = message.split('\n').find((line) => line.startsWith('data: '));
        if (data !== undefined) seen.push((JSON.parse(data.slice(6)) as { releases: ReleaseDetail[] }).releases);
        for (const wake of waiting) wake();
      }
    });
  });
  req.on('error', () => {});
  req.end();
  return {
    next: (test, ms) =>
      new Promise((resolve, reject) => {
        let from = 0;
        const check = () => {
          for (; from < seen.length; from++)
            if (test(seen[from]!)) {
              clearTimeout(timer);
              waiting.delete(check);
              resolve(seen[from]!);
              return;
            }
        };
        const timer = setTimeout(() => {
          waiting.delete(check);
          reject(new Error(`no matching event within ${ms} ms`));
        }, ms);
        waiting.add(check);
        check();
      }),
    close: () => req.destroy(),
  };
}

describe('kubectl canary-l4 dashboard: the server', { timeout: suiteTimeout(60_000) }, () => {
  let cluster: Cluster;
  let dashboard: Dashboard;
  let readOnly: Dashboard;
  let token: string;

  before(async () => {
    cluster = await startCluster(addresses.cidr);
    await createRelease(cluster, 'web-v2', { services: [{ service: 'web', ports: [{ port: 80 }] }], steps: STEPS });
    await writeStatus(cluster, 'web-v2', {
      phase: 'Running',
      step: '1/2',
      currentStep: 0,
      ports: [{ service: 'web', port: 80, protocol: 'TCP', proxyPort: 9100, weight: 10, served: 10 }],
    });
    ({ dashboard, readOnly } = await startDashboards(cluster));
    token = tokenOf((await send(dashboard.url, 'GET', '/')).body);
  });

  after(async () => {
    await dashboard?.close();
    await readOnly?.close();
    await cluster?.stop();
  });

  const post = (path: string, headers: Record<string, string>, body = '{}') =>
    send(dashboard.url, 'POST', path, { 'content-type': 'application/json', ...headers }, body);
  const own = () => ({ origin: dashboard.url.replace(/\/$/, ''), [TOKEN_HEADER]: token });

  it('serves the page with a token, and the list as JSON', async () => {
    assert.ok(token.length >= 32, 'the page carries a token');
    const list = JSON.parse((await send(dashboard.url, 'GET', '/api/releases')).body) as { releases: ReleaseDetail[] };
    assert.deepEqual(
      list.releases.map((release) => [release.key, release.phase, release.step, release.ports[0]?.configured]),
      [['default/web-v2', 'Running', '1/2 (index 0)', 10]],
    );
    for (const asset of ['/app.js', '/charts.js', '/app.css'])
      assert.equal((await send(dashboard.url, 'GET', asset)).status, 200);
  });

  it("serves a release's story from its status.history: null before there is one, 404 for no such release", async () => {
    const path = '/api/releases/default/web-v2/story';
    assert.deepEqual(await send(dashboard.url, 'GET', path), { status: 200, body: 'null' });
    const at = new Date().toISOString();
    const mark = { at, phase: 'Running', weights: [{ port: 'web:80/TCP', served: 10 }], step: 0 };
    await writeStatus(cluster, 'web-v2', { history: { marks: [mark], intervals: [] } });
    await waitFor(async () => (await send(dashboard.url, 'GET', path)).body !== 'null', 'the story', 5_000);
    const story = JSON.parse((await send(dashboard.url, 'GET', path)).body) as { from: string; weights: unknown };
    assert.equal(story.from, at);
    assert.deepEqual(story.weights, [{ port: 'web:80/TCP', points: [{ at, value: 10 }] }]);
    assert.equal((await send(dashboard.url, 'GET', '/api/releases/default/nope/story')).status, 404);
  });

  it('streams a change made elsewhere within a second', async () => {
    const events = subscribe(dashboard.url);
    try {
      await events.next((releases) => releases.length === 1, 5_000);
      await patchRelease(cluster, 'web-v2', { spec: { paused: true } });
      const changed = await events.next((releases) => releases[0]?.paused === true, 1_000);
      assert.ok(changed[0]?.actions.some((action) => action.action === 'resume'));
    } finally {
      events.close();
      await patchRelease(cluster, 'web-v2', { spec: { paused: false } });
    }
  });

  it('refuses a POST without the token, from another origin, or naming another Host: 403', async () => {
    const path = '/api/releases/default/web-v2/promote';
    const before = (await getRelease(cluster, 'web-v2'))?.metadata.resourceVersion;
    const answers = [
      await post(path, { origin: own().origin }),
      await post(path, { ...own(), [TOKEN_HEADER]: `${token.slice(0, -1)}${token.endsWith('x') ? 'y' : 'x'}` }),
      await post(path, { ...own(), origin: 'http://evil.example' }),
      await post(path, { [TOKEN_HEADER]: token }),
      await post(path, { ...own(), host: 'evil.example', origin: 'http://evil.example' }),
    ];
    assert.deepEqual(
      answers.map((answer) => answer.status),
      [403, 403, 403, 403, 403],
    );
    assert.match(answers[2]!.body, /from http:\/\/evil.example is not this dashboard's own/);
    assert.equal((await getRelease(cluster, 'web-v2'))?.metadata.resourceVersion, before, 'nothing was written');
  });

  it('--read-only: refuses every POST, even with its token', async () => {
    const html = (await send(readOnly.url, 'GET', '/')).body;
    assert.match(html, /name="canary-l4-read-only" content="true"/);
    const answer = await send(readOnly.url, 'POST', '/api/releases/default/web-v2/promote', {
      origin: readOnly.url.replace(/\/$/, ''),
      [TOKEN_HEADER]: tokenOf(html),
    });
    assert.equal(answer.status, 403);
    assert.match(answer.body, /read-only/);
  });

  it('a promote patches the release as the CLI does; a forbidden patch shows the API answer', async () => {
    const answer = await post('/api/releases/default/web-v2/promote', own());
    assert.equal(answer.status, 200, answer.body);
    assert.match(answer.body, /step 1\/2 \(index 0\) promoted \(spec.promotedStep: 0\)/);
    assert.equal((await getRelease(cluster, 'web-v2'))?.spec?.promotedStep, 0);
    cluster.fake.faults.failNext({
      verb: 'patch',
      resource: 'canaryreleases',
      code: 403,
      message: 'canaryreleases.canary-l4.io "web-v2" is forbidden: User "alice" cannot patch resource',
    });
    const refused = await post('/api/releases/default/web-v2/pause', own());
    assert.equal(refused.status, 403);
    assert.match(refused.body, /User \\"alice\\" cannot patch resource/);
    assert.notEqual((await getRelease(cluster, 'web-v2'))?.spec?.paused, true);
  });

  it('set-weight: a release without steps, as SERVICE:PORT=N; a bad one is refused with what is wrong', async () => {
    await createRelease(cluster, 'api-v3', { services: [{ service: 'api', ports: [{ port: 443 }] }] });
    await waitFor(
      async () => JSON.parse((await send(dashboard.url, 'GET', '/api/releases')).body).releases.length === 2,
      'api-v3 listed',
    );
    const bad = await post('/api/releases/default/api-v3/set-weight', own(), JSON.stringify({ target: 'api:443=250' }));
    assert.equal(bad.status, 400);
    assert.match(bad.body, /the weight \\"250\\" must be a whole percentage 0-100/);
    const set = await post('/api/releases/default/api-v3/set-weight', own(), JSON.stringify({ target: 'api:443=25' }));
    assert.equal(set.status, 200, set.body);
    assert.equal((await getRelease(cluster, 'api-v3'))?.spec?.services?.[0]?.ports?.[0]?.config?.weight, 25);
  });

  it('a kubeconfig that may not list CanaryReleases: the dashboard does not start, and says what the API said', async () => {
    cluster.fake.faults.failNext({
      verb: 'list',
      resource: 'canaryreleases',
      code: 403,
      message: 'canaryreleases.canary-l4.io is forbidden: User "bob" cannot list resource',
    });
    await assert.rejects(
      startDashboard({
        kubeConfig: cluster.api.kubeConfig,
        namespace: 'default',
        port: 0,
        address: '127.0.0.1',
        readOnly: true,
      }),
      /cannot list CanaryReleases in namespace default: 403 .*User "bob" cannot list resource/,
    );
  });

  it('--all-namespaces lists every namespace; one namespace neither shows nor acts on another', async () => {
    await cluster.core.createNamespace({ body: { metadata: { name: 'team-b' } } });
    await cluster.custom.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: 'team-b',
      plural: PLURAL,
      body: {
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'CanaryRelease',
        metadata: { name: 'db-v9' },
        spec: { services: [{ service: 'db', ports: [{ port: 5432 }] }] },
      },
    });
    const everywhere = await startDashboard({
      kubeConfig: cluster.api.kubeConfig,
      namespace: undefined,
      port: 0,
      address: '127.0.0.1',
      readOnly: true,
    });
    try {
      const keys = async (url: string) =>
        (JSON.parse((await send(url, 'GET', '/api/releases')).body) as { releases: ReleaseDetail[] }).releases.map(
          (release) => release.key,
        );
      await waitFor(async () => (await keys(everywhere.url)).includes('team-b/db-v9'), 'team-b/db-v9 listed');
      assert.deepEqual(await keys(everywhere.url), ['default/api-v3', 'default/web-v2', 'team-b/db-v9']);
      assert.deepEqual(await keys(dashboard.url), ['default/api-v3', 'default/web-v2']);
      const elsewhere = await post('/api/releases/team-b/db-v9/pause', own());
      assert.equal(elsewhere.status, 404);
      assert.match(elsewhere.body, /shows namespace default only/);
    } finally {
      await everywhere.close();
    }
  });

  it('a port in use: the dashboard does not start, and says so', async () => {
    const taken = Number(new URL(dashboard.url).port);
    await assert.rejects(
      startDashboard({
        kubeConfig: cluster.api.kubeConfig,
        namespace: 'default',
        port: taken,
        address: '127.0.0.1',
        readOnly: true,
      }),
      new RegExp(`cannot serve on 127.0.0.1:${taken}: .*EADDRINUSE`),
    );
  });

  it('kubectl canary-l4 dashboard: prints its address, serves, and stops on Ctrl-C', async () => {
    const child = spawn(process.execPath, [PLUGIN, 'dashboard', '--port', '0', '--read-only'], {
      env: { ...process.env, KUBECONFIG: cluster.api.kubeconfigPath },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      let printed = '';
      child.stdout.setEncoding('utf8').on('data', (chunk: string) => (printed += chunk));
      await waitFor(
        () => /http:\/\/127\.0\.0\.1:\d+\//.test(printed) || child.exitCode !== null,
        'the dashboard to print its address',
        20_000,
      );
      const url = /http:\/\/127\.0\.0\.1:\d+\//.exec(printed)?.[0];
      assert.ok(url, `the address printed: ${printed}`);
      assert.match(printed, /\(namespace default, read-only\); Ctrl-C stops it/);
      assert.equal((await send(url, 'GET', '/')).status, 200);
      const exited = once(child, 'exit');
      child.kill('SIGINT');
      const [code] = await Promise.race([
        exited,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no exit within 10 s')), 10_000)),
      ]);
      assert.equal(code, 0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });
});
