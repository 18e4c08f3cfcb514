// A dry run of a CanaryRelease against the cluster as it is (`kubectl canary-l4 plan`): the Services
// the release would create, how it would change each original (selector, targetPorts), the proxy
// ports it would allocate, the canary Deployments it would make, and every problem that would hold
// it. Worked out by the controller's own planning functions, so it says what the controller does.
// Pure: the caller reads the cluster; nothing here writes.

import type { V1Deployment, V1Service } from '@kubernetes/client-node';
import { observe } from './pass/context.ts';
import { copyName, COPY_ROLES, desiredCopy } from './service/copies.ts';
import type { Observed, ReconcileOptions } from './pass/desired.ts';
import { servicePorts, portProtocol, retargetFields } from './service/originals.ts';
import { copyPatch } from './service/patches.ts';
import { portKeyId } from './service/ports.ts';
import { planSpec } from './reconcile.ts';
import { checkSelectors, sidesReady } from './release/running.ts';
import { planTakeover } from './release/takeover-plan.ts';
import type { Labels } from '../api/names.ts';
import { ignoredFieldNotes } from '../api/ignored-fields.ts';
import type { TakeoverStatus } from '../api/status-types.ts';

export interface PortChange {
  readonly name?: string;
  readonly port: number;
  readonly protocol: string;
  readonly targetPort: { readonly before: number | string | undefined; readonly after: number | string | undefined };
}

export interface OriginalChange {
  readonly service: string;
  readonly selector: { readonly before: Labels; readonly after: Labels };
  readonly ports: readonly PortChange[];
}

export interface ProxyPortPlan {
  readonly service: string;
  readonly port: number;
  readonly protocol: string;
  readonly proxyPort: number;
  /** The canary weight the port would ask for (the current step's, with spec.steps). */
  readonly weight: number;
}

export interface ReleasePlan {
  /** What would hold the release (its Failure condition): nothing moves until they are fixed. */
  readonly problems: readonly string[];
  /** What it would wait for before it starts (another release on a Service, a workload not there yet). */
  readonly waiting: readonly string[];
  /** What it would serve differently until it resolves (no Ready pod on a side), and what the spec sets that does nothing. */
  readonly notes: readonly string[];
  /** Copies to create, and existing ones to update. */
  readonly creates: readonly V1Service[];
  readonly updates: readonly V1Service[];
  readonly originals: readonly OriginalChange[];
  readonly proxyPorts: readonly ProxyPortPlan[];
  /** The labels the proxy pods need (the manager gives them), named ports they declare, targetPorts moved; undefined when nothing would be taken over. */
  readonly takeover: TakeoverStatus | undefined;
  /** Whether the plan was made for a proxy in a pod (listening on the targetPorts) or on a host (--port-base). */
  readonly inPod: boolean;
  /** Canary Deployments to create (spec.workloads). */
  readonly deployments: readonly V1Deployment[];
}

const NOTHING: Omit<ReleasePlan, 'problems' | 'waiting' | 'notes' | 'inPod'> = {
  creates: [],
  updates: [],
  originals: [],
  proxyPorts: [],
  takeover: undefined,
  deployments: [],
};

export function dryRun(observed: Observed, options: ReconcileOptions): ReleasePlan {
  const phase = observed.release.status?.phase;
  if (phase === 'Adopted' || phase === 'Deprecated') {
    return {
      ...NOTHING,
      inPod: options.inPod === true,
      problems: [
        `CanaryRelease ${observed.release.metadata.name} is ${phase}: a finished release does nothing again; delete it or give the new one another name`,
      ],
      waiting: [],
      notes: [],
    };
  }
  const context = observe(observed, options);
  const planned = planSpec(context);
  // What the spec sets that does nothing as written, said whether or not the release could start.
  const ignored = ignoredFieldNotes(observed.release.spec);
  if (!planned.ok)
    return {
      ...NOTHING,
      inPod: options.inPod === true,
      problems: planned.problems,
      waiting: planned.waiting.map((item) => item.message),
      notes: ignored,
    };
  const findings = checkSelectors(context, planned.plans, sidesReady(context, planned.plans));
  const copies = planned.plans.flatMap((plan) =>
    COPY_ROLES.map((role) => ({
      desired: desiredCopy(
        observed.release,
        plan.name,
        plan.saved,
        role,
        role === 'forked' ? plan.forkedSelector : plan.canarySelector,
      ),
      live: observed.services.get(copyName(plan.name, role)),
    })),
  );
  const weights = new Map(
    planned.plans.flatMap((plan) => plan.ports.map((port) => [portKeyId(port), port.weight] as const)),
  );
  const takeover = planTakeover(
    context.name,
    planned.plans,
    planned.allocations,
    options.inPod === true,
    options.reservedPorts ?? new Set(),
  );
  return {
    problems: findings.failures,
    waiting: [],
    notes: [...ignored, ...findings.notes],
    creates: copies.filter((copy) => copy.live === undefined).map((copy) => copy.desired),
    updates: copies
      .filter((copy) => copy.live !== undefined && copyPatch(copy.live, copy.desired) !== undefined)
      .map((copy) => copy.desired),
    originals: planned.plans.map((plan): OriginalChange => {
      const live = plan.state.service;
      const after = retargetFields(live, plan.saved, plan.takeover, (port) => {
        const proxyPort = planned.allocations.find(
          (item) => item.service === plan.name && item.port === port.port && item.protocol === portProtocol(port),
        )?.proxyPort;
        return proxyPort === undefined ? undefined : takeover.targetPortOf(plan, port, proxyPort);
      });
      return {
        service: plan.name,
        selector: { before: live.spec?.selector ?? {}, after: after.selector },
        ports: servicePorts(live).map((port, index) => ({
          ...(port.name === undefined ? {} : { name: port.name }),
          port: port.port,
          protocol: portProtocol(port),
          targetPort: { before: port.targetPort, after: after.ports[index]?.targetPort },
        })),
      };
    }),
    proxyPorts: planned.allocations.map((item) => ({ ...item, weight: weights.get(portKeyId(item)) ?? 0 })),
    takeover: takeover.status,
    inPod: options.inPod === true,
    deployments: planned.workloads
      .filter((workload) => !observed.deployments.has(workload.canary.metadata?.name ?? ''))
      .map((workload) => workload.canary),
  };
}
