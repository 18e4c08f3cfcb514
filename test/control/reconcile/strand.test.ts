// Never strand a Service (issue 9), on the pure reconcile: what ordinary actions of a Service's
// owner do to a running release — a GitOps re-apply, an edited targetPort, a renumbered port — and
// that hand-backs wait for a Ready pod. Every converge() also checks, after each step, that no
// original selects nothing or a mix of the proxy's labels and others (world.ts assertServed).

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service, V1ServicePort } from '@kubernetes/client-node';
import { parseSaved } from '../../../src/control/service/originals.ts';
import { reconcile } from '../../../src/control/reconcile.ts';
import { ANNOTATION_ORIGINAL } from '../../../src/api/names.ts';
import type { CanaryRelease } from '../../../src/api/release-types.ts';
import type { Transition } from '../../../src/api/spec-types.ts';
import {
  applyStep,
  assertCrashSafe,
  assertServed,
  clone,
  conditionOf,
  converge,
  listen,
  NOW,
  options,
  pod,
  PROXY,
  reasons,
  run,
  service,
  TAKEN,
  takenOverByOldProxy,
  webWorld,
  WEB_SPEC,
  type World,
} from './world.ts';

const manifest = () =>
  service('web', { app: 'web', version: 'v1' }, [
    { name: 'http', port: 80, targetPort: 8000 },
    { name: 'admin', port: 9000, targetPort: 9100 },
  ]);

function running(): World {
  return converge(webWorld(WEB_SPEC, [manifest()])).world;
}

/** The live Service changed as `change` says, as a new object version. */
function edit(world: World, change: (web: V1Service) => void): World {
  const next = clone(world);
  const web = structuredClone(next.services.get('web')!);
  change(web);
  web.metadata!.resourceVersion = String(Number(web.metadata!.resourceVersion) + 1000);
  next.services.set('web', web);
  return next;
}

/**
 * What `kubectl apply -f web.yaml` of the user's manifest does to the live Service (three-way
 * strategic merge: the selector map merged, each port's targetPort set back): the mixed selector.
 */
function reapply(
  world: World,
  selector = { app: 'web', version: 'v1' },
  targetPorts: Record<number, number> = { 80: 8000, 9000: 9100 },
): World {
  return edit(world, (web) => {
    web.spec!.selector = { ...web.spec!.selector, ...selector };
    web.spec!.ports = web.spec!.ports!.map((port) => ({
      ...port,
      targetPort: targetPorts[port.port] ?? port.targetPort,
    }));
  });
}

function savedOf(world: World) {
  const parsed = parseSaved(world.services.get('web')?.metadata?.annotations?.[ANNOTATION_ORIGINAL] ?? '');
  assert.ok(parsed.ok, 'a saved original');
  return parsed.saved;
}

function targetPorts(service: V1Service | undefined): (number | string | undefined)[] {
  return (service?.spec?.ports ?? []).map((port: V1ServicePort) => port.targetPort);
}

const requesting =
  (transition: Transition) =>
  (world: World): World => {
    const next = clone(world);
    next.release = { ...next.release!, spec: { ...next.release!.spec, transition } } satisfies CanaryRelease;
    return next;
  };

const TAKEN_OVER = { app: TAKEN, version: TAKEN };

describe('a GitOps re-apply of the Service is drift, repaired at once, never a hand-over', () => {
  it("a client-side re-apply puts the owner's values back: the Service selects the app's pods, then is taken back in one patch", () => {
    const world = reapply(running());
    assert.deepEqual(
      world.services.get('web')?.spec?.selector,
      { app: 'web', version: 'v1' },
      'the same keys: no mix, the stable pods answer',
    );
    const first = run(world);
    assert.equal(first.mode, 'running');
    assert.equal(first.status.transition, null, 'no deprecation');
    assert.deepEqual(reasons(first), ['repair web']);
    const end = assertCrashSafe(world).world;
    assert.deepEqual(end.services.get('web')?.spec?.selector, TAKEN_OVER);
    assert.deepEqual(targetPorts(end.services.get('web')), [8080, 8081]);
    assert.deepEqual(savedOf(end).selector, { app: 'web', version: 'v1' });
    assert.deepEqual(
      savedOf(end).ports.map((port) => port.targetPort),
      [8000, 9100],
      'the saved original never holds a proxy port',
    );
    assert.equal(end.release?.status?.phase, 'Running');
  });

  it('a re-applied manifest with a new selector is followed: the stable copy selects it, and Deprecated restores it', () => {
    const base = running();
    base.pods.push(pod('web-v3-a', { app: 'web', version: 'v3' }));
    const world = reapply(base, { app: 'web', version: 'v3' });
    const end = converge(world, options(), Infinity, false).world;
    assertServed(end);
    assert.deepEqual(end.services.get('web-forked')?.spec?.selector, { app: 'web', version: 'v3' });
    const deprecated = converge(requesting('Deprecated')(end)).world;
    assert.deepEqual(deprecated.services.get('web')?.spec?.selector, { app: 'web', version: 'v3' });
    assert.deepEqual(targetPorts(deprecated.services.get('web')), [8000, 9100]);
  });

  it("Deprecated straight after a re-apply restores the owner's Service exactly", () => {
    const end = assertCrashSafe(requesting('Deprecated')(reapply(running()))).world;
    assert.deepEqual(end.services.get('web')?.spec, manifest().spec);
    assert.equal(end.services.get('web')?.metadata?.annotations?.[ANNOTATION_ORIGINAL], undefined);
  });

  it('a selector the owner replaces with other keys (server-side apply) is followed, and the proxy pods get the new keys', () => {
    const base = running();
    base.pods.push(pod('web-front', { app: 'web', tier: 'front' }));
    const world = edit(base, (web) => {
      web.spec!.selector = { app: 'web', tier: 'front' };
    });
    assert.equal(run(world).status.transition, null, 'not a hand-over');
    const end = converge(world, options(), Infinity, false).world;
    assertServed(end);
    assert.deepEqual(end.services.get('web')?.spec?.selector, { app: TAKEN, tier: TAKEN });
    assert.deepEqual(end.release?.status?.takeover?.keys, ['app', 'tier']);
    assert.deepEqual(end.services.get('web-forked')?.spec?.selector, { app: 'web', tier: 'front' });
    assert.deepEqual(savedOf(end).selector, { app: 'web', tier: 'front' });
  });

  it("kubectl replace (the saved original gone with the rest) is taken over again from the owner's manifest", () => {
    const world = edit(running(), (web) => {
      web.spec = structuredClone(manifest().spec);
      web.metadata!.annotations = {};
    });
    const end = converge(world, options(), Infinity, false).world;
    assertServed(end);
    assert.deepEqual(end.services.get('web')?.spec?.selector, TAKEN_OVER);
    assert.deepEqual(
      savedOf(end).ports.map((port) => port.targetPort),
      [8000, 9100],
    );
    assert.equal(end.release?.status?.phase, 'Running');
  });
});

describe("in a pod of its own the proxy listens on the Services' own targetPorts", () => {
  const inPod = options({ inPod: true, reservedPorts: new Set([9090]) });

  it('the takeover changes only selector values; it waits for a Ready proxy pod carrying them', () => {
    const world = webWorld(WEB_SPEC, [manifest()]);
    world.pods = world.pods.map((item) =>
      item.metadata?.name === 'proxy-a' ? pod('proxy-a', item.metadata.labels ?? {}, false) : item,
    );
    const waiting = converge(world, inPod);
    assert.deepEqual(
      waiting.world.services.get('web')?.spec?.selector,
      { app: 'web', version: 'v1' },
      'not taken over yet',
    );
    assert.match(
      waiting.last ? conditionOf(waiting.last, 'Progressing').message : '',
      new RegExp(
        `waiting for a Ready proxy pod labelled app=${TAKEN},version=${TAKEN} \\(no proxy pod carrying its labels is Ready yet`,
      ),
    );
    const ready = clone(waiting.world);
    ready.pods = ready.pods.map((item) =>
      item.metadata?.name === 'proxy-a' ? pod('proxy-a', item.metadata.labels ?? {}) : item,
    );
    const end = assertCrashSafe(ready, inPod).world;
    assert.deepEqual(end.services.get('web')?.spec?.selector, TAKEN_OVER);
    assert.deepEqual(end.services.get('web')?.spec?.ports, manifest().spec?.ports, 'the ports as the owner wrote them');
    assert.deepEqual(
      end.release?.status?.ports?.map((port) => [port.port, port.proxyPort]),
      [
        [80, 8000],
        [9000, 9100],
      ],
    );
    assert.deepEqual(end.release?.status?.takeover, {
      keys: ['app', 'version'],
      value: TAKEN,
      namedPorts: [],
      movedPorts: [],
    });
  });

  it('a proxy pod of an older rendering (without the labels) holds the takeover back: a 0.2 proxy never sees a Service it cannot read', () => {
    const world = webWorld(WEB_SPEC, [manifest()]);
    world.pods = [
      ...world.pods.filter((item) => item.metadata?.name !== 'proxy-a'),
      pod('proxy-a', { ...PROXY, ...TAKEN_OVER }),
      pod('proxy-old', PROXY),
    ];
    // No manager here: the old pod keeps its labels.
    let desired = run(world, inPod);
    for (let pass = 0; pass < 5; pass += 1) {
      listen(world, desired);
      for (const step of desired.steps) applyStep(world, step);
      desired = run(world, inPod);
    }
    assert.deepEqual(world.services.get('web')?.spec?.selector, { app: 'web', version: 'v1' }, 'not taken over');
    assert.match(conditionOf(desired, 'Progressing').message, /proxy pods proxy-old do not carry its labels yet/);
  });

  it('a re-apply with or without targetPort changes nothing the proxy pods cannot serve', () => {
    const running = converge(webWorld(WEB_SPEC, [manifest()]), inPod).world;
    const same = run(reapply(running), inPod);
    assert.deepEqual(reasons(same), ['repair web'], 'the values taken back; the targetPorts were never moved');
    const omitted = reapply(running, { app: 'web', version: 'v1' }, { 80: 80, 9000: 9000 });
    const end = converge(omitted, inPod, Infinity, false).world;
    assertServed(end);
    assert.deepEqual(
      targetPorts(end.services.get('web')),
      [80, 9000],
      "a targetPort defaulted from the port is the owner's now",
    );
    assert.deepEqual(
      end.release?.status?.ports?.map((port) => port.proxyPort),
      [80, 9000],
      'and the proxy listens on it',
    );
  });

  it('a number two Services need, the admin port, and a name two need: one keeps it, the other moves to a port from --port-base, said in status', () => {
    const api = service('api', { app: 'api', version: 'v1' }, [
      { name: 'http', port: 80, targetPort: 8000 },
      { name: 'metrics', port: 90, targetPort: 9090 },
      { name: 'named', port: 91, targetPort: 'web' },
    ]);
    const web = service('web', { app: 'web', version: 'v1' }, [
      { name: 'http', port: 80, targetPort: 8000 },
      { name: 'named', port: 81, targetPort: 'web' },
    ]);
    const spec = {
      services: [
        ...WEB_SPEC.services!,
        { service: 'api', canaryServiceOperations: { add: { version: 'v2' } }, ports: [] },
      ],
    };
    const world = webWorld(spec, [web, api]);
    world.pods.push(pod('api-a', { app: 'api', version: 'v1' }), pod('api-b', { app: 'api', version: 'v2' }));
    const end = converge(world, inPod).world;
    assert.deepEqual(end.release?.status?.takeover?.movedPorts, [
      "web:80/TCP: targetPort 8000 → 8082 (8000 is api:80/TCP's on the proxy pods)",
      "web:81/TCP: targetPort web → 8083 (the name web is api:91/TCP's on the proxy container)",
      "api:90/TCP: targetPort 9090 → 8080 (9090 is the proxy's own port)",
    ]);
    assert.deepEqual(end.release?.status?.takeover?.namedPorts, [
      { name: 'web', containerPort: 8081, protocol: 'TCP' },
    ]);
    assert.deepEqual(targetPorts(end.services.get('api')), [8000, 8080, 'web']);
    assert.deepEqual(targetPorts(end.services.get('web')), [8082, 8083]);
  });

  it('a named UDP targetPort is recorded as UDP in status.takeover: the manager declares it so, and only a UDP declaration resolves it', () => {
    const web = service('web', { app: 'web', version: 'v1' }, [
      { name: 'http', port: 80, targetPort: 'http' },
      { name: 'dns', port: 53, targetPort: 'dns', protocol: 'UDP' },
    ]);
    const end = converge(webWorld(WEB_SPEC, [web]), inPod).world;
    assert.deepEqual(end.release?.status?.takeover?.namedPorts, [
      { name: 'dns', containerPort: 8080, protocol: 'UDP' },
      { name: 'http', containerPort: 8081, protocol: 'TCP' },
    ]);
    assert.deepEqual(targetPorts(end.services.get('web')), ['http', 'dns'], 'both names kept');
  });
});

describe('a Service a 0.2 proxy took over stays so until it is handed back exactly', () => {
  const legacy = () => takenOverByOldProxy(running(), 'web');

  it('it keeps running on the proxy selector; a re-apply (the mix) is repaired to it', () => {
    const world = legacy();
    assert.deepEqual(
      reasons(run(world)).filter((reason) => reason.startsWith('repair') || reason.startsWith('retarget')),
      [],
      'nothing to change',
    );
    const end = assertCrashSafe(reapply(world)).world;
    assert.deepEqual(end.services.get('web')?.spec?.selector, PROXY);
    assert.deepEqual(targetPorts(end.services.get('web')), [8080, 8081]);
    assert.equal(savedOf(end).takeover, undefined);
  });

  it('a selector with the proxy labels removed is a hand-over: automatic deprecation, as before', () => {
    const world = edit(legacy(), (web) => {
      web.spec!.selector = { app: 'web', version: 'v1' };
    });
    assert.equal(run(world).status.transition?.reason, 'SelectorChanged');
  });

  it('Deprecated hands it back exactly, from the saved original', () => {
    const end = assertCrashSafe(requesting('Deprecated')(legacy())).world;
    assert.deepEqual(end.services.get('web')?.spec, manifest().spec);
  });
});

describe("edits of ports by the Service's owner are followed and kept", () => {
  it('a targetPort the owner changes (8000 → 8001) reaches the copies, is set back to the proxy port, and is restored', () => {
    const world = edit(running(), (web) => {
      web.spec!.ports![0]!.targetPort = 8001;
    });
    const end = assertCrashSafe(world).world;
    assert.deepEqual(targetPorts(end.services.get('web')), [8080, 8081]);
    assert.deepEqual(targetPorts(end.services.get('web-forked')), [8001, 9100]);
    assert.deepEqual(targetPorts(end.services.get('web-canary')), [8001, 9100]);
    const restored = converge(requesting('Deprecated')(end)).world;
    assert.deepEqual(targetPorts(restored.services.get('web')), [8001, 9100]);
  });

  it("a renumbered port (9000 → 9002) keeps its proxy port and listener; the saved targetPort is the owner's, never the proxy port", () => {
    const world = edit(running(), (web) => {
      web.spec!.ports![1]!.port = 9002;
    });
    const first = run(world);
    assert.deepEqual(
      first.l4Config.listeners.map((listener) => [listener.listen.port, listener.backends[0]?.port]),
      [
        [8080, 80],
        [8081, 9002],
      ],
    );
    const end = assertCrashSafe(world).world;
    assert.deepEqual(
      end.release?.status?.ports?.map((port) => [port.port, port.proxyPort]),
      [
        [80, 8080],
        [9002, 8081],
      ],
    );
    assert.deepEqual(
      end.services.get('web-forked')?.spec?.ports?.map((port) => [port.port, port.targetPort]),
      [
        [80, 8000],
        [9002, 9100],
      ],
    );
    assert.deepEqual(
      savedOf(end).ports.map((port) => [port.port, port.targetPort]),
      [
        [80, 8000],
        [9002, 9100],
      ],
    );
    const restored = converge(requesting('Deprecated')(end)).world;
    assert.deepEqual(
      restored.services.get('web')?.spec?.ports?.map((port) => [port.port, port.targetPort]),
      [
        [80, 8000],
        [9002, 9100],
      ],
    );
  });

  it('a port listed in the spec and renumbered holds the release until the spec follows, serving meanwhile', () => {
    const world = edit(running(), (web) => {
      web.spec!.ports![0]!.port = 81;
    });
    const held = run(world);
    assert.equal(held.mode, 'holding');
    assert.match(
      conditionOf(held, 'Failure').message,
      /spec.services\[0\].ports\[0\]: Service web has no port 80\/TCP/,
    );
    assert.deepEqual(
      held.l4Config.listeners.map((listener) => listener.listen.port),
      [8080, 8081],
      'still served',
    );
    const fixed = clone(world);
    fixed.release = {
      ...fixed.release!,
      spec: {
        services: [{ ...WEB_SPEC.services![0]!, ports: [{ port: 81, protocol: 'TCP', config: { weight: 10 } }] }],
      },
    };
    const end = converge(fixed, options(), Infinity, false).world;
    assert.deepEqual(
      end.release?.status?.ports?.map((port) => [port.port, port.proxyPort]),
      [
        [81, 8080],
        [9000, 8081],
      ],
    );
    assert.deepEqual(
      savedOf(end).ports.map((port) => [port.port, port.targetPort]),
      [
        [81, 8000],
        [9000, 9100],
      ],
    );
  });
});

describe('hand-backs wait for a Ready pod on the side they hand the Service to', () => {
  it('Adopted waits while the canary has no Ready pod, says why, and adopts once one is Ready', () => {
    const base = running();
    base.pods = base.pods.map((item) =>
      item.metadata?.labels?.version === 'v2' ? pod(item.metadata.name!, item.metadata.labels, false) : item,
    );
    const waiting = converge(requesting('Adopted')(base));
    assert.deepEqual(waiting.world.services.get('web')?.spec?.selector, TAKEN_OVER, 'the Service stays on the proxy');
    assert.equal(waiting.last?.status.phase, 'Adopting');
    assert.equal(waiting.last && conditionOf(waiting.last, 'Progressing').reason, 'WaitingForReadyPods');
    assert.match(
      waiting.last ? conditionOf(waiting.last, 'Progressing').message : '',
      /canary selector app=web,version=v2 matches no Ready pod/,
    );
    assert.ok(waiting.world.services.has('web-canary'), 'the copies stay');
    const ready = clone(waiting.world);
    ready.pods = ready.pods.map((item) =>
      item.metadata?.labels?.version === 'v2' ? pod(item.metadata.name!, item.metadata.labels) : item,
    );
    const end = converge(ready).world;
    assert.deepEqual(end.services.get('web')?.spec?.selector, { app: 'web', version: 'v2' });
    assert.equal(end.release?.status?.phase, 'Adopted');
  });

  it('Deprecated waits while the stable side has no Ready pod and the canary has one', () => {
    const base = running();
    base.pods = base.pods.filter((item) => item.metadata?.labels?.version !== 'v1');
    const waiting = converge(requesting('Deprecated')(base));
    assert.deepEqual(waiting.world.services.get('web')?.spec?.selector, TAKEN_OVER);
    assert.equal(waiting.last?.status.phase, 'Deprecating');
  });

  it('with no Ready pod on either side nothing is gained by waiting: the hand-back goes ahead', () => {
    const base = running();
    base.pods = [];
    const end = converge(requesting('Adopted')(base)).world;
    assert.equal(end.release?.status?.phase, 'Adopted');
  });
});

describe('status says what is wrong, and the columns agree', () => {
  it('lower-case or unsupported protocols are refused naming the field', () => {
    for (const protocol of ['udp', 'SCTP']) {
      const world = webWorld({
        services: [
          { ...WEB_SPEC.services![0]!, ports: [{ port: 80, protocol: protocol as 'UDP', config: { weight: 10 } }] },
        ],
      });
      const desired = run(world);
      assert.equal(desired.status.phase, 'Holding');
      assert.match(
        conditionOf(desired, 'Failure').message,
        new RegExp(
          `spec.services\\[0\\].ports\\[0\\].protocol: "${protocol}" is not supported; write TCP or UDP \\(upper case\\)`,
        ),
      );
    }
  });

  it('a Service held by another release: Holding, waiting (not a failure), nothing written to the Service', () => {
    const world = webWorld();
    const web = world.services.get('web')!;
    web.metadata!.annotations = {
      [ANNOTATION_ORIGINAL]: JSON.stringify({
        release: 'other',
        retargeted: true,
        selector: { app: 'web', version: 'v1' },
        ports: [],
      }),
    };
    const desired = run(world);
    assert.equal(desired.status.phase, 'Holding');
    assert.equal(conditionOf(desired, 'Failure').status, 'False');
    assert.equal(conditionOf(desired, 'Progressing').reason, 'WaitingForOtherRelease');
    assert.match(
      conditionOf(desired, 'Progressing').message,
      /Service web is under CanaryRelease other; this release starts once that one has ended/,
    );
    assert.equal(
      desired.steps.some((step) => step.kind === 'patchService' || step.kind === 'createService'),
      false,
    );
  });

  it('an API error the controller saw is a Failure, and Ready is False while it lasts', () => {
    const { world } = converge(webWorld());
    assert.equal(conditionOf(run(world), 'Ready').status, 'True');
    const observed = {
      release: world.release!,
      services: world.services,
      pods: world.pods,
      listening: world.listening,
      deployments: world.deployments,
      replicaSets: world.replicaSets,
    };
    const reported = reconcile({ ...observed, apiError: '403 Forbidden: services "web" is forbidden' }, options());
    assert.equal(conditionOf(reported, 'Failure').reason, 'APIError');
    assert.match(conditionOf(reported, 'Failure').message, /the last API request failed: 403 Forbidden/);
    assert.equal(conditionOf(reported, 'Ready').status, 'False');
  });

  it('a Ready proxy replica started with other --weight flags is a Failure naming it', () => {
    const { world } = converge(webWorld());
    const replica = (name: string, args: string[]) => ({
      ...pod(name, PROXY),
      spec: { containers: [{ name: 'proxy', image: 'canary-l4', args: ['proxy', ...args] }] },
    });
    world.pods.push(replica('proxy-b', ['--weight', 'web:80=0']), replica('proxy-c', []));
    const desired = run(world);
    assert.equal(conditionOf(desired, 'Failure').reason, 'ReplicasDisagree');
    assert.match(
      conditionOf(desired, 'Failure').message,
      /replica proxy-b serves with --weight web:80=0, this writer with none/,
    );
    assert.doesNotMatch(conditionOf(desired, 'Failure').message, /proxy-c/);
    assert.equal(
      conditionOf(
        run(world, options({ weightOverrides: [{ service: 'web', port: 80, weight: 0 }] })),
        'Failure',
      ).message.includes('proxy-c'),
      true,
    );
  });
});

describe('after the hand-back, the proxy serves on for the grace period', () => {
  const grace = (at: number) => options({ handBackGraceMs: 10_000, now: new Date(NOW.getTime() + at) });

  it('the copies, listeners and status ports stay until the grace has run out since the hand-back, then go', () => {
    const start = requesting('Deprecated')(running());
    const handedBack = converge(start, grace(0));
    assert.deepEqual(
      handedBack.world.services.get('web')?.spec?.selector,
      { app: 'web', version: 'v1' },
      'handed back at once',
    );
    assert.equal(handedBack.last?.status.phase, 'Deprecating');
    assert.equal(handedBack.last && conditionOf(handedBack.last, 'Progressing').reason, 'HandBackGrace');
    assert.deepEqual(
      handedBack.last?.l4Config.listeners.map((listener) => listener.listen.port),
      [8080, 8081],
      'still listening',
    );
    assert.ok(
      handedBack.world.services.has('web-forked') && handedBack.world.services.has('web-canary'),
      'the copies stay',
    );
    assert.equal(handedBack.last?.requeueAfterMs, 10_000);
    const later = converge(handedBack.world, grace(4_000));
    assert.equal(later.last?.requeueAfterMs, 6_000, 'a later pass waits out only the rest');
    assert.deepEqual(later.steps, [], 'nothing written while waiting');
    const done = converge(handedBack.world, grace(10_000));
    assert.equal(done.world.release?.status?.phase, 'Deprecated');
    assert.equal(done.world.services.has('web-forked'), false);
    assert.deepEqual(done.last?.l4Config.listeners ?? [], []);
  });

  it('a crash during the grace resumes it from status, neither restarting nor skipping it', () => {
    const start = requesting('Adopted')(running());
    for (let k = 0; k < converge(start, grace(0)).steps.length; k += 1) {
      const crashed = converge(start, grace(0), k);
      const resumed = converge(crashed.world, grace(3_000));
      assert.notEqual(
        resumed.world.release?.status?.phase,
        'Adopted',
        `crash after ${k} steps: the grace is not skipped`,
      );
      assert.ok(
        resumed.world.release?.status?.transition?.handedBackAt,
        `crash after ${k} steps: the hand-back time is recorded`,
      );
      assert.equal(
        converge(resumed.world, grace(20_000)).world.release?.status?.phase,
        'Adopted',
        `crash after ${k} steps`,
      );
    }
  });
});
