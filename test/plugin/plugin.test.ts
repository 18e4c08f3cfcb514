// `kubectl canary-l4` as a user runs it, against the fake apiserver: `plan` on good and broken
// releases changes nothing (every resourceVersion stays), and says what would be created, changed
// and allocated, and every problem; each action is the patch it prints, and plain `kubectl patch`
// with that patch does exactly the same.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { suiteTimeout } from '../support/cluster/api-under-test.ts';
import { formatSaved, saveOriginal } from '../../src/control/service/originals.ts';
import { ANNOTATION_ORIGINAL } from '../../src/api/names.ts';
import type { CanaryReleaseSpec } from '../../src/api/spec-types.ts';
import { kubectlFor, type Kubectl } from '../support/cluster/api-fixtures.ts';
import { pluginFor, type Plugin } from '../support/process/kubectl-plugin.ts';
import { Pods } from '../support/cluster/pods.ts';
import {
  createRelease,
  createService,
  getRelease,
  NAMESPACE,
  startCluster,
  versions,
  type Cluster,
} from '../support/cluster/release-cluster.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';

const addresses = loopbackRange(import.meta.url);

const execFileAsync = promisify(execFile);

const release = (name: string, spec: CanaryReleaseSpec) => ({
  apiVersion: 'canary-l4.io/v1alpha1',
  kind: 'CanaryRelease',
  metadata: { name },
  spec,
});

describe('kubectl canary-l4', { timeout: suiteTimeout(60_000) }, () => {
  let cluster: Cluster;
  let kubectl: Kubectl;
  let plugin: Plugin;

  before(async () => {
    cluster = await startCluster(addresses.cidr);
    kubectl = await kubectlFor(cluster.api);
    plugin = await pluginFor(cluster.api.kubeconfigPath);
    await createService(cluster, 'web', [
      { name: 'http', port: 80, targetPort: 8000 },
      { name: 'dns', port: 53, targetPort: 5353, protocol: 'UDP' },
    ]);
    await createService(cluster, 'shop', [{ port: 443, targetPort: 8443 }], { selector: { app: 'shop' } });
    const pods = new Pods(cluster.api.kubeConfig, NAMESPACE);
    await pods.createReady({ name: 'web-1', labels: { app: 'web', version: 'v1' }, podIP: addresses.ip(201) });
    await pods.createReady({ name: 'shop-1', labels: { app: 'shop', version: 'v1' }, podIP: addresses.ip(202) });
  });

  after(async () => {
    await plugin.cleanup();
    await kubectl.cleanup();
    await cluster.stop();
  });

  it('plan: what a good release would create, change and allocate, and nothing changes', async () => {
    const file = await kubectl.manifest(
      'web-v2.yaml',
      release('web-v2', {
        services: [
          {
            service: 'web',
            canaryServiceOperations: { add: { version: 'v2' } },
            ports: [{ port: 80 }, { port: 53, protocol: 'UDP' }],
          },
        ],
        steps: [
          { weight: 5, pause: { duration: '2m' } },
          { weight: 50, pause: {} },
        ],
      }),
    );
    const before = await versions(cluster);
    const run = await plugin('plan', '-f', file, '--port-base', '9100');
    const onHost = await plugin('plan', '-f', file, '--port-base', '9100', '--proxy-on-host');
    assert.equal(run.code, 0, run.stderr);
    assert.equal(await versions(cluster), before, 'a dry run writes nothing');
    assert.equal(await getRelease(cluster, 'web-v2'), undefined);
    const expected = [
      'Services to create:',
      '  web-forked: selector app=web,version=v1; ports 80/TCP→8000, 53/UDP→5353',
      '  web-canary: selector app=web,version=v2; ports 80/TCP→8000, 53/UDP→5353',
      'Services to take over (what changes, once a proxy pod carrying the labels below is Ready):',
      '  web: selector app=web,version=v1 → app=canary-l4.web-v2,version=canary-l4.web-v2',
      '    port http 80/TCP: targetPort 8000 (kept)',
      '    port dns 53/UDP: targetPort 5353 (kept)',
      '  labels app=canary-l4.web-v2,version=canary-l4.web-v2',
    ];
    for (const line of expected) assert.ok(run.stdout.includes(line), `${line}\n---\n${run.stdout}`);
    assert.match(
      run.stdout,
      /web\s+53\/UDP\s+5353\s+5%\n\s+web\s+80\/TCP\s+8000\s+5%/,
      "the proxy ports (the targetPorts, in a pod), at the first step's weight",
    );
    const expectedOnHost = [
      'Services to take over (what changes, once the proxy listens):',
      '    port http 80/TCP: targetPort 8000 → 9101',
      '    port dns 53/UDP: targetPort 5353 → 9100',
      '  targetPort moved: web:53/UDP: targetPort 5353 → 9100 (the proxy runs outside a pod)',
    ];
    for (const line of expectedOnHost) assert.ok(onHost.stdout.includes(line), `${line}\n---\n${onHost.stdout}`);
    assert.match(
      onHost.stdout,
      /web\s+53\/UDP\s+9100\s+5%\n\s+web\s+80\/TCP\s+9101\s+5%/,
      'on a host: the proxy ports from --port-base',
    );
    assert.match(
      run.stdout,
      /the canary selector app=web,version=v2 matches no Ready pod; its ports send the canary no new traffic until one is Ready/,
    );
    assert.match(run.stdout, /No problems: applied as it is, the release would start/);
  });

  it('plan: every problem a broken release would hit, each naming its field; exit 1; nothing changes', async () => {
    const file = await kubectl.manifest(
      'broken.yaml',
      release('broken', {
        services: [
          { service: 'gone', ports: [{ port: 80, config: { weight: 10 } }] },
          {
            service: 'web',
            ports: [
              { port: 81, config: { weight: 10 } },
              { port: 53, protocol: 'SCTP' as 'UDP', config: { weight: 10 } },
            ],
          },
        ],
        steps: [{ weight: 500 }],
        analysis: { interval: 'often' },
      }),
    );
    const overlapping = await kubectl.manifest(
      'overlap.yaml',
      release('overlap', {
        // The canary selector (app=shop) also matches the stable pod: the release would mix versions.
        services: [
          {
            service: 'shop',
            forkedServiceOperations: { add: { version: 'v1' } },
            ports: [{ port: 443, config: { weight: 10 } }],
          },
        ],
      }),
    );
    const before = await versions(cluster);
    const broken = await plugin('plan', '-f', file);
    const mixing = await plugin('plan', '-f', overlapping);
    assert.equal(await versions(cluster), before, 'a dry run writes nothing');
    assert.deepEqual([broken.code, mixing.code], [1, 1]);
    for (const problem of [
      'spec.services[0]: Service gone not found in the namespace',
      'spec.services[1].ports[0]: Service web has no port 81/TCP',
      'spec.services[1].ports[1].protocol: "SCTP" is not supported',
      'spec.steps[0].weight: must be an integer 0–100, got 500',
      'spec.analysis.interval: "often" is not a duration of at least 1s',
    ])
      assert.ok(broken.stdout.includes(`  - ${problem}`), `${problem}\n---\n${broken.stdout}`);
    assert.doesNotMatch(broken.stdout, /Services to create/, 'a release that would hold creates nothing');
    assert.match(
      mixing.stdout,
      /Problems \(the release holds, changing nothing, until they are fixed\):\n {2}- Service shop: forked selector app=shop,version=v1 and canary selector app=shop both match pods shop-1/,
    );
  });

  it('plan of a release whose Service another release holds: no problem, but it would wait, and says so', async () => {
    const service = {
      metadata: { name: 'held' },
      spec: { selector: { app: 'held' }, ports: [{ port: 80, targetPort: 8080 }] },
    };
    const saved = formatSaved(saveOriginal(service, 'first'));
    await cluster.core.createNamespacedService({
      namespace: NAMESPACE,
      body: { ...service, metadata: { name: 'held', annotations: { [ANNOTATION_ORIGINAL]: saved } } },
    });
    const file = await kubectl.manifest(
      'second.yaml',
      release('second', { services: [{ service: 'held', ports: [{ port: 80, config: { weight: 10 } }] }] }),
    );
    const run = await plugin('plan', '-f', file);
    assert.equal(run.code, 0, run.stderr);
    assert.match(
      run.stdout,
      /Waiting \(the release changes nothing until then\):\n {2}- Service held is under CanaryRelease first; this release starts once that one has ended/,
    );
    assert.match(run.stdout, /No problems, but applied now the release would wait, as above\./);
    assert.doesNotMatch(run.stdout, /the release would start/);
  });

  it('plan of a file without a CanaryRelease, and of a missing file: one line, exit 2', async () => {
    const file = await kubectl.manifest('service.yaml', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' } });
    const wrong = await plugin('plan', '-f', file);
    assert.deepEqual(
      [wrong.code, wrong.stderr.trim()],
      [2, `kubectl canary-l4: -f ${file}: holds no object of kind CanaryRelease`],
    );
    const missing = await plugin('plan', '-f', '/nonexistent.yaml');
    assert.equal(missing.code, 2);
    assert.equal(
      missing.stderr,
      'kubectl canary-l4: -f /nonexistent.yaml: no such file; give the path of a manifest file (as with kubectl apply -f)\n',
      'in words, not ENOENT',
    );
    const good = await kubectl.manifest(
      'port-base.yaml',
      release('port-base', { services: [{ service: 'web', ports: [{ port: 80 }] }] }),
    );
    for (const base of ['abc', '0']) {
      const badBase = await plugin('plan', '-f', good, '--port-base', base);
      assert.equal(badBase.code, 2, badBase.stdout);
      assert.match(badBase.stderr, /--port-base: must be an integer 1-65535, got/);
    }
  });

  it('each action is the patch it prints, and kubectl patch with it does the same', async () => {
    const spec: CanaryReleaseSpec = {
      services: [
        {
          service: 'web',
          ports: [
            { port: 80, config: { weight: 10 } },
            { port: 53, protocol: 'UDP' },
          ],
        },
      ],
    };
    await createRelease(cluster, 'act', spec);
    await createRelease(cluster, 'twin', spec);
    for (const args of [
      ['set-weight', 'act', 'web:53=30'],
      ['set-weight', 'act', 'web:80=25'],
      ['pause', 'act'],
      ['resume', 'act'],
      ['abort', 'act', '--reason', "the p99 can't hold"],
    ]) {
      const run = await plugin(...args);
      assert.equal(run.code, 0, run.stderr);
      const printed = /kubectl patch canaryrelease act (-n default --type=\w+ -p .*)$/m.exec(run.stdout);
      assert.ok(printed, run.stdout);
      // As a user pastes it into a shell.
      await execFileAsync(
        'sh',
        ['-c', `kubectl --kubeconfig ${cluster.api.kubeconfigPath} patch canaryrelease twin ${printed[1]}`],
        { env: { ...process.env, HOME: kubectl.home } },
      );
    }
    const [acted, twin] = [await getRelease(cluster, 'act'), await getRelease(cluster, 'twin')];
    assert.deepEqual(acted?.spec, twin?.spec);
    // With the defaults the API server fills in from the CRD's schema (protocol, autoAdopt).
    assert.deepEqual(acted?.spec, {
      services: [
        {
          service: 'web',
          ports: [
            { port: 80, protocol: 'TCP', config: { weight: 25 } },
            { port: 53, protocol: 'UDP', config: { weight: 30 } },
          ],
        },
      ],
      autoAdopt: true,
      paused: false,
      transition: 'Deprecated',
      transitionReason: "the p99 can't hold",
    });
  });

  it('actions that make no sense say why and what to do instead, and change nothing', async () => {
    await createRelease(cluster, 'stepped', {
      services: [{ service: 'web', ports: [{ port: 80 }] }],
      steps: [{ weight: 10, pause: {} }],
    });
    await createRelease(cluster, 'plain', {
      services: [{ service: 'web', ports: [{ port: 80, config: { weight: 10 } }] }],
    });
    const before = await versions(cluster);
    const refusals = [
      [
        ['set-weight', 'stepped', 'web:80=50'],
        /has spec.steps, which set every port's weight: promote, pause or resume it instead/,
      ],
      [['promote', 'plain'], /has no spec.steps, so no step to promote: promote --full adopts it/],
      [
        ['set-weight', 'plain', 'web:81=5'],
        /spec.services\[0\] \(web\) lists no port 81: add it to spec.services\[0\].ports/,
      ],
      [['set-weight', 'plain', 'db:80=5'], /has no Service db in spec.services \(it has web\)/],
      [
        ['set-weight', 'plain', 'web:80=150'],
        /"web:80=150": the weight "150" must be a whole percentage 0-100, e.g. web:80=25/,
      ],
      [['status', 'nope'], /CanaryRelease nope in namespace default not found/],
    ] as const;
    for (const [args, message] of refusals) {
      const run = await plugin(...args);
      assert.notEqual(run.code, 0, args.join(' '));
      assert.match(run.stderr, message);
      assert.equal(run.stderr.trim().split('\n').length, 1, `one line: ${run.stderr}`);
    }
    assert.equal(await versions(cluster), before);
    const promoted = await plugin('promote', 'plain', '--full');
    assert.equal(promoted.code, 0, promoted.stderr);
    assert.equal((await getRelease(cluster, 'plain'))?.spec?.transition, 'Adopted');
  });
});
