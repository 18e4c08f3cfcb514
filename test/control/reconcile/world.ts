// A tiny in-memory cluster for the pure reconcile: fixtures, a step executor that behaves as the
// applier and the apiserver would (merge patches with resourceVersion preconditions, cluster IP
// allocation, finalizers, owner GC), a data plane that listens on whatever the L4 config says,
// and a convergence loop that checks, after every step, that no original Service selects nothing
// and that one selecting the proxy only targets ports the proxy listens on.

import assert from 'node:assert/strict';
import type { V1Deployment, V1Pod, V1ReplicaSet, V1Service, V1ServicePort } from '@kubernetes/client-node';
import { reconcile, type Desired, type ReconcileOptions, type Step } from '../../../src/control/reconcile.ts';
import { ANNOTATION_ORIGINAL, defaultProxySelector, LABEL_ROLE, type Labels } from '../../../src/api/names.ts';
import type { CanaryRelease } from '../../../src/api/release-types.ts';
import type { CanaryReleaseSpec } from '../../../src/api/spec-types.ts';
import type { CanaryReleaseStatus } from '../../../src/api/status-types.ts';
import { formatSaved, parseSaved } from '../../../src/control/service/originals.ts';
import { applyMergePatch } from '../../../src/control/service/patches.ts';
import { selectorMatches, selectorsEqual } from '../../../src/control/service/selectors.ts';
import { selectsProxy, takeoverValue } from '../../../src/control/service/takeover-selector.ts';
import { takeoverLabels } from '../../../src/api/labels.ts';
import { describeStep as describeApplied } from '../../../src/control/loop/apply.ts';
import type { Evidence } from '../../../src/control/progress/analysis/evidence.ts';
import { formatWeights } from '../../../src/control/service/l4.ts';
import { patchTemplate } from '../../../src/control/workload/strategic-merge.ts';
import { removeDeployment, rollOut } from './deployments.ts';

export const NOW = new Date('2025-01-01T00:00:00.250Z');
export const RELEASE = 'rel';
export const PROXY = defaultProxySelector(RELEASE);
/** The value every selector key of a Service taken over by the release gets. */
export const TAKEN = takeoverValue(RELEASE);

export interface World {
  release: CanaryRelease | undefined;
  services: Map<string, V1Service>;
  pods: V1Pod[];
  /** Deployments roll out at once here: each write leaves its ReplicaSet and Ready pods (deployments.ts). */
  deployments: Map<string, V1Deployment>;
  replicaSets: V1ReplicaSet[];
  listening: Set<number>;
  counter: number;
  /** What the proxies counted over the latest interval (the leader's collector). */
  evidence?: Evidence;
}

export function options(overrides: Partial<ReconcileOptions> = {}): ReconcileOptions {
  return { proxySelector: PROXY, portBase: 8080, weightOverrides: [], handBackGraceMs: 0, now: NOW, ...overrides };
}

export function service(
  name: string,
  selector: Labels,
  ports: V1ServicePort[],
  extra: { type?: string; clusterIP?: string } = {},
): V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, resourceVersion: '1' },
    spec: {
      type: extra.type ?? 'ClusterIP',
      clusterIP: extra.clusterIP ?? `10.0.0.${name.length}`,
      selector: { ...selector },
      ports: ports.map((port) => ({ protocol: 'TCP', targetPort: port.port, ...port })),
    },
  };
}

/** A Running pod, Ready unless told otherwise (an endpoint, as the endpoints controller decides). */
export function pod(name: string, labels: Labels, ready = true): V1Pod {
  return {
    metadata: { name, labels: { ...labels } },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

export function release(spec: CanaryReleaseSpec, extra: Partial<CanaryRelease['metadata']> = {}): CanaryRelease {
  return {
    apiVersion: 'canary-l4.io/v1alpha1',
    kind: 'CanaryRelease',
    metadata: { name: RELEASE, namespace: 'ns', uid: 'uid-rel', generation: 1, ...extra },
    spec,
  };
}

/** web: selects app=web,version=v1 on port 80; canary pods carry version=v2. */
export const WEB_SPEC: CanaryReleaseSpec = {
  services: [
    {
      service: 'web',
      canaryServiceOperations: { add: { version: 'v2' } },
      ports: [{ port: 80, protocol: 'TCP', config: { weight: 10 } }],
    },
  ],
};

export function webWorld(
  spec: CanaryReleaseSpec = WEB_SPEC,
  services: V1Service[] = [
    service('web', { app: 'web', version: 'v1' }, [{ name: 'http', port: 80, targetPort: 8000 }]),
  ],
): World {
  return {
    release: release(spec),
    services: new Map(services.map((item) => [item.metadata?.name ?? '', item])),
    pods: [
      pod('web-v1-a', { app: 'web', version: 'v1' }),
      pod('web-v2-a', { app: 'web', version: 'v2' }),
      pod('proxy-a', PROXY),
    ],
    deployments: new Map(),
    replicaSets: [],
    listening: new Set(),
    counter: 100,
  };
}

export function clone(world: World): World {
  return { ...structuredClone({ ...world, listening: [...world.listening] }), listening: new Set(world.listening) };
}

export function run(world: World, opts: ReconcileOptions = options()): Desired {
  assert.ok(world.release, 'the release is gone');
  return reconcile(
    {
      release: world.release,
      services: world.services,
      pods: world.pods,
      listening: world.listening,
      deployments: world.deployments,
      replicaSets: world.replicaSets,
      ...(world.evidence === undefined ? {} : { evidence: world.evidence }),
    },
    opts,
  );
}

/** The data plane: every listener of the config listens and is ready at once. */
export function listen(world: World, desired: Desired): void {
  world.listening = new Set(desired.l4Config.listeners.map((listener) => listener.listen.port));
}

export function applyStep(world: World, step: Step): void {
  world.counter += 1;
  const release = world.release;
  assert.ok(release, 'a step for a release that is gone');
  switch (step.kind) {
    case 'patchRelease': {
      const metadata = { ...release.metadata, finalizers: [...step.patch.metadata.finalizers] };
      world.release = { ...release, metadata };
      if (metadata.deletionTimestamp !== undefined && metadata.finalizers.length === 0) {
        world.release = undefined;
        for (const [name, item] of world.services) {
          if (item.metadata?.ownerReferences?.some((owner) => owner.uid === metadata.uid)) world.services.delete(name);
        }
        for (const [name, item] of world.deployments) {
          if (item.metadata?.ownerReferences?.some((owner) => owner.uid === metadata.uid))
            removeDeployment(world, name);
        }
      }
      return;
    }
    case 'writeStatus':
      // As the apiserver applies it: a merge patch, in which a null deletes its key.
      world.release = {
        ...release,
        status: applyMergePatch(release.status ?? {}, step.status) as CanaryRelease['status'],
      };
      return;
    case 'createService': {
      const name = step.service.metadata?.name ?? '';
      assert.ok(!world.services.has(name), `create ${name}: AlreadyExists`);
      const created = structuredClone(step.service);
      created.metadata = {
        ...created.metadata,
        uid: `uid-${name}-${world.counter}`,
        resourceVersion: String(world.counter),
      };
      created.spec = { ...created.spec, clusterIP: `10.96.0.${world.counter % 250}` };
      world.services.set(name, created);
      return;
    }
    case 'deleteService': {
      const existing = world.services.get(step.name);
      if (existing !== undefined && existing.metadata?.uid === step.uid) world.services.delete(step.name);
      return;
    }
    case 'createDeployment': {
      const name = step.deployment.metadata?.name ?? '';
      assert.ok(!world.deployments.has(name), `create ${name}: AlreadyExists`);
      rollOut(world, {
        ...structuredClone(step.deployment),
        metadata: {
          ...structuredClone(step.deployment.metadata),
          uid: `uid-${name}-${world.counter}`,
          resourceVersion: String(world.counter),
          generation: 1,
        },
      });
      return;
    }
    case 'replaceDeployment': {
      const name = step.deployment.metadata?.name ?? '';
      const existing = world.deployments.get(name);
      assert.ok(existing, `replace ${name}: NotFound`);
      assert.equal(
        step.deployment.metadata?.resourceVersion,
        existing.metadata?.resourceVersion,
        `replace ${name}: Conflict`,
      );
      rollOut(world, {
        ...structuredClone(step.deployment),
        metadata: {
          ...existing.metadata,
          ...structuredClone(step.deployment.metadata),
          resourceVersion: String(world.counter),
          generation: (existing.metadata?.generation ?? 1) + 1,
        },
      });
      return;
    }
    case 'patchDeployment': {
      const existing = world.deployments.get(step.name);
      assert.ok(existing, `patch ${step.name}: NotFound`);
      const template = patchTemplate(
        existing.spec?.template ?? {},
        (step.patch as { spec?: { template?: unknown } }).spec?.template ?? {},
      );
      if (JSON.stringify(template) === JSON.stringify(existing.spec?.template)) return; // a no-op patch keeps the generation
      rollOut(world, {
        ...existing,
        metadata: {
          ...existing.metadata,
          resourceVersion: String(world.counter),
          generation: (existing.metadata?.generation ?? 1) + 1,
        },
        spec: { ...existing.spec!, template },
      });
      return;
    }
    case 'deleteDeployment': {
      if (world.deployments.get(step.name)?.metadata?.uid === step.uid) removeDeployment(world, step.name);
      return;
    }
    case 'patchService': {
      const existing = world.services.get(step.name);
      assert.ok(existing, `patch ${step.name}: NotFound`);
      const precondition = step.patch.metadata.resourceVersion;
      assert.ok(
        precondition === undefined || precondition === existing.metadata?.resourceVersion,
        `patch ${step.name}: Conflict`,
      );
      const patched = applyMergePatch(existing, step.patch) as V1Service;
      patched.metadata = { ...patched.metadata, resourceVersion: String(world.counter) };
      world.services.set(step.name, patched);
      return;
    }
  }
}

/** The manager: the proxy pods carry the labels status.takeover asks for (at once here; a rollout in a cluster). */
export function relabelProxyPods(world: World): void {
  const takeover = world.release?.status?.takeover;
  const labels = takeover === undefined ? {} : takeoverLabels(takeover);
  const ports = (takeover?.namedPorts ?? []).map(({ name, containerPort, protocol }) => ({
    name,
    containerPort,
    protocol,
  }));
  world.pods = world.pods.map((item) =>
    selectorMatches(PROXY, item.metadata?.labels)
      ? {
          ...item,
          metadata: { ...item.metadata, labels: { ...labels, ...PROXY } },
          spec: { containers: [{ name: 'proxy', ports }] },
        }
      : item,
  );
}

/** Why an original Service does not serve, or undefined when it does. */
function notServing(world: World, name: string, item: V1Service): string | undefined {
  const selector = item.spec?.selector ?? {};
  if (Object.keys(selector).length === 0) return `Service ${name} selects nothing`;
  const proxyKeys = Object.keys(PROXY).filter((key) => key in selector);
  if (proxyKeys.length > 0 && !selectorsEqual(selector, PROXY))
    return `Service ${name} has a mixed selector ${JSON.stringify(selector)}`;
  if (!selectsProxy(item, RELEASE, PROXY)) return undefined;
  if (!world.pods.some((candidate) => selectorMatches(selector, candidate.metadata?.labels)))
    return `Service ${name} is taken over but no proxy pod carries ${JSON.stringify(selector)}`;
  const named = world.release?.status?.takeover?.namedPorts ?? [];
  const silent = (item.spec?.ports ?? []).find((port) => {
    const target = port.targetPort ?? port.port;
    const number =
      typeof target === 'number' ? target : named.find((candidate) => candidate.name === target)?.containerPort;
    return number === undefined || !world.listening.has(number);
  });
  return silent === undefined ? undefined : `Service ${name} targets ${silent.targetPort}, where nothing listens`;
}

function originals(world: World): [string, V1Service][] {
  return [...world.services].filter(([, item]) => item.metadata?.labels?.[LABEL_ROLE] === undefined);
}

/**
 * No original Service selects nothing; one taken over selects a proxy pod that carries its labels
 * and targets only listening ports; a 0.2 takeover is never mixed with the owner's keys. `except`: Services someone else broke and we have not written since.
 */
export function assertServed(world: World, except: ReadonlySet<string> = new Set()): void {
  for (const [name, item] of originals(world)) {
    const problem = except.has(name) ? undefined : notServing(world, name, item);
    assert.equal(problem, undefined, problem);
  }
}

export interface Converged {
  readonly world: World;
  readonly last: Desired | undefined;
  /** Every step applied, in order, across passes. */
  readonly steps: readonly Step[];
}

/** The conditions and the printer columns of a status never contradict each other. */
export function assertStatusConsistent(status: CanaryReleaseStatus): void {
  const of = (type: string) => status.conditions.find((item) => item.type === type)?.status;
  const context = JSON.stringify(status.conditions.map((item) => `${item.type}=${item.status} ${item.reason}`));
  if (of('Ready') === 'True') {
    assert.equal(status.phase, 'Running', `Ready with phase ${status.phase}: ${context}`);
    assert.equal(of('Available'), 'True', `Ready but not Available: ${context}`);
    assert.equal(of('Failure'), 'False', `Ready while failing: ${context}`);
    assert.equal(of('Progressing'), 'False', `Ready while progressing: ${context}`);
  }
  assert.equal(
    of('Archived') === 'True',
    status.phase === 'Adopted' || status.phase === 'Deprecated',
    `Archived vs phase ${status.phase}: ${context}`,
  );
  assert.equal(status.weights, formatWeights(status.ports), 'the WEIGHTS column names every port');
}

/**
 * Reconcile, run the data plane, apply the steps; until a pass has no step. After every step,
 * assertServed: a Service broken by someone else before is checked from our first write to it on
 * (no write of ours may leave it broken). `checkServed: false`
 * for worlds someone else broke (drift), where the check would blame their edit. `crashAfter` stops
 * after that many steps in total, as a crashed proxy would: the rest of its pass is lost and the
 * restarted process listens on nothing until its first reconcile.
 */
export function converge(
  start: World,
  opts: ReconcileOptions = options(),
  crashAfter = Infinity,
  checkServed = true,
): Converged {
  const world = clone(start);
  const steps: Step[] = [];
  const brokenByOthers = new Set(
    originals(world)
      .filter(([name, item]) => notServing(world, name, item) !== undefined)
      .map(([name]) => name),
  );
  for (let pass = 0; pass < 30; pass += 1) {
    if (world.release === undefined) return { world, last: undefined, steps };
    const desired = run(world, opts);
    assertStatusConsistent(desired.status);
    const listenedBefore = [...world.listening].join();
    listen(world, desired);
    // The controller reconciles again when the data plane starts or stops listening somewhere.
    if (desired.steps.length === 0 && [...world.listening].join() === listenedBefore)
      return { world, last: desired, steps };
    for (const step of desired.steps) {
      if (steps.length >= crashAfter) {
        world.listening = new Set();
        return { world, last: undefined, steps };
      }
      applyStep(world, step);
      if (step.kind === 'writeStatus') relabelProxyPods(world);
      steps.push(step);
      if (step.kind === 'patchService') brokenByOthers.delete(step.name);
      if (checkServed) assertServed(world, brokenByOthers);
    }
  }
  assert.fail('no convergence in 30 passes');
}

/**
 * A running release as a 0.2 proxy left its Service: selector → the proxy selector, targetPorts →
 * the proxy ports of status, a saved original without `takeover`, no status.takeover.
 */
export function takenOverByOldProxy(running: World, name: string): World {
  const world = clone(running);
  const live = structuredClone(world.services.get(name)!);
  const parsed = parseSaved(live.metadata?.annotations?.[ANNOTATION_ORIGINAL] ?? '');
  assert.ok(parsed.ok, 'a saved original');
  const { takeover: _values, ...saved } = parsed.saved;
  const proxyPortOf = (port: V1ServicePort) =>
    world.release?.status?.ports?.find((item) => item.service === name && item.port === port.port)?.proxyPort;
  live.spec = {
    ...live.spec,
    selector: { ...PROXY },
    ports: live.spec?.ports?.map((port) => ({ ...port, targetPort: proxyPortOf(port) ?? port.targetPort })),
  };
  live.metadata = {
    ...live.metadata,
    annotations: { ...live.metadata?.annotations, [ANNOTATION_ORIGINAL]: formatSaved(saved) },
  };
  world.services.set(name, live);
  const { takeover: _status, ...status } = world.release!.status!;
  world.release = {
    ...world.release!,
    status: { ...status, ports: status.ports?.map(({ targetPortKept: _kept, ...port }) => port) },
  };
  return world;
}

/** What a comparison of end states may look at: nothing that depends on when things were created,
 * or on which passes ran. */
export function snapshot(world: World): unknown {
  const services = [...world.services.values()]
    .map((item) => {
      const copy = item.metadata?.labels?.[LABEL_ROLE] !== undefined;
      return {
        name: item.metadata?.name,
        labels: item.metadata?.labels,
        annotations: item.metadata?.annotations,
        spec: { ...item.spec, clusterIP: copy ? '<allocated>' : item.spec?.clusterIP },
      };
    })
    .sort((a, b) => String(a.name).localeCompare(String(b.name)));
  // status.history records the standings that passes wrote: a crash may skip one (Adopting, written
  // by the pass it cut short), so only where the history ends must match.
  const status = world.release?.status;
  const history = status?.history && { ...status.history, marks: status.history.marks.slice(-1) };
  return {
    release: world.release && {
      finalizers: world.release.metadata.finalizers,
      status: history === undefined ? status : { ...status, history },
    },
    services,
  };
}

/** For every step k of the one-shot run: crash after k, restart, converge; the end state must match. */
export function assertCrashSafe(start: World, opts: ReconcileOptions = options()): Converged {
  const oneShot = converge(start, opts);
  for (let k = 0; k < oneShot.steps.length; k += 1) {
    const crashed = converge(start, opts, k);
    const resumed = converge(crashed.world, opts);
    assert.deepEqual(
      snapshot(resumed.world),
      snapshot(oneShot.world),
      `crash after step ${k} (${describeStep(oneShot.steps[k])})`,
    );
  }
  return oneShot;
}

export function describeStep(step: Step | undefined): string {
  return step === undefined ? 'none' : describeApplied(step);
}

export function reasons(desired: Desired): string[] {
  return desired.steps.map(describeStep);
}

export function conditionOf(desired: Desired, type: string) {
  const found = desired.status.conditions.find((item) => item.type === type);
  assert.ok(found, `no ${type} condition`);
  return found;
}
