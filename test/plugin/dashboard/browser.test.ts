// The dashboard in a real browser: headless Chromium (Debian's `chromium`) driven by playwright-core,
// against the fake apiserver with running releases. The list shows them; a pause made through the API
// shows without a reload; Promote and Abort, each confirmed, write what they say; a POST from another
// origin is refused; --read-only offers no action; no script error. It takes the screenshots of
// docs/dashboard.md: into a temporary folder, so that npm test leaves the checkout as it was, and into
// docs/images/ with DOCS_SCREENSHOTS=1 (`DOCS_SCREENSHOTS=1 node --test test/plugin/dashboard/browser.test.ts`).

import assert from 'node:assert/strict';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { GROUP, VERSION } from '../../../src/api/names.ts';
import type { CanaryRelease } from '../../../src/api/release-types.ts';
import type { Dashboard } from '../../../src/plugin/dashboard/server.ts';
import { startDashboards, writeStatus } from './dashboards.ts';
import { suiteTimeout } from '../../support/cluster/api-under-test.ts';

import { requireTool } from '../../support/process/required-tool.ts';
import {
  createRelease,
  getRelease,
  NAMESPACE,
  patchRelease,
  startCluster,
  type Cluster,
} from '../../support/cluster/release-cluster.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { waitFor } from '../../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const IMAGES =
  process.env.DOCS_SCREENSHOTS === '1'
    ? fileURLToPath(new URL('../../../docs/images/', import.meta.url))
    : await mkdtemp(join(tmpdir(), 'canary-l4-dashboard-screenshots-'));
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

const SIGNALS = [
  {
    name: 'connectErrorRate',
    canary: 0.004,
    stable: 0.003,
    threshold: 'max 0.01, maxAboveStable 0.005',
    verdict: 'Passed',
    counts: { canary: { count: 2, of: 512 }, stable: { count: 14, of: 4630 } },
  },
  {
    name: 'resetRate',
    canary: 0,
    stable: 0.001,
    threshold: 'max 0.05',
    verdict: 'Passed',
    counts: { canary: { count: 0, of: 498 }, stable: { count: 5, of: 4512 } },
  },
];

const port = (weight: number, canary: number, stable: number) => ({
  service: 'web',
  port: 80,
  protocol: 'TCP',
  proxyPort: 9100,
  weight,
  served: weight,
  achieved: { stable, canary, canaryPercent: Math.round((canary / (stable + canary)) * 1000) / 10 },
  // Half of the stable side's connections mirrored to the canary, nearly all compared equal.
  mirror: {
    mirrored: stable / 2,
    compared: stable / 2 - 4,
    equal: stable / 2 - 5,
    different: 1,
    missing: 3,
    dropped: 1,
  },
});

describe('kubectl canary-l4 dashboard in a browser', {
  ...(await requireTool('chromium')),
  timeout: suiteTimeout(90_000),
}, () => {
  let cluster: Cluster;
  let dashboard: Dashboard;
  let readOnly: Dashboard;
  let profile: string;
  let browser: BrowserContext;
  let page: Page;
  const errors: string[] = [];

  before(async () => {
    cluster = await startCluster(addresses.cidr);
    await createRelease(cluster, 'web-v2', {
      services: [{ service: 'web', ports: [{ port: 80 }] }],
      steps: [
        { weight: 10, pause: { duration: '2m' } },
        { weight: 50, pause: {} },
        { weight: 100, pause: { duration: '5m' } },
      ],
      analysis: {},
    });
    await writeStatus(cluster, 'web-v2', {
      phase: 'Running',
      step: '1/3',
      currentStep: 0,
      stepStartedAt: new Date().toISOString(),
      ports: [port(10, 52, 460)],
      analysis: {
        at: new Date().toISOString(),
        intervalMs: 10_000,
        replicas: 2,
        samples: 512,
        verdict: 'Passed',
        confidence: 0.95,
        signals: SIGNALS,
        failures: 0,
        message: 'every signal within its threshold',
      },
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'Serving',
          message: '',
          lastTransitionTime: new Date().toISOString(),
          observedGeneration: 1,
        },
        {
          type: 'Failure',
          status: 'False',
          reason: 'None',
          message: '',
          lastTransitionTime: new Date().toISOString(),
          observedGeneration: 1,
        },
      ],
    });
    await cluster.core.createNamespacedEvent({
      namespace: NAMESPACE,
      body: {
        metadata: { name: 'web-v2.step' },
        involvedObject: {
          apiVersion: `${GROUP}/${VERSION}`,
          kind: 'CanaryRelease',
          name: 'web-v2',
          namespace: NAMESPACE,
        },
        type: 'Normal',
        reason: 'StepStarted',
        message: 'step 1/3: canary weight 10%, pause 2m',
        count: 1,
        lastTimestamp: new Date(),
      },
    });
    await createRelease(cluster, 'api-v3', { services: [{ service: 'api', ports: [{ port: 443 }] }] });
    await writeStatus(cluster, 'api-v3', {
      phase: 'Holding',
      ports: [],
      conditions: [
        {
          type: 'Failure',
          status: 'True',
          reason: 'ServiceMissing',
          message: 'spec.services[0]: no Service api in namespace default',
          lastTransitionTime: new Date().toISOString(),
          observedGeneration: 1,
        },
      ],
    });
    ({ dashboard, readOnly } = await startDashboards(cluster));
    profile = await mkdtemp(join(tmpdir(), 'dashboard-chromium-'));
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: '/usr/bin/chromium',
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1200, height: 900 },
    });
    page = browser.pages()[0] ?? (await browser.newPage());
    page.on('pageerror', (err) => errors.push(err.message));
  });

  after(async () => {
    await browser?.close();
    await dashboard?.close();
    await readOnly?.close();
    await cluster?.stop();
    if (profile !== undefined) await rm(profile, { recursive: true, force: true });
    if (process.env.DOCS_SCREENSHOTS !== '1') await rm(IMAGES, { recursive: true, force: true });
  });

  const release = async (name: string): Promise<CanaryRelease> => {
    const found = await getRelease(cluster, name);
    assert.ok(found, `${name} exists`);
    return found;
  };

  it('the list: every release with phase, step, split, verdict and what needs attention', async () => {
    await page.goto(dashboard.url);
    const web = page.locator('tr[data-release="default/web-v2"]');
    await web.waitFor({ timeout: 10_000 });
    assert.match(
      (await web.textContent()) ?? '',
      /Running[\s\S]*1\/3[\s\S]*web:80\/TCP: 10% \/ 10% \/ 10.2%[\s\S]*Passed/,
    );
    const api = page.locator('tr[data-release="default/api-v3"]');
    assert.match((await api.textContent()) ?? '', /Holding[\s\S]*Failure: ServiceMissing/);
    await page.screenshot({ path: join(IMAGES, 'dashboard-list.png') });
    await page.getByLabel('needs attention only').check();
    await web.waitFor({ state: 'detached', timeout: 5_000 });
    await page.getByLabel('needs attention only').uncheck();
    await page.getByLabel('Search').fill('web');
    await api.waitFor({ state: 'detached', timeout: 5_000 });
    await page.getByLabel('Search').fill('');
  });

  it('the release page: steps, split chart, analysis, conditions; a pause via the API shows without a reload', async () => {
    await page.getByRole('link', { name: 'default/web-v2' }).click();
    await page.getByRole('heading', { name: /CanaryRelease default\/web-v2/ }).waitFor({ timeout: 5_000 });
    assert.match((await page.locator('main').textContent()) ?? '', /connectErrorRate[\s\S]*2 of 512[\s\S]*14 of 4630/);
    await page.getByRole('cell', { name: 'StepStarted' }).waitFor({ timeout: 5_000 });
    // The proxy's next passes: step 2 at 50 %, the achieved share catching up (the chart's lines).
    for (const [canary, stable] of [
      [90, 520],
      [260, 690],
      [480, 860],
      [700, 1060],
    ] as const) {
      await writeStatus(cluster, 'web-v2', { step: '2/3', currentStep: 1, ports: [port(50, canary, stable)] });
      await new Promise((resolve) => setTimeout(resolve, 400));
    }
    await page.locator('ol.steps li.current', { hasText: 'Step 2' }).waitFor({ timeout: 5_000 });
    await page.locator('svg polyline.achieved').waitFor({ timeout: 5_000 });
    assert.match(
      (await page.locator('main').textContent()) ?? '',
      /Mirrored to the canary[\s\S]*web:80\/TCP530526525131/,
    );
    await patchRelease(cluster, 'web-v2', { spec: { paused: true } });
    await page.locator('#paused-badge').waitFor({ timeout: 2_000 });
    await page.getByRole('button', { name: 'Resume' }).waitFor({ timeout: 2_000 });
    await page.screenshot({ path: join(IMAGES, 'dashboard-release.png'), fullPage: true });
  });

  it('refuses a POST from another origin (a page of another site, as in a cross-site request)', async () => {
    const site = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end('<!doctype html><title>another site</title>');
    });
    site.listen(0, '127.0.0.1');
    await once(site, 'listening');
    const other = await browser.newPage();
    try {
      await other.goto(`http://127.0.0.1:${(site.address() as AddressInfo).port}/`);
      const target = `${dashboard.url}api/releases/default/web-v2/resume`;
      // no-cors: the browser sends it (as a form would) and hides the answer; the server must refuse it.
      await other.evaluate(
        (url) => fetch(url, { method: 'POST', mode: 'no-cors', body: '{}' }).then(() => undefined),
        target,
      );
    } finally {
      await other.close();
      site.close();
    }
    assert.equal((await release('web-v2')).spec?.paused, true, 'still paused');
  });

  it('Promote and Abort, each confirmed, do what they say', async () => {
    await page.getByRole('button', { name: 'Promote', exact: true }).click();
    const dialog = page.getByRole('dialog');
    assert.match(
      (await dialog.textContent()) ?? '',
      /step 2\/3 \(index 1\) promoted \(spec.promotedStep: 1\): its pause and analysis gate are over/,
    );
    await page.getByRole('button', { name: 'Confirm: Promote' }).click();
    await waitFor(async () => (await release('web-v2')).spec?.promotedStep === 1, 'promotedStep 1', 5_000);
    await page.getByRole('button', { name: 'Abort' }).click();
    assert.match((await dialog.textContent()) ?? '', /every Service goes back to the stable version/);
    await page.getByLabel('Reason (optional)').fill('latency on checkout');
    await page.getByRole('button', { name: 'Confirm: Abort' }).click();
    await waitFor(
      async () => {
        const spec = (await release('web-v2')).spec;
        return spec?.transition === 'Deprecated' && spec.transitionReason === 'latency on checkout';
      },
      'transition Deprecated',
      5_000,
    );
    await page.getByRole('status').filter({ hasText: 'aborting' }).waitFor({ timeout: 5_000 });
  });

  it('--read-only offers no action', async () => {
    const ro = await browser.newPage();
    ro.on('pageerror', (err) => errors.push(err.message));
    await ro.goto(`${readOnly.url}#/release/default/api-v3`);
    await ro.getByRole('heading', { name: /CanaryRelease default\/api-v3/ }).waitFor({ timeout: 5_000 });
    assert.equal(await ro.getByRole('button').count(), 0);
    await ro.close();
  });

  it('no script error in any page', () => {
    assert.deepEqual(errors, []);
  });
});
