// `kubectl canary-l4 plan` on the bad input issue 20 found, against the fake apiserver: every
// CanaryRelease of a file planned (documents and v1 Lists), the steps and what promotedStep skips,
// and each refusal of the one validation (src/api/validate.ts) naming its field; nothing written.

import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { after, before, describe, it } from 'node:test';
import { suiteTimeout } from '../support/cluster/api-under-test.ts';
import type { CanaryReleaseSpec } from '../../src/api/spec-types.ts';
import { kubectlFor, type Kubectl } from '../support/cluster/api-fixtures.ts';
import { pluginFor, type Plugin } from '../support/process/kubectl-plugin.ts';
import { createService, NAMESPACE, startCluster, versions, type Cluster } from '../support/cluster/release-cluster.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';

const addresses = loopbackRange(import.meta.url);

const release = (name: string, spec: CanaryReleaseSpec) => ({
  apiVersion: 'canary-l4.io/v1alpha1',
  kind: 'CanaryRelease',
  metadata: { name },
  spec,
});

describe('kubectl canary-l4 plan: bad input', { timeout: suiteTimeout(180_000) }, () => {
  let cluster: Cluster;
  let kubectl: Kubectl;
  let plugin: Plugin;

  before(async () => {
    cluster = await startCluster(addresses.cidr);
    kubectl = await kubectlFor(cluster.api);
    plugin = await pluginFor(cluster.api.kubeconfigPath);
    await createService(cluster, 'web', [{ name: 'http', port: 80, targetPort: 8000 }]);
    await createService(cluster, 'shop', [{ port: 443, targetPort: 8443 }], { selector: { app: 'shop' } });
  });

  after(async () => {
    await plugin.cleanup();
    await kubectl.cleanup();
    await cluster.stop();
  });

  it('plan -f of a file with several documents plans every CanaryRelease, says which document each is, and exits 1 if any has a problem', async () => {
    const good = release('multi-good', {
      services: [
        {
          service: 'web',
          canaryServiceOperations: { add: { version: 'v2' } },
          ports: [{ port: 80, config: { weight: 10 } }],
        },
      ],
    });
    const bad = release('multi-bad', {
      services: [{ service: 'gone', ports: [{ port: 80, config: { weight: 150 } }] }],
    });
    const service = { apiVersion: 'v1', kind: 'Service', metadata: { name: 'unrelated' } };
    const file = await kubectl.manifest('multi.yaml', good, service, bad);
    const before = await versions(cluster);
    const run = await plugin('plan', '-f', file);
    assert.equal(await versions(cluster), before, 'a dry run writes nothing');
    assert.equal(run.code, 1, run.stdout);
    assert.ok(run.stdout.includes(`CanaryRelease default/multi-good (document 1 of ${file}): a dry run`), run.stdout);
    assert.ok(run.stdout.includes(`CanaryRelease default/multi-bad (document 3 of ${file}): a dry run`), run.stdout);
    const second = run.stdout.slice(run.stdout.indexOf('multi-bad (document 3'));
    assert.match(second, /- spec.services\[0\].ports\[0\].config.weight: must be an integer 0–100, got 150/);
    // The API server refuses the same weight: said once, in canary-l4's words.
    assert.equal(second.match(/config\.weight/g)?.length, 1, second);
    assert.doesNotMatch(second, /kubectl apply would be refused/, second);
    assert.match(second, /- spec.services\[0\]: Service gone not found in the namespace/);
    assert.match(run.stdout, /2 CanaryReleases planned; with problems: multi-bad \(document 3\)\./);

    const list = await kubectl.manifest('list.yaml', {
      apiVersion: 'v1',
      kind: 'List',
      items: [good, release('list-bad', { services: [{ service: 'web', ports: [{ port: 80 }] }], steps: [] })],
    });
    const listed = await plugin('plan', '-f', list);
    assert.equal(listed.code, 1, listed.stdout);
    assert.ok(listed.stdout.includes(`CanaryRelease default/list-bad (document 1, item 2 of ${list})`), listed.stdout);
    assert.match(listed.stdout, /- spec.steps: is empty, so no step would set a weight/);
  });

  it('plan shows the steps, their pauses, what promotedStep skips, and refuses a promotedStep past the last step', async () => {
    const hourly = [
      { weight: 10, pause: { duration: '1h' } },
      { weight: 30, pause: { duration: '1h' } },
      { weight: 60, pause: {} },
    ];
    const entry = { service: 'web', canaryServiceOperations: { add: { version: 'v2' } }, ports: [{ port: 80 }] };
    const promoted = await plugin(
      'plan',
      '-f',
      await kubectl.manifest(
        'promoted.yaml',
        release('promoted', { services: [entry], steps: hourly, promotedStep: 1 }),
      ),
    );
    assert.equal(promoted.code, 0, promoted.stdout);
    assert.match(
      promoted.stdout,
      /Steps \(every listed port takes each weight in turn; a pause holds it\):\n {2}10% 1h → 30% 1h → 60% until promoted → adopted\n {2}spec.promotedStep 1 is step 2\/3 \(index 1\): the pause of step 1\/3 \(1h\), step 2\/3 \(1h\) are skipped/,
    );
    const stale = await plugin(
      'plan',
      '-f',
      await kubectl.manifest('stale.yaml', release('stale', { services: [entry], steps: hourly, promotedStep: 3 })),
    );
    assert.equal(stale.code, 1, stale.stdout);
    assert.match(
      stale.stdout,
      /spec.promotedStep 3 names no step \(indexes 0–2 name steps 1–3\): it would skip every pause and analysis gate \(see Problems\)/,
    );
    assert.match(
      stale.stdout,
      /- spec.promotedStep: 3 is past the last step \(there are 3, indexed 0–2: step 3\/3 \(index 2\) is the last\), so it would skip every pause and analysis gate/,
    );
    assert.doesNotMatch(stale.stdout, /Services to create/, 'a release that would hold creates nothing');
  });

  it('plan refuses analysis thresholds that would never judge or always fail, and pauses with no end, naming each field', async () => {
    const file = await kubectl.manifest(
      'thresholds.yaml',
      release('thresholds', {
        services: [{ service: 'web', ports: [{ port: 80 }] }],
        steps: [{ weight: 10, pause: { duration: '100000000000h' } }],
        analysis: {
          interval: '8760h',
          thresholds: {
            errorRate: { max: 0.01 },
            connectLatencyP99: { maxRatioToStable: 0 },
            connectErrorRate: { max: 2 },
            resetRate: { mx: 0.01 },
          } as never,
        },
      }),
    );
    const run = await plugin('plan', '-f', file);
    assert.equal(run.code, 1, run.stdout);
    for (const problem of [
      'spec.steps[0].pause.duration: "100000000000h" is longer than 720h',
      'spec.analysis.interval: "8760h" is longer than 1h',
      'spec.analysis.thresholds.errorRate: no such signal',
      'spec.analysis.thresholds.connectLatencyP99.maxRatioToStable: must be a ratio of at least 1',
      'spec.analysis.thresholds.connectErrorRate.max: must be a rate from 0 to 1',
      'spec.analysis.thresholds.resetRate.mx: no such bound of resetRate',
    ])
      assert.ok(run.stdout.includes(`  - ${problem}`), `${problem}\n---\n${run.stdout}`);
  });

  it("plan checks what a workload patch makes of the stable Deployment: containers, images, the selector's labels", async () => {
    await cluster.apps.createNamespacedDeployment({
      namespace: NAMESPACE,
      body: {
        metadata: { name: 'shop' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'shop' } },
          template: {
            metadata: { labels: { app: 'shop', version: 'v1' } },
            spec: { containers: [{ name: 'shop', image: 'example/shop:1' }] },
          },
        },
      },
    });
    const entry = { service: 'shop', ports: [{ port: 443 }] };
    for (const [name, patch, problem] of [
      [
        'no-containers',
        { spec: { containers: [{ name: 'shop', $patch: 'delete' }] } },
        'spec.workloads[0].patch: leaves the pod template without containers',
      ],
      [
        'no-image',
        { spec: { containers: [{ name: 'shop', image: '' }] } },
        'spec.workloads[0].patch.spec.containers[name=shop].image: the container has no image',
      ],
      [
        'bad-image',
        { spec: { containers: [{ name: 'shop', image: 'Example/Shop:2!' }] } },
        'spec.workloads[0].patch.spec.containers[name=shop].image: "Example/Shop:2!" is not an image reference',
      ],
      [
        'no-app',
        { metadata: { labels: { $patch: 'replace', version: 'v2' } } },
        "spec.workloads[0].patch.metadata.labels: drops app=shop, which the Deployment's selector needs",
      ],
    ] as const) {
      const run = await plugin(
        'plan',
        '-f',
        await kubectl.manifest(
          `${name}.yaml`,
          release(name, { services: [entry], workloads: [{ name: 'shop', patch }] }),
        ),
      );
      assert.equal(run.code, 1, `${name}: ${run.stdout}`);
      assert.ok(run.stdout.includes(`  - ${problem}`), `${problem}\n---\n${run.stdout}`);
      assert.doesNotMatch(run.stdout, /Deployments to create/, name);
    }
  });

  it('plan refuses a patch that would add a container it meant to change (wbe for shop), lists every problem, and says config.weight is ignored with steps', async () => {
    // The stable Deployment `shop` (one container, shop) is made by the test before.
    const typo = release('typo-container', {
      services: [{ service: 'shop', ports: [{ port: 443, config: { weight: 25 } }] }],
      steps: [{ weight: 10, pause: { duration: '1m' } }, { weight: 50 }],
      workloads: [
        {
          name: 'shop',
          patch: { spec: { containers: [{ name: 'shpo', image: 'example/shop:5' }], volumes: [{ name: 'cache' }] } },
        },
      ],
    });
    const run = await plugin('plan', '-f', await kubectl.manifest('typo-container.yaml', typo));
    assert.equal(run.code, 1, run.stdout);
    for (const problem of [
      'spec.workloads[0].patch.spec.containers[name=shpo]: the stable template has no container shpo (it has shop), so the patch would add one instead of changing one: did you mean shop? (to add shpo on purpose, list it in spec.workloads[0].adds.containers)',
      'spec.workloads[0].patch.spec.volumes[name=cache]: the stable template has no volume cache (it has none), so the patch would add one instead of changing one (to add cache on purpose, list it in spec.workloads[0].adds.volumes)',
    ])
      assert.ok(run.stdout.includes(`  - ${problem}\n`), `${problem}\n---\n${run.stdout}`);
    assert.ok(
      run.stdout.includes(
        "  - spec.services[0].ports[0].config.weight: 25 is ignored: with spec.steps every listed port takes the step's weight (10% → 50%)",
      ),
      run.stdout,
    );
    assert.doesNotMatch(run.stdout, /No problems|Deployments to create/);

    // Added on purpose: the same patch with its additions listed has no problem (on the fake it waits for
    // the stable Deployment's ReplicaSet, which only a real control plane's Deployment controller makes).
    const meant = release('typo-container', {
      ...typo.spec,
      workloads: [{ ...typo.spec.workloads![0]!, adds: { containers: ['shpo'], volumes: ['cache'] } }],
    });
    const planned = await plugin('plan', '-f', await kubectl.manifest('meant-container.yaml', meant));
    assert.equal(planned.code, 0, planned.stdout);
    assert.match(
      planned.stdout,
      /^No problems(, but applied now the release would wait, as above|: applied as it is, the release would start)\.$/m,
    );
  });

  it('plan names a misspelt field with its path and what it meant, before any plan, each once; kubectl apply refuses it too', async () => {
    const entry = {
      service: 'web',
      canaryServiceOperations: { add: { version: 'v2' } },
      ports: [{ port: 80, protocl: 'TCP' }],
    };
    const file = await kubectl.manifest(
      'typo.yaml',
      release('typo', { services: [entry], stpes: [] } as unknown as CanaryReleaseSpec),
    );
    const before = await versions(cluster);
    const run = await plugin('plan', '-f', file);
    assert.equal(await versions(cluster), before, 'a dry run writes nothing');
    assert.deepEqual(
      [run.code, run.stdout, run.stderr],
      [
        2,
        '',
        `kubectl canary-l4: -f ${file}: document 1: spec.services[0].ports[0].protocl: no such field; did you mean protocol?\n` +
          `kubectl canary-l4: -f ${file}: document 1: spec.stpes: no such field; did you mean steps?\n`,
      ],
    );
    await assert.rejects(kubectl('apply', '-f', file), /protocl/, 'kubectl apply refuses it too');

    const good = await kubectl.manifest(
      'good.yaml',
      release('typo', { services: [{ ...entry, ports: [{ port: 80 }] }] }),
    );
    const planned = await plugin('plan', '-f', good);
    assert.equal(planned.code, 0, planned.stdout);
    assert.doesNotMatch(planned.stdout, /would be refused|not checked against/);
  });

  it('an unknown command or flag is named with what it likely meant, as canary-l4 does; exit 2', async () => {
    const command = await plugin('stauts', 'web-v4');
    assert.deepEqual(
      [command.code, command.stderr],
      [
        2,
        'kubectl canary-l4: unknown command stauts, did you mean status? (the commands: status, promote, pause, resume, abort, set-weight, plan, dashboard)\n',
      ],
    );
    const flag = await plugin('promote', 'web-v4', '--ful');
    assert.deepEqual(
      [flag.code, flag.stderr],
      [
        2,
        'kubectl canary-l4 promote: unknown flag --ful, did you mean --full? (kubectl canary-l4 promote --help lists its flags)\n',
      ],
    );
  });

  it('plan of a file that is not YAML says where, without a dangling colon', async () => {
    const file = await kubectl.manifest(
      'bad.yaml',
      release('fine', { services: [{ service: 'web', ports: [{ port: 80 }] }] }),
    );
    await writeFile(file, 'kind: CanaryRelease\nspec: {services: [\n');
    const run = await plugin('plan', '-f', file);
    assert.equal(run.code, 2, run.stdout);
    assert.match(
      run.stderr,
      new RegExp(`^kubectl canary-l4: -f ${file}: document 1 is not YAML: .*line \\d+, column \\d+\n$`),
    );
    assert.doesNotMatch(run.stderr, /:\n$/);
  });
});
