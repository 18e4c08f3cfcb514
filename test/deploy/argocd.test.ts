// deploy/argocd/: Argo CD's health check and resource actions for a CanaryRelease, run as Argo CD runs
// them (Lua 5.1, the base and table libraries only: test/deploy/argocd/run.lua) on releases the
// controller's own reconcile brought there (test/control/reconcile/world.ts), so that a change of
// what status says fails here. Each action is checked against the patch `kubectl canary-l4` sends
// for the same release (src/plugin/actions.ts): offered when the plugin takes it, the same object
// after it. The component renders into argocd-cm with kubectl kustomize.
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import {
  ACTIONS_KEY,
  ARGOCD_CM_PATCH,
  ARGOCD_DIR,
  actionNames,
  HEALTH_KEY,
  renderActions,
  renderArgocdCmPatch,
} from '../../build/argocd-cm.ts';
import type { CanaryRelease } from '../../src/api/release-types.ts';
import { type ActionResult, abort, pause, promote, resume } from '../../src/plugin/actions.ts';
import { applyMergePatch } from '../../src/control/service/patches.ts';
import { converge, NOW, options, webWorld, type World } from '../control/reconcile/world.ts';
import { ANALYSIS, at, MINUTE, resetting, settle, stepped } from '../control/reconcile/steps-world.ts';
import { requireTool } from '../support/process/required-tool.ts';

// Both probes before any suite: under --test-force-exit (npm test) a suite declared after a later
// top-level await is never run (test/deploy/manifests.test.ts lost its kustomize suite so).
const LUA = await requireTool('lua5.1');
const KUBECTL = await requireTool('kubectl');
const RUN_LUA = fileURLToPath(new URL('argocd/run.lua', import.meta.url));
const script = (path: string) => fileURLToPath(new URL(path, ARGOCD_DIR));

/** A JSON value as a Lua 5.1 expression for run.lua: arrays `A{...}`, nulls left out (Argo CD's Lua sees nil). */
function toLua(value: unknown): string {
  if (typeof value === 'string')
    return `"${value.replace(/[\\"]|[^ -\uffff]/g, (char) => `\\${char.charCodeAt(0).toString().padStart(3, '0')}`)}"`;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) {
    assert.ok(!value.includes(null), 'a null in a list has no Lua form');
    return `A{${value.map(toLua).join(',')}}`;
  }
  assert.ok(typeof value === 'object' && value !== null, `no Lua form for ${String(value)}`);
  const fields = Object.entries(value).filter(([, item]) => item !== null && item !== undefined);
  return `{${fields.map(([key, item]) => `[${toLua(key)}]=${toLua(item)}`).join(',')}}`;
}

/** What one of deploy/argocd's scripts returns for the release. */
function runLua(path: string, release: CanaryRelease): unknown {
  const output = execFileSync('lua5.1', [RUN_LUA, script(path)], {
    input: toLua(release),
    encoding: 'utf8',
    timeout: 10_000,
  });
  return JSON.parse(output);
}

const health = (release: CanaryRelease) => runLua('health.lua', release) as { status: string; message: string };
const discovery = (release: CanaryRelease) =>
  runLua('actions/discovery.lua', release) as Record<string, { disabled: boolean; displayName: string }>;

/** The release with a spec change the controller has not reconciled yet (the API server bumps the generation). */
function edited(world: World, spec: Partial<CanaryRelease['spec']>): World {
  const release = world.release!;
  return {
    ...world,
    release: {
      ...release,
      metadata: { ...release.metadata, generation: (release.metadata.generation ?? 1) + 1 },
      spec: { ...release.spec, ...spec },
    },
  };
}

/** Reconciled until it rests, `ms` after the fixtures' NOW. */
const rested = (world: World, ms: number) => settle(world, ms).world;

/** The releases of the real code path, by what Argo CD should make of them. */
function releases() {
  const running = rested(stepped(), 0);
  const waiting = rested(running, 2 * MINUTE);
  const paused = rested(edited(running, { paused: true }), MINUTE);
  const adopting = converge(
    edited(waiting, { transition: 'Adopted' }),
    options({ now: new Date(NOW.getTime() + 3 * MINUTE), handBackGraceMs: MINUTE }),
  ).world;
  const adopted = rested(edited(waiting, { transition: 'Adopted' }), 3 * MINUTE);
  const aborted = rested(edited(waiting, { transition: 'Deprecated', transitionReason: 'a bad build' }), 3 * MINUTE);
  let analysed = rested(stepped({ analysis: ANALYSIS }), 0);
  analysed = rested({ ...analysed, evidence: resetting(30_000) }, 30_000);
  // The second failed interval: the transition is recorded, the Services not handed back yet (2 steps in).
  const rollingBack = converge({ ...analysed, evidence: resetting(60_000) }, at(60_000), 2).world;
  const rolledBack = rested({ ...analysed, evidence: resetting(60_000) }, 60_000);
  const invalid = rested(stepped({ analysis: { interval: '0s' } }), 0);
  const fixed = rested(webWorld(), 0);
  return { running, waiting, paused, adopting, adopted, aborted, rollingBack, rolledBack, invalid, fixed };
}

describe('deploy/argocd on releases the reconcile made', LUA, () => {
  const worlds = releases();
  const of = (name: keyof typeof worlds) => {
    const release = worlds[name].release;
    assert.ok(release?.status, `${name}: a release with a status`);
    return release;
  };

  it('the worlds are what their names say', () => {
    const phases = Object.fromEntries(Object.keys(worlds).map((name) => [name, of(name as never).status!.phase]));
    assert.deepEqual(phases, {
      running: 'Running',
      waiting: 'Running',
      paused: 'Running',
      adopting: 'Adopting',
      adopted: 'Adopted',
      aborted: 'Deprecated',
      rollingBack: 'Deprecating',
      rolledBack: 'Deprecated',
      invalid: 'Holding',
      fixed: 'Running',
    });
    assert.equal(of('rollingBack').status!.transition?.reason, 'AnalysisFailed');
    assert.equal(of('rolledBack').status!.transition?.reason, 'AnalysisFailed');
    assert.equal(of('aborted').status!.transition?.reason, 'Requested');
  });

  it('health: Progressing while a step runs or the Services are handed over, and while the controller has not seen a change', () => {
    assert.deepEqual(health(of('running')), { status: 'Progressing', message: of('running').status!.pause!.reason });
    assert.match(health(of('running')).message, /step 1\/3 \(index 0\) holds until 2025-01-01T00:02:00/);
    assert.equal(health(of('adopting')).status, 'Progressing');
    assert.match(health(of('adopting')).message, /^adopting: /);
    assert.deepEqual(health(edited(worlds.waiting, { paused: true }).release!), {
      status: 'Progressing',
      message: 'waiting for the controller to observe generation 2',
    });
    assert.equal(health({ ...of('running'), status: undefined }).status, 'Progressing');
  });

  it('health: Suspended while a step waits for a promotion or a person paused it, and a release without steps waits to be adopted', () => {
    assert.deepEqual(health(of('waiting')), {
      status: 'Suspended',
      message: 'step 2/3 (index 1) waits for a promotion: kubectl canary-l4 promote (it writes spec.promotedStep: 1)',
    });
    assert.deepEqual(health(of('paused')), {
      status: 'Suspended',
      message: 'paused (spec.paused); kubectl canary-l4 resume to go on',
    });
    assert.deepEqual(health(of('fixed')), {
      status: 'Suspended',
      message: 'serving web:80=10%: promote-full adopts it, abort rolls it back',
    });
  });

  it('health: Healthy once adopted; Degraded when rolled back or failing, with the Failure message', () => {
    assert.equal(health(of('adopted')).status, 'Healthy');
    assert.match(health(of('adopted')).message, /^adopted: /);
    const failure = of('rolledBack').status?.conditions?.find((item) => item.type === 'Failure');
    assert.ok(failure, 'a Failure condition');
    assert.deepEqual(health(of('rolledBack')), {
      status: 'Degraded',
      message: `AnalysisFailed: ${failure.message}`,
    });
    assert.deepEqual(health(of('rollingBack')), health(of('rolledBack')), 'Degraded from the rollback on');
    assert.match(failure.message, /failed 2 analysis interval\(s\) in a row: resetRate: canary 30 of 100/);
    assert.deepEqual(health(of('aborted')), {
      status: 'Degraded',
      message: `rolled back (Requested): ${of('aborted').status!.transition!.message}`,
    });
    assert.match(health(of('aborted')).message, /a bad build/);
    assert.equal(health(of('invalid')).status, 'Degraded');
    assert.match(health(of('invalid')).message, /^InvalidRelease: .*spec.analysis.interval: "0s" is not a duration/);
  });

  // Each action as the plugin builds it; abort with the reason the Lua gives.
  const PLUGIN: Record<string, (release: CanaryRelease) => ActionResult> = {
    promote: (release) => promote(release, false),
    'promote-full': (release) => promote(release, true),
    pause,
    resume,
    abort: (release) => abort(release, 'aborted in Argo CD'),
  };
  /** An action the plugin takes that would change nothing: Argo CD offers it disabled. */
  const noOp = (name: string, release: CanaryRelease) =>
    (name === 'pause' && release.spec?.paused === true) || (name === 'resume' && release.spec?.paused !== true);

  it('the actions are the five of kubectl canary-l4, each a folder of deploy/argocd/actions/', () => {
    assert.deepEqual(actionNames(), Object.keys(PLUGIN).sort());
  });

  for (const name of Object.keys(worlds) as (keyof typeof worlds)[]) {
    it(`actions on the ${name} release: offered when the plugin takes them, and the same object after`, () => {
      const release = of(name);
      const offered = discovery(release);
      assert.deepEqual(Object.keys(offered).sort(), Object.keys(PLUGIN).sort());
      for (const [action, plugin] of Object.entries(PLUGIN)) {
        const result = plugin(release);
        const disabled = !result.ok || noOp(action, release);
        assert.equal(offered[action]?.disabled, disabled, `${action} disabled: ${result.ok || result.error}`);
        if (!result.ok) continue;
        assert.equal(result.action.type, 'merge');
        const expected = JSON.parse(JSON.stringify(applyMergePatch(release, result.action.patch)));
        assert.deepEqual(runLua(`actions/${action}/action.lua`, release), expected, action);
      }
    });
  }

  it('offers nothing but resume on a paused release, nothing at all once it is over', () => {
    const enabled = (name: keyof typeof worlds) =>
      Object.entries(discovery(of(name)))
        .filter(([, action]) => !action.disabled)
        .map(([action]) => action)
        .sort();
    assert.deepEqual(enabled('paused'), ['abort', 'promote', 'promote-full', 'resume']);
    assert.deepEqual(enabled('waiting'), ['abort', 'pause', 'promote', 'promote-full']);
    assert.deepEqual(enabled('fixed'), ['abort', 'pause', 'promote-full']);
    for (const over of ['adopting', 'adopted', 'aborted', 'rollingBack', 'rolledBack'] as const)
      assert.deepEqual(enabled(over), []);
  });
});

describe('deploy/argocd/argocd-cm-patch.yaml', () => {
  it('is what build/argocd-cm.ts renders from the Lua (run npm run deploy:argocd)', () => {
    assert.equal(readFileSync(ARGOCD_CM_PATCH, 'utf8'), renderArgocdCmPatch());
  });

  it('holds the actions in the format Argo CD reads: discovery.lua, and definitions of name and action.lua', () => {
    const actions = parse(renderActions()) as {
      'discovery.lua': string;
      definitions: { name: string; 'action.lua': string }[];
    };
    assert.equal(actions['discovery.lua'], readFileSync(new URL('actions/discovery.lua', ARGOCD_DIR), 'utf8'));
    assert.deepEqual(
      actions.definitions.map((definition) => definition.name),
      actionNames(),
    );
  });
});

describe('kubectl kustomize of the deploy/argocd component', KUBECTL, () => {
  it("patches the health check and the actions into Argo CD's argocd-cm, keeping its other keys", async () => {
    const overlay = await mkdtemp(join(tmpdir(), 'argocd-overlay-'));
    const home = await mkdtemp(join(tmpdir(), 'kustomize-home-'));
    try {
      await writeFile(
        join(overlay, 'argocd-cm.yaml'),
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: argocd-cm, namespace: argocd}\ndata: {url: https://argocd.example}\n',
      );
      // kustomize takes relative paths only.
      const component = relative(overlay, fileURLToPath(ARGOCD_DIR));
      await writeFile(join(overlay, 'kustomization.yaml'), `resources: [argocd-cm.yaml]\ncomponents: [${component}]\n`);
      const { stdout } = await promisify(execFile)('kubectl', ['kustomize', overlay], {
        env: { ...process.env, HOME: home },
        timeout: 30_000,
      });
      const objects = parseAllDocuments(stdout).map((document) => document.toJS());
      assert.equal(objects.length, 1);
      const { metadata, data } = objects[0] as { metadata: { namespace: string }; data: Record<string, string> };
      assert.equal(metadata.namespace, 'argocd');
      assert.deepEqual(Object.keys(data).sort(), [ACTIONS_KEY, HEALTH_KEY, 'url'].sort());
      assert.equal(data[HEALTH_KEY], readFileSync(new URL('health.lua', ARGOCD_DIR), 'utf8'));
      assert.equal(data[ACTIONS_KEY], renderActions());
    } finally {
      await rm(overlay, { recursive: true, force: true });
      await rm(home, { recursive: true, force: true });
    }
  });
});
