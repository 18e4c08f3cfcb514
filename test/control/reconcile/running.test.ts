import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import type { Step } from '../../../src/control/reconcile.ts';
import { ANNOTATION_ORIGINAL } from '../../../src/api/names.ts';
import type { CanaryReleaseSpec } from '../../../src/api/spec-types.ts';
import {
  applyStep,
  assertCrashSafe,
  assertServed,
  clone,
  conditionOf,
  converge,
  listen,
  options,
  pod,
  reasons,
  run,
  service,
  TAKEN,
  webWorld,
  WEB_SPEC,
  type World,
} from './world.ts';

function patchOf(steps: readonly Step[], reason: string, name: string) {
  const step = steps.find((item) => item.kind === 'patchService' && item.reason === reason && item.name === name);
  assert.ok(
    step?.kind === 'patchService',
    `no ${reason} patch of ${name} in ${steps.map((item) => item.reason).join(', ')}`,
  );
  return step.patch;
}

/** Apply every step of one reconcile, then let the data plane follow the config. */
function pass(world: World, opts = options()) {
  const desired = run(world, opts);
  listen(world, desired);
  for (const step of desired.steps) applyStep(world, step);
  return desired;
}

const twoPorts = () => [
  service(
    'web',
    { app: 'web', version: 'v1' },
    [
      { name: 'http', port: 80, targetPort: 8000 },
      { name: 'https', port: 443, targetPort: 8443, nodePort: 30443 },
    ],
    { type: 'NodePort' },
  ),
];

describe('reconcile while the release runs', () => {
  it('first sync: finalizer, saved original, copies, allocation in status; nothing retargeted', () => {
    const world = webWorld();
    const desired = run(world);
    assert.equal(desired.mode, 'running');
    assert.deepEqual(reasons(desired), [
      'addFinalizer',
      'saveOriginal web',
      'createCopy web-forked',
      'createCopy web-canary',
      'updateStatus',
    ]);
    const save = patchOf(desired.steps, 'saveOriginal', 'web');
    assert.deepEqual(save.spec, {}, 'the save changes nothing but the annotation');
    assert.equal(save.metadata.resourceVersion, '1');
    assert.deepEqual(JSON.parse(save.metadata.annotations?.[ANNOTATION_ORIGINAL] ?? ''), {
      release: 'rel',
      retargeted: false,
      selector: { app: 'web', version: 'v1' },
      ports: [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8000 }],
    });
    const copies = desired.steps.flatMap((step) => (step.kind === 'createService' ? [step.service] : []));
    assert.deepEqual(
      copies.map((copy) => copy.spec?.selector),
      [
        { app: 'web', version: 'v1' },
        { app: 'web', version: 'v2' },
      ],
    );
    for (const copy of copies) {
      assert.equal(copy.spec?.type, 'ClusterIP');
      assert.equal(copy.spec?.clusterIP, undefined);
      assert.deepEqual(copy.spec?.ports, [{ name: 'http', port: 80, protocol: 'TCP', targetPort: 8000 }]);
      assert.deepEqual(copy.metadata?.ownerReferences, [
        { apiVersion: 'canary-l4.io/v1alpha1', kind: 'CanaryRelease', name: 'rel', uid: 'uid-rel', controller: true },
      ]);
      assert.equal(copy.metadata?.labels?.['canary-l4.io/release'], 'rel');
    }
    assert.deepEqual(desired.status.ports, [
      { service: 'web', port: 80, protocol: 'TCP', proxyPort: 8080, weight: 10, override: null, served: 10 },
    ]);
    assert.equal(desired.status.phase, 'Running');
    assert.equal(desired.status.weights, 'web:80=10%');
    assert.deepEqual(desired.l4Config.listeners, [], 'no upstream before the copies have cluster IPs');
    assert.equal(conditionOf(desired, 'Available').status, 'False');
    assert.match(conditionOf(desired, 'Progressing').message, /saving the original/);
  });

  it('does not retarget until the proxy listens on the recorded port, then does in one patch', () => {
    const world = webWorld();
    pass(world);
    const second = run(world); // copies exist, port recorded, nothing listening yet
    assert.equal(
      second.steps.some((step) => step.reason === 'retarget'),
      false,
    );
    assert.match(conditionOf(second, 'Progressing').message, /waiting for the proxy to listen on 8080/);
    assert.deepEqual(
      second.l4Config.listeners.map((listener) => [
        listener.name,
        listener.listen.port,
        listener.backends.map((backend) => [backend.name, backend.host, backend.port, backend.weight]),
      ]),
      [
        [
          'web-80-tcp',
          8080,
          [
            ['forked', world.services.get('web-forked')?.spec?.clusterIP, 80, 90],
            ['canary', world.services.get('web-canary')?.spec?.clusterIP, 80, 10],
          ],
        ],
      ],
    );
    listen(world, second);
    const third = run(world);
    const retarget = patchOf(third.steps, 'retarget', 'web');
    assert.deepEqual(
      retarget.spec?.selector,
      { app: TAKEN, version: TAKEN },
      "the keys kept, the values the proxy pods' only",
    );
    assert.deepEqual(
      retarget.spec?.ports?.map((port) => port.targetPort),
      [8080],
      'on a host: the targetPort moves to the proxy port',
    );
    assert.equal(JSON.parse(retarget.metadata.annotations?.[ANNOTATION_ORIGINAL] ?? '').retargeted, true);
    assert.equal(JSON.parse(retarget.metadata.annotations?.[ANNOTATION_ORIGINAL] ?? '').takeover, 'values');
    assert.equal(conditionOf(third, 'Available').status, 'True');
  });

  it('converges and then has nothing left to do', () => {
    const { world, last } = converge(webWorld());
    assert.ok(last);
    assert.deepEqual(last.steps, []);
    assert.deepEqual(world.services.get('web')?.spec?.selector, { app: TAKEN, version: TAKEN });
    assert.deepEqual(world.services.get('web')?.spec?.ports, [
      { protocol: 'TCP', targetPort: 8080, name: 'http', port: 80 },
    ]);
    assert.deepEqual(last.status.takeover, {
      keys: ['app', 'version'],
      value: TAKEN,
      namedPorts: [],
      movedPorts: ['web:80/TCP: targetPort 8000 → 8080 (the proxy runs outside a pod)'],
    });
    assert.deepEqual(world.release?.metadata.finalizers, ['canary-l4.io/restore-services']);
    assert.equal(conditionOf(last, 'Progressing').status, 'False');
  });

  it('a status stored through a merge patch (transition: null dropped) is not written again', () => {
    const { world } = converge(webWorld());
    assert.ok(
      world.release?.status !== undefined && !('transition' in world.release.status),
      'the merge patch dropped transition: null',
    );
    assert.deepEqual(reasons(run(world)), []);
  });

  it('proxies the unlisted ports at 100 % stable and keeps nodePorts', () => {
    const { world, last } = converge(webWorld(WEB_SPEC, twoPorts()));
    assert.ok(last);
    assert.deepEqual(
      last.status.ports.map((port) => [port.port, port.proxyPort, port.weight]),
      [
        [80, 8080, 10],
        [443, 8081, 0],
      ],
    );
    const https = last.l4Config.listeners.find((listener) => listener.name === 'web-443-tcp');
    assert.deepEqual(
      https?.backends.map((backend) => [backend.name, backend.port, backend.weight]),
      [
        ['forked', 443, 100],
        ['canary', 443, 0],
      ],
    );
    assert.deepEqual(world.services.get('web')?.spec?.ports, [
      { protocol: 'TCP', targetPort: 8080, name: 'http', port: 80 },
      { protocol: 'TCP', targetPort: 8081, name: 'https', port: 443, nodePort: 30443 },
    ]);
    assert.equal(world.services.get('web')?.spec?.type, 'NodePort');
    assert.equal(
      world.services.get('web-forked')?.spec?.ports?.some((port) => port.nodePort !== undefined),
      false,
    );
    assert.equal(world.services.get('web-forked')?.spec?.type, 'ClusterIP');
  });

  const weightCases: {
    name: string;
    weight: number;
    override?: number;
    expected: [number, number];
    overriddenFrom?: [number, number];
  }[] = [
    { name: 'spec weight', weight: 10, expected: [90, 10] },
    { name: 'weight 0: all stable', weight: 0, expected: [100, 0] },
    { name: 'weight 100: all canary', weight: 100, expected: [0, 100] },
    { name: '--weight override', weight: 10, override: 50, expected: [50, 50], overriddenFrom: [90, 10] },
  ];
  for (const { name, weight, override, expected, overriddenFrom } of weightCases) {
    it(`weights: ${name}`, () => {
      const spec: CanaryReleaseSpec = {
        services: [
          {
            service: 'web',
            canaryServiceOperations: { add: { version: 'v2' } },
            ports: [{ port: 80, config: { weight } }],
          },
        ],
      };
      const opts = options({
        weightOverrides: override === undefined ? [] : [{ service: 'web', port: 80, weight: override }],
      });
      const { last } = converge(webWorld(spec), opts);
      assert.ok(last);
      const backends = last.l4Config.listeners[0]?.backends ?? [];
      assert.deepEqual(
        backends.map((backend) => backend.weight),
        expected,
      );
      assert.deepEqual(
        backends.map((backend) => backend.overriddenFrom),
        overriddenFrom ?? [undefined, undefined],
      );
      assert.deepEqual(
        last.status.ports.map((port) => [port.weight, port.override]),
        [[weight, override ?? null]],
      );
      const available = conditionOf(last, 'Available');
      assert.equal(available.reason, override === undefined ? 'Serving' : 'WeightOverridden');
      if (override !== undefined) assert.match(available.message, /web:80\/TCP=50% \(--weight; spec 10%\)/);
    });
  }

  it("a port's connection policies reach its listener (maxConnectionAgeMs, rebalanceWindowMs, drainTimeoutMs, affinity)", () => {
    const config = {
      weight: 10,
      maxConnectionAgeMs: 300_000,
      rebalanceWindowMs: 60_000,
      drainTimeoutMs: 30_000,
      affinity: 'clientIP' as const,
    };
    const spec: CanaryReleaseSpec = {
      services: [
        { service: 'web', canaryServiceOperations: { add: { version: 'v2' } }, ports: [{ port: 80, config }] },
      ],
    };
    const { last } = converge(webWorld(spec));
    const listener = last?.l4Config.listeners[0];
    assert.deepEqual(
      [listener?.maxConnectionAgeMs, listener?.rebalanceWindowMs, listener?.drainTimeoutMs, listener?.affinity],
      [300_000, 60_000, 30_000, 'clientIP'],
    );
  });

  it('connection policies out of bounds hold the release, each named with what it must be', () => {
    const config = { weight: 10, maxConnectionAgeMs: -5, affinity: 'sticky' as 'none' };
    const spec: CanaryReleaseSpec = {
      services: [
        { service: 'web', canaryServiceOperations: { add: { version: 'v2' } }, ports: [{ port: 80, config }] },
      ],
    };
    const { last } = converge(webWorld(spec));
    assert.equal(last?.status.phase, 'Holding');
    const failure = last === undefined ? '' : conditionOf(last, 'Failure').message;
    assert.match(
      failure,
      /spec\.services\[0\]\.ports\[0\]\.config\.maxConnectionAgeMs: must be an integer 0-2147483647 \(milliseconds; 0 = off\), got -5/,
    );
    assert.match(
      failure,
      /spec\.services\[0\]\.ports\[0\]\.config\.affinity: must be "none" or "clientIP", got "sticky"/,
    );
  });

  it('UDP ports get UDP listeners, next to a TCP port of the same number', () => {
    const dns = service('dns', { app: 'dns', version: 'v1' }, [
      { name: 'dns-tcp', port: 53 },
      { name: 'dns-udp', port: 53, protocol: 'UDP' },
    ]);
    const spec: CanaryReleaseSpec = {
      services: [
        {
          service: 'dns',
          canaryServiceOperations: { add: { version: 'v2' } },
          ports: [{ port: 53, protocol: 'UDP', config: { weight: 5 } }],
        },
      ],
    };
    const world = webWorld(spec, [dns]);
    world.pods.push({ metadata: { name: 'dns-v2', labels: { app: 'dns', version: 'v2' } } });
    const { last } = converge(world);
    assert.ok(last);
    assert.deepEqual(
      last.l4Config.listeners.map((listener) => [
        listener.name,
        listener.protocol,
        listener.listen.port,
        listener.backends.map((backend) => backend.weight),
      ]),
      [
        ['dns-53-tcp', 'tcp', 8080, [100, 0]],
        ['dns-53-udp', 'udp', 8081, [95, 5]],
      ],
    );
  });

  it('two Services: each copied, allocated and retargeted', () => {
    const api = service('api', { app: 'api' }, [{ port: 9000 }]);
    const spec: CanaryReleaseSpec = {
      services: [
        ...(WEB_SPEC.services ?? []),
        {
          service: 'api',
          canaryServiceOperations: { add: { track: 'canary' } },
          forkedServiceOperations: { add: { track: 'stable' } },
          ports: [{ port: 9000, config: { weight: 20 } }],
        },
      ],
    };
    const world = webWorld(spec, [...webWorld().services.values(), api]);
    world.pods.push({ metadata: { name: 'api-canary', labels: { app: 'api', track: 'canary' } } });
    const { world: end, last } = converge(world);
    assert.ok(last);
    assert.deepEqual(
      last.status.ports.map((port) => [port.service, port.proxyPort]),
      [
        ['api', 8080],
        ['web', 8081],
      ],
    );
    assert.deepEqual(end.services.get('api-forked')?.spec?.selector, { app: 'api', track: 'stable' });
    assert.deepEqual(end.services.get('api')?.spec?.ports?.[0]?.targetPort, 8080);
    assert.deepEqual(end.services.get('web')?.spec?.ports?.[0]?.targetPort, 8081);
  });

  const badSpecs: { name: string; spec: CanaryReleaseSpec; services?: V1Service[]; message: RegExp }[] = [
    {
      name: 'unknown Service',
      spec: { services: [{ service: 'nope', ports: [{ port: 80 }] }] },
      message: /Service nope not found/,
    },
    {
      name: 'duplicate port',
      spec: {
        services: [
          {
            service: 'web',
            canaryServiceOperations: { add: { version: 'v2' } },
            ports: [{ port: 80 }, { port: 80, protocol: 'HTTP' }],
          },
        ],
      },
      message: /port 80\/TCP is listed twice/,
    },
    {
      name: 'port not on the Service',
      spec: {
        services: [{ service: 'web', canaryServiceOperations: { add: { version: 'v2' } }, ports: [{ port: 81 }] }],
      },
      message: /Service web has no port 81\/TCP/,
    },
    {
      name: 'Service listed twice',
      spec: { services: [WEB_SPEC.services?.[0] ?? { service: '' }, WEB_SPEC.services?.[0] ?? { service: '' }] },
      message: /listed twice/,
    },
    {
      name: 'Service without selector',
      spec: WEB_SPEC,
      services: [service('web', {}, [{ port: 80 }])],
      message: /has no selector/,
    },
    {
      name: 'headless Service',
      spec: WEB_SPEC,
      services: [service('web', { app: 'web' }, [{ port: 80 }], { clusterIP: 'None' })],
      message: /headless/,
    },
    {
      name: 'a foreign Service named like the copy',
      spec: WEB_SPEC,
      services: [
        service('web', { app: 'web', version: 'v1' }, [{ port: 80 }]),
        service('web-canary', { app: 'other' }, [{ port: 80 }]),
      ],
      message: /web-canary exists and is not a copy/,
    },
    // The apiserver answers 422 to a copy with such a selector: the pass would fail before any status, forever.
    {
      name: 'canary label value the apiserver refuses',
      spec: {
        services: [{ service: 'web', canaryServiceOperations: { add: { version: 'v2 beta' } }, ports: [{ port: 80 }] }],
      },
      message: /canaryServiceOperations\.add: label value "v2 beta" of version is not valid/,
    },
    {
      name: 'forked label key the apiserver refuses',
      spec: {
        services: [
          {
            service: 'web',
            canaryServiceOperations: { add: { version: 'v2' } },
            forkedServiceOperations: { add: { 'track/': 'stable' } },
            ports: [{ port: 80 }],
          },
        ],
      },
      message: /forkedServiceOperations\.add: label key "track\/" is not valid/,
    },
    {
      name: 'SCTP port',
      spec: WEB_SPEC,
      services: [service('web', { app: 'web', version: 'v1' }, [{ port: 80 }, { port: 99, protocol: 'SCTP' }])],
      message: /99\/SCTP cannot be proxied/,
    },
  ];
  for (const { name, spec, services, message } of badSpecs) {
    it(`bad CanaryRelease: ${name} → Failure, nothing changed`, () => {
      const desired = run(webWorld(spec, services));
      assert.equal(desired.mode, 'holding');
      assert.deepEqual(reasons(desired), ['addFinalizer', 'updateStatus']);
      assert.equal(conditionOf(desired, 'Failure').status, 'True');
      assert.match(conditionOf(desired, 'Failure').message, message);
      assert.deepEqual(desired.l4Config.listeners, []);
    });
  }

  it('a bad spec arriving after the retarget keeps serving the last good state', () => {
    const { world } = converge(webWorld());
    const broken = clone(world);
    broken.release = {
      ...world.release!,
      metadata: { ...world.release!.metadata, generation: 2 },
      spec: { services: [{ service: 'web', ports: [{ port: 81 }] }] },
    };
    const desired = run(broken);
    assert.equal(desired.mode, 'holding');
    assert.deepEqual(reasons(desired), ['updateStatus']);
    assert.deepEqual(
      desired.l4Config.listeners.map((listener) => listener.listen.port),
      [8080],
    );
    assert.equal(conditionOf(desired, 'Available').reason, 'LastGoodState');
    assert.equal(desired.status.observedGeneration, 2);
    assert.deepEqual(desired.status.ports, world.release?.status?.ports);
  });

  it('selectors that mix the versions: Failure naming them, copies made, traffic not moved', () => {
    const sameAsForked: CanaryReleaseSpec = {
      services: [{ service: 'web', canaryServiceOperations: { add: { version: 'v1' } }, ports: [{ port: 80 }] }],
    };
    const podInBoth: CanaryReleaseSpec = {
      services: [
        {
          service: 'web',
          canaryServiceOperations: { add: { track: 'canary' } },
          forkedServiceOperations: { remove: ['version'] },
          ports: [{ port: 80 }],
        },
      ],
    };
    for (const [spec, message] of [
      [sameAsForked, /forked selector app=web,version=v1 and canary selector app=web,version=v1 are the same/],
      [
        podInBoth,
        /forked selector app=web and canary selector app=web,track=canary,version=v1 both match pods web-canary-x/,
      ],
    ] as const) {
      const world = webWorld(spec);
      world.pods.push({ metadata: { name: 'web-canary-x', labels: { app: 'web', version: 'v1', track: 'canary' } } });
      const { world: end, last } = converge(world);
      assert.ok(last);
      assert.equal(conditionOf(last, 'Failure').reason, 'SelectorsMix');
      assert.match(conditionOf(last, 'Failure').message, message);
      assert.ok(end.services.has('web-canary'));
      assert.deepEqual(end.services.get('web')?.spec?.selector, { app: 'web', version: 'v1' }, 'not retargeted');
    }
  });

  it('a canary with no Ready pod gets no traffic: the weight is held at 0 % and said, until a pod is Ready', () => {
    const world = webWorld();
    world.pods = [
      ...world.pods.filter((item) => item.metadata?.labels?.version !== 'v2'),
      pod('web-v2-pending', { app: 'web', version: 'v2' }, false),
    ];
    const { world: held, last } = converge(world);
    assert.ok(last);
    assert.deepEqual(
      held.services.get('web')?.spec?.selector,
      { app: TAKEN, version: TAKEN },
      'the release still takes the Service over',
    );
    const canary = () => last.l4Config.listeners[0]?.backends.find((backend) => backend.name === 'canary')?.weight;
    assert.equal(canary(), 0);
    assert.deepEqual(
      last.status.ports.map((port) => [port.weight, port.served]),
      [[10, 0]],
    );
    assert.equal(last.status.weights, 'web:80=0% (asks 10%)');
    assert.equal(conditionOf(last, 'Progressing').reason, 'WaitingForReadyPods');
    assert.match(conditionOf(last, 'Progressing').message, /canary selector app=web,version=v2 matches no Ready pod/);
    assert.equal(conditionOf(last, 'Ready').status, 'False');
    held.pods = held.pods.map((item) =>
      item.metadata?.name === 'web-v2-pending' ? pod('web-v2-pending', { app: 'web', version: 'v2' }) : item,
    );
    const { last: released } = converge(held);
    assert.equal(released?.l4Config.listeners[0]?.backends.find((backend) => backend.name === 'canary')?.weight, 10);
    assert.equal(released?.status.weights, 'web:80=10%');
    assert.equal(released && conditionOf(released, 'Ready').status, 'True');
  });

  it('a stable side with no Ready pod gets no traffic while the canary has one', () => {
    const world = webWorld();
    world.pods = world.pods.filter((item) => item.metadata?.labels?.version !== 'v1');
    const { last } = converge(world);
    assert.deepEqual(
      last?.l4Config.listeners[0]?.backends.map((backend) => [backend.name, backend.weight]),
      [
        ['forked', 0],
        ['canary', 100],
      ],
    );
    assert.match(
      last ? conditionOf(last, 'Progressing').message : '',
      /forked selector app=web,version=v1 matches no Ready pod/,
    );
  });

  it('neither side Ready: the asked weights stand (there is nothing better), and it is said', () => {
    const world = webWorld();
    world.pods = world.pods.filter((item) => item.metadata?.labels?.app !== 'web');
    const { last } = converge(world);
    assert.deepEqual(
      last?.l4Config.listeners[0]?.backends.map((backend) => [backend.name, backend.weight]),
      [
        ['forked', 90],
        ['canary', 10],
      ],
    );
    assert.match(
      last ? conditionOf(last, 'Progressing').message : '',
      /neither the forked selector .* nor the canary selector .* matches a Ready pod/,
    );
  });

  it('drift: an edited targetPort is repaired; a port someone adds is proxied at 100 % stable', () => {
    const { world } = converge(webWorld());
    const web = structuredClone(world.services.get('web')!);
    web.spec!.ports = [
      { ...web.spec!.ports![0]!, targetPort: 8000 },
      { name: 'admin', port: 9090, protocol: 'TCP', targetPort: 9091 },
    ];
    web.metadata!.resourceVersion = '77';
    world.services.set('web', web);
    // The repair waits for the new port's listener, then takes the whole Service back in one patch.
    assert.equal(
      run(world).steps.some((step) => step.reason === 'repair'),
      false,
    );
    const { world: end } = converge(world, options(), Infinity, false);
    assertServed(end);
    assert.deepEqual(
      end.services.get('web')?.spec?.ports?.map((port) => port.targetPort),
      [8080, 8081],
    );
    assert.deepEqual(
      end.services.get('web-forked')?.spec?.ports?.map((port) => [port.port, port.targetPort]),
      [
        [80, 8000],
        [9090, 9091],
      ],
    );
    assert.deepEqual(
      end.release?.status?.ports?.map((port) => [port.port, port.proxyPort, port.weight]),
      [
        [80, 8080, 10],
        [9090, 8081, 0],
      ],
    );
  });

  it('allocations stay put when ports are removed and added', () => {
    const { world } = converge(webWorld(WEB_SPEC, twoPorts()));
    assert.deepEqual(
      world.release?.status?.ports?.map((port) => [port.port, port.proxyPort]),
      [
        [80, 8080],
        [443, 8081],
      ],
    );
    const web = structuredClone(world.services.get('web')!);
    web.spec!.ports = web.spec!.ports!.filter((port) => port.port === 443);
    world.services.set('web', web);
    world.release = {
      ...world.release!,
      spec: { services: [{ ...WEB_SPEC.services![0]!, ports: [{ port: 443, config: { weight: 30 } }] }] },
    };
    const { world: shrunk } = converge(world);
    assert.deepEqual(
      shrunk.release?.status?.ports?.map((port) => [port.port, port.proxyPort, port.weight]),
      [[443, 8081, 30]],
    );
    const grown = structuredClone(shrunk.services.get('web')!);
    grown.spec!.ports = [...grown.spec!.ports!, { name: 'alt', port: 8443, protocol: 'TCP', targetPort: 8443 }];
    shrunk.services.set('web', grown);
    const { world: end } = converge(shrunk, options(), Infinity, false);
    assertServed(end);
    assert.deepEqual(
      end.release?.status?.ports?.map((port) => [port.port, port.proxyPort]),
      [
        [443, 8081],
        [8443, 8080],
      ],
    );
  });

  it('a Service dropped from the spec is restored and its copies go; the other stays', () => {
    const api = service('api', { app: 'api' }, [{ port: 9000 }]);
    const spec: CanaryReleaseSpec = {
      services: [
        ...(WEB_SPEC.services ?? []),
        { service: 'api', canaryServiceOperations: { add: { track: 'canary' } }, ports: [{ port: 9000 }] },
      ],
    };
    const { world } = converge(webWorld(spec, [...webWorld().services.values(), api]));
    world.release = { ...world.release!, spec: WEB_SPEC };
    const { world: end, last } = converge(world);
    assert.ok(last);
    assert.deepEqual(end.services.get('api')?.spec, api.spec);
    assert.equal(end.services.get('api')?.metadata?.annotations?.[ANNOTATION_ORIGINAL], undefined);
    assert.equal(end.services.has('api-forked') || end.services.has('api-canary'), false);
    assert.deepEqual(end.services.get('web')?.spec?.selector, { app: TAKEN, version: TAKEN });
    assert.deepEqual(
      last.status.ports.map((port) => port.service),
      ['web'],
    );
  });

  it('survives a crash after any step of the first rollout', () => {
    const oneShot = assertCrashSafe(webWorld(WEB_SPEC, twoPorts()));
    assert.ok(oneShot.steps.length > 5);
  });
});
