// The dashboard in a real browser: headless Chromium (Debian's `chromium`) driven by playwright-core,
// against the fake apiserver with releases whose statuses the proxy's own reconcile wrote (stories.ts):
// one stepping, one a person paused, one rolled back. The list shows each with both shares and needs
// attention only for what needs a person; each release's charts draw its status.history (read back
// from the chart's elements and compared), in the browser's local time; a pause made through the API
// redraws the page without a reload; Promote and Abort, each confirmed, write what they say; a POST
// from another origin is refused; --read-only offers no action; no script error. It takes the screenshots of
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
import { paused, rolledBack, stepping } from './stories.ts';
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

const TIME_ZONE = 'Asia/Kolkata';
/** A time as the page must show it: the browser's local time (TIME_ZONE here), one format. */
const local = (iso: string) =>
  new Intl.DateTimeFormat('sv-SE', {
    timeZone: TIME_ZONE,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  }).format(new Date(iso));

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
  const now = new Date();
  const stories = { 'web-v2': stepping(now), 'shop-v3': paused(now), 'web-v4': rolledBack(now) };

  before(async () => {
    cluster = await startCluster(addresses.cidr);
    for (const [name, story] of Object.entries(stories)) {
      await createRelease(cluster, name, story.spec);
      await writeStatus(cluster, name, story.status);
    }
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
        message: 'step 2/3: canary weight 25%, pause 3m',
        count: 1,
        lastTimestamp: now,
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
          lastTransitionTime: now.toISOString(),
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
      viewport: { width: 1280, height: 1000 },
      timezoneId: TIME_ZONE,
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

  /** What a chart element carries: its data-* attributes, every one of the selector's. */
  const dataOf = (selector: string, attribute: string) =>
    page.locator(selector).evaluateAll((nodes, name) => nodes.map((node) => node.getAttribute(name)), attribute);
  const history = (name: keyof typeof stories) => {
    const kept = stories[name].status.history;
    assert.ok(kept, `${name} has a history`);
    return kept;
  };
  const openRelease = async (name: string) => {
    await page.goto(`${dashboard.url}#/release/${NAMESPACE}/${name}`);
    await page.getByRole('heading', { name: new RegExp(`CanaryRelease default/${name}`) }).waitFor({ timeout: 5_000 });
    await page.locator('svg[data-chart="weights"]').waitFor({ timeout: 5_000 });
  };

  it('the list: every release with phase, step, both shares, verdict, and attention only for what needs a person', async () => {
    await page.goto(dashboard.url);
    const row = (name: string) => page.locator(`tr[data-release="default/${name}"]`);
    await row('web-v2').waitFor({ timeout: 10_000 });
    const { achievedStep, achieved } = stories['web-v2'].status.ports[0]!;
    assert.ok(achievedStep && achieved);
    assert.match(
      (await row('web-v2').textContent()) ?? '',
      new RegExp(
        `Running.*2/3 \\(index 1\\).*web:80/TCP: 25% / 25% / 25% \\(${achievedStep.canary} of ${achievedStep.stable + achievedStep.canary}\\) this step · ${achieved.canaryPercent}% since the release began.*Inconclusive`,
      ),
    );
    // Step 2 is held past its pause while its analysis pools a quiet spell: the release working as written.
    assert.equal(
      await row('web-v2').locator('ul.attention').count(),
      0,
      'a healthy stepping release needs no attention',
    );
    assert.equal(await row('shop-v3').locator('ul.attention').count(), 0, "a person's pause needs no attention");
    assert.match((await row('web-v4').textContent()) ?? '', /Deprecated.*Failure: AnalysisFailed: rolled back/);
    assert.match((await row('api-v3').textContent()) ?? '', /Holding.*Failure: ServiceMissing/);
    await page.screenshot({ path: join(IMAGES, 'dashboard-list.png') });
    await page.getByLabel('needs attention only').check();
    await row('web-v2').waitFor({ state: 'detached', timeout: 5_000 });
    await row('web-v4').waitFor({ timeout: 5_000 });
    await page.getByLabel('needs attention only').uncheck();
    await page.getByLabel('Search').fill('web');
    await row('api-v3').waitFor({ state: 'detached', timeout: 5_000 });
    await page.getByLabel('Search').fill('');
  });

  it("a stepping release's page: its charts draw status.history, its shares and times are status's, in local time", async () => {
    await openRelease('web-v2');
    const kept = history('web-v2');
    const status = stories['web-v2'].status;
    // The weight: a point at each mark, as served then.
    assert.deepEqual(
      JSON.parse((await dataOf('svg[data-chart="weights"] polyline.served', 'data-points'))[0] ?? '[]'),
      kept.marks.map((mark) => [mark.at, mark.weights[0]?.served ?? 0]),
    );
    assert.deepEqual(await dataOf('svg[data-chart="weights"] line.step-mark', 'data-step'), [
      'step 1/3 (index 0)',
      'step 2/3 (index 1)',
    ]);
    // Each interval's achieved share, its verdict, and each signal's canary figure against its threshold.
    assert.deepEqual(
      await dataOf('svg[data-chart="weights"] circle.share', 'data-value'),
      kept.intervals.map((interval) => {
        const [counts] = interval.ports;
        return String(Math.round((counts!.canary / (counts!.stable + counts!.canary)) * 1000) / 10);
      }),
    );
    assert.deepEqual(
      await dataOf('svg[data-chart="verdicts"] rect', 'data-verdict'),
      kept.intervals.map((interval) => interval.verdict),
    );
    assert.deepEqual(
      JSON.parse((await dataOf('svg[data-signal="resetRate"] polyline[data-side="canary"]', 'data-points'))[0] ?? '[]'),
      kept.intervals.map((interval) => [
        interval.at,
        interval.signals?.find((signal) => signal.name === 'resetRate')?.canary,
      ]),
    );
    assert.deepEqual(await dataOf('svg[data-signal="resetRate"] line.limit', 'data-limit'), ['0.02']);
    // Each step held past its pause while the analysis pooled: drawn as such, and no attention.
    assert.equal(await page.locator('svg rect.hold[data-kind="analysis"]').count(), 2);
    assert.equal(await page.getByRole('heading', { name: 'Needs attention' }).count(), 0);
    // The intervals' counts are the ones status.ports[].achieved adds up.
    const sums = kept.intervals.reduce(
      (sum, interval) => ({
        stable: sum.stable + interval.ports[0]!.stable,
        canary: sum.canary + interval.ports[0]!.canary,
      }),
      { stable: 0, canary: 0 },
    );
    const { achieved, achievedStep } = status.ports[0]!;
    assert.deepEqual(sums, { stable: achieved!.stable, canary: achieved!.canary });
    const main = (await page.locator('main').textContent()) ?? '';
    const thisStep = `${achievedStep!.canaryPercent}% (${achievedStep!.canary} of ${achievedStep!.canary + achievedStep!.stable})`;
    assert.ok(
      main.includes(
        `Achieved this stepAchieved since the release beganweb:80/TCP25%25%${thisStep}${achieved!.canaryPercent}%`,
      ),
      'this step beside since the release began',
    );
    // Every time in the browser's local time, one format; no RFC 3339 left in any message.
    assert.doesNotMatch(main, /\d{4}-\d\d-\d\dT\d\d:\d\d/);
    assert.ok(
      main.includes(`Step 2/3 (index 1) · held: ${status.pause!.reason}, since ${local(status.pause!.since)}`),
      'status.pause, its time in local time',
    );
    const timed = history('web-v2').marks[1]!.pause!;
    assert.ok(
      main.includes(`step 1/3 (index 0) holds until ${local(timed.slice(timed.lastIndexOf(' ') + 1))}`),
      'a time in a message',
    );
    assert.match((await page.locator('#zone').textContent()) ?? '', /times in Asia\/(Kolkata|Calcutta), UTC\+05:30/);
    await page.getByRole('cell', { name: 'StepStarted' }).waitFor({ timeout: 5_000 });
    await page.screenshot({ path: join(IMAGES, 'dashboard-stepping.png') });
  });

  it('a change made through the API redraws the page without a reload: a pause, and the hold it starts', async () => {
    await patchRelease(cluster, 'web-v2', { spec: { paused: true } });
    await page.locator('#paused-badge').waitFor({ timeout: 2_000 });
    await page.getByRole('button', { name: 'Resume' }).waitFor({ timeout: 2_000 });
    // The proxy's next pass: the pause in status, a mark in the history.
    const kept = history('web-v2');
    const last = kept.marks.at(-1)!;
    const reason = 'paused (spec.paused); kubectl canary-l4 resume to go on';
    await writeStatus(cluster, 'web-v2', {
      pause: { reason, since: new Date().toISOString() },
      history: { ...kept, marks: [...kept.marks, { ...last, at: new Date().toISOString(), pause: reason }] },
    });
    await page.locator('svg rect.hold[data-kind="paused"]').waitFor({ timeout: 5_000 });
  });

  it("a paused release's page: the person's pause drawn over the step it holds", async () => {
    await openRelease('shop-v3');
    const holds = await page
      .locator('svg rect.hold')
      .evaluateAll((nodes) => nodes.map((node) => [node.getAttribute('data-kind'), node.getAttribute('data-from')]));
    const pausedAt = history('shop-v3').marks.find((mark) => mark.pause?.startsWith('paused (spec.paused)'))?.at;
    assert.deepEqual(holds.at(-1), ['paused', pausedAt]);
    assert.equal(await page.getByRole('heading', { name: 'Needs attention' }).count(), 0);
    await page.screenshot({ path: join(IMAGES, 'dashboard-paused.png') });
  });

  it("a rolled-back release's page: the failed intervals and the rollback's cause, after the release is over", async () => {
    await openRelease('web-v4');
    const transition = stories['web-v4'].status.transition!;
    assert.equal(
      await page.locator('svg[data-chart="weights"] line.transition').getAttribute('data-at'),
      history('web-v4').marks.find((mark) => mark.transition !== undefined)?.at,
    );
    assert.deepEqual((await dataOf('svg[data-chart="verdicts"] rect', 'data-verdict')).slice(-2), ['Failed', 'Failed']);
    assert.match(
      (await page.locator('#transition-cause').textContent()) ?? '',
      new RegExp(`Rolled back at .*: ${escapeRegExp(transition.message)}`),
    );
    assert.match(
      (await page.locator('ol.timeline').textContent()) ?? '',
      /rolled back: the canary failed 2 analysis interval\(s\) in a row: resetRate/,
    );
    await page.screenshot({ path: join(IMAGES, 'dashboard-rolled-back.png'), fullPage: true });
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
    await openRelease('web-v2');
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

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
