// One step numbering on every surface (issue 46): a release at its second step of three, read where
// a user meets it — status, `kubectl get` (the STEP column) and `kubectl describe` (the raw fields),
// `kubectl canary-l4 status` and `promote` (with the patch it prints), the Events, the metric, the
// dashboard's row — each must name the same step: counted from 1 (2 of 3), and wherever an index
// is shown or asked for, the index beside it (1, what spec.promotedStep and status.currentStep hold).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { readStep } from '../../../src/api/steps.ts';
import { releaseRow } from '../../../src/plugin/dashboard/view-model.ts';
import { suiteTimeout } from '../../support/cluster/api-under-test.ts';
import { kubectlFor, type Kubectl } from '../../support/cluster/api-fixtures.ts';
import { loopbackRange } from '../../support/net/loopback-ranges.ts';
import { waitFor } from '../../support/wait.ts';
import { pluginFor, type Plugin } from '../../support/process/kubectl-plugin.ts';
import {
  createService,
  getRelease,
  NAMESPACE,
  serving,
  startBackends,
  startCluster,
  startProxy,
  waitForRelease,
  type Backends,
  type Cluster,
  type InProcessProxy,
} from '../../support/cluster/release-cluster.ts';
import { freePortBlock } from '../../support/net/free-ports.ts';

const PORT_BASE = await freePortBlock(10);

/** A step as a surface names it: its number from 1, the count, and the index it shows (if it does). */
interface Named {
  readonly number: number;
  readonly count: number;
  readonly index?: number;
}

/** `2/3 (index 1)` (and a `step ` before it, or not) → 2 of 3, index 1. */
function named(text: string | undefined): Named {
  const step = readStep(text?.replace(/^step /, ''));
  assert.ok(step !== undefined, `a step in ${JSON.stringify(text)}`);
  const index = /\(index (\d+)\)/.exec(text ?? '')?.[1];
  return { ...step, ...(index === undefined ? {} : { index: Number(index) }) };
}

describe('one step numbering on every surface', { timeout: suiteTimeout(90_000) }, () => {
  let cluster: Cluster;
  let kubectl: Kubectl;
  let plugin: Plugin;
  let proxy: InProcessProxy;
  let backends: Backends;

  before(async () => {
    cluster = await startCluster(loopbackRange(import.meta.url).cidr);
    kubectl = await kubectlFor(cluster.api);
    plugin = await pluginFor(cluster.api.kubeconfigPath);
    await createService(cluster, 'web', [{ name: 'http', port: 8700, targetPort: 9700 }]);
    // Step 1 released at once (promotedStep 0, the first step's index); step 2 waits for a promotion.
    const manifest = {
      apiVersion: 'canary-l4.io/v1alpha1',
      kind: 'CanaryRelease',
      metadata: { name: 'web-v2' },
      spec: {
        services: [{ service: 'web', canaryServiceOperations: { add: { version: 'v2' } }, ports: [{ port: 8700 }] }],
        steps: [{ weight: 10, pause: {} }, { weight: 30, pause: {} }, { weight: 60 }],
        promotedStep: 0,
      },
    };
    await kubectl('apply', '-f', await kubectl.manifest('web-v2.yaml', manifest));
    proxy = await startProxy(cluster, 'web-v2', PORT_BASE);
    backends = await startBackends(cluster, 'web', [{ port: 8700 }]);
  });

  after(async () => {
    await proxy.stop();
    await backends.close();
    await plugin.cleanup();
    await kubectl.cleanup();
    await cluster.stop();
  });

  it('status, kubectl get and describe, the plugin, the Events, the metric and the dashboard name step 2 of 3, index 1', async () => {
    const release = await waitForRelease(
      cluster,
      'web-v2',
      'at the second step, waiting for a promotion',
      (found) => serving(found) && found?.status?.currentStep === 1 && found.status.pause != null,
    );
    const expected: Named = { number: 2, count: 3, index: 1 };
    const status = release!.status!;
    assert.equal(status.currentStep, expected.index, 'status.currentStep is the index');
    assert.deepEqual(named(status.step), expected, 'status.step');
    assert.deepEqual(named(status.pause?.reason), expected, 'status.pause.reason');
    assert.match(status.pause!.reason, /\(it writes spec.promotedStep: 1\)/, 'the pause names the index to write');

    // kubectl get: the STEP column.
    const table = (await kubectl('get', 'crel', 'web-v2')).trim().split('\n');
    const stepAt = table[0]!.indexOf('STEP');
    const proxyAt = table[0]!.indexOf('PROXY');
    assert.ok(stepAt > 0 && proxyAt > stepAt, table[0]);
    assert.deepEqual(named(table[1]!.slice(stepAt, proxyAt).trim()), expected, `kubectl get:\n${table.join('\n')}`);

    // kubectl describe: status's raw index beside the step it names (status's own fields, two spaces in).
    const described = await kubectl('describe', 'crel', 'web-v2');
    assert.equal(/^ {2}Current Step:\s+(\d+)$/m.exec(described)?.[1], String(expected.index), described);
    assert.deepEqual(named(/^ {2}Step:\s+(.+)$/m.exec(described)?.[1]), expected, described);

    // The plugin's status, and the dashboard's row (the same formatting function).
    const shown = await plugin('status', 'web-v2');
    assert.equal(shown.code, 0, shown.stderr);
    assert.deepEqual(named(/^Step: ([^,]+),/m.exec(shown.stdout)?.[1]), expected, shown.stdout);
    assert.deepEqual(named(releaseRow(release!, new Date()).step), expected, 'the dashboard');

    // The metric counts from 1, as the column does: currentStep + 1.
    const metrics = await proxy.metrics();
    assert.equal(
      /^canary_l4_release_step (\d+)$/m.exec(metrics)?.[1],
      String(expected.number),
      'canary_l4_release_step',
    );
    assert.equal(/^canary_l4_release_steps (\d+)$/m.exec(metrics)?.[1], String(expected.count));
    assert.match(metrics, /# HELP canary_l4_release_step .*status.currentStep \+ 1/);

    // The Events: the step that began, and why it holds.
    const events = await waitFor(async () => {
      const items = (
        await cluster.core.listNamespacedEvent({ namespace: NAMESPACE, fieldSelector: 'involvedObject.name=web-v2' })
      ).items;
      const began = items.find((event) => event.reason === 'StepAdvanced' && event.message?.includes('(index 1)'));
      const held = items.find((event) => event.reason === 'StepHeld' && event.message?.includes('(index 1)'));
      return began !== undefined && held !== undefined ? { began, held } : undefined;
    }, 'the Events of step 2');
    assert.ok(events !== undefined);
    assert.deepEqual(named(events.began.message?.replace(/ begins$/, '')), expected, events.began.message);
    assert.deepEqual(named(events.held.message), expected, events.held.message);

    // promote: the step it releases, and the index the patch it prints writes, are the same step.
    const promoted = await plugin('promote', 'web-v2');
    assert.equal(promoted.code, 0, promoted.stderr);
    assert.deepEqual(named(/: (step .+?) promoted/.exec(promoted.stdout)?.[1]), expected, promoted.stdout);
    assert.match(promoted.stdout, /'\{"spec":\{"promotedStep":1\}\}'/, 'the patch writes the index it named');
    assert.equal((await getRelease(cluster, 'web-v2'))?.spec?.promotedStep, expected.index);
  });
});
