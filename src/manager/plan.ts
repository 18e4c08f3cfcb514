// What the manager does for one CanaryRelease: observed release + the objects kept for it (by
// their names) + its proxy pods → the writes that converge them, and the status to report. Pure,
// level-based: each pass renders everything and compares, so a Deployment deleted by hand, edited
// by hand, or out of date with spec.proxy or --proxy-image comes back as rendered.

import type { KubernetesObject, V1Deployment, V1Pod } from '@kubernetes/client-node';
import { FINALIZER, LABEL_RELEASE } from '../api/names.ts';
import { converge, removalsOf } from './children.ts';
import { KIND_OF, type Step } from './step.ts';
import { renderProxy, type RenderedProxy, type RenderSettings } from './render.ts';
import { availability, proxyStatus, statusPatch, type ConditionDraft } from './status.ts';
import { LABEL_MANAGED_BY, MANAGED_BY, metricsServiceName, proxyName } from './names.ts';
import type { ManagedRelease, ProxyStatus } from '../api/proxy-types.ts';

export type ChildKind = keyof RenderedProxy;
/** The order objects are created in; deleted in reverse (the metrics Service and the PDB before the Deployment). */
export const CHILD_KINDS: readonly ChildKind[] = [
  'serviceAccount',
  'roleBinding',
  'deployment',
  'podDisruptionBudget',
  'metricsService',
];

export function childName(kind: ChildKind, release: string): string {
  return kind === 'metricsService' ? metricsServiceName(release) : proxyName(release);
}

export interface ObservedRelease {
  readonly namespace: string;
  readonly name: string;
  /** undefined: the release is gone (what is left of its proxy goes too). */
  readonly release: ManagedRelease | undefined;
  /** The objects of the namespace named as this release's would be (they may not be ours). */
  readonly children: Partial<Record<ChildKind, KubernetesObject>>;
  /** Pods labelled for this release. */
  readonly pods: readonly V1Pod[];
  /** Why the apiserver refused the manager's last write for this release, if it did. */
  readonly refusal?: string;
}

export interface Plan {
  readonly steps: readonly Step[];
  /** The proxy status reported (null: no proxy), for metrics. */
  readonly proxy: ProxyStatus | null;
  readonly condition: ConditionDraft | undefined;
}

/** Whether the release needs its proxy now, and if not, why. */
export function proxyNeeded(
  release: ManagedRelease,
): { readonly needed: true } | { readonly needed: false; readonly why: string } {
  // The proxy hands the Services back, then drops its finalizer: until then it must run, whatever
  // the phase says and even while the release is being deleted.
  if (release.metadata.finalizers?.includes(FINALIZER)) return { needed: true };
  if (release.metadata.deletionTimestamp != null)
    return { needed: false, why: 'the release is being deleted and no Service was ever handed to its proxy' };
  const phase = release.status?.phase;
  if (phase === 'Adopted' || phase === 'Deprecated')
    return { needed: false, why: `the release is ${phase}: its proxy was removed` };
  return { needed: true };
}

/** An object the manager made for this release (the label says so): one it may replace or delete. */
export function isOurs(object: KubernetesObject, release: string): boolean {
  const labels = object.metadata?.labels;
  return labels?.[LABEL_MANAGED_BY] === MANAGED_BY && labels[LABEL_RELEASE] === release;
}

export function plan(observed: ObservedRelease, settings: RenderSettings, now: Date): Plan {
  const { release } = observed;
  const ours = CHILD_KINDS.filter(
    (kind) => observed.children[kind] !== undefined && isOurs(observed.children[kind], observed.name),
  );
  if (release === undefined) return { steps: removals(observed, ours), proxy: null, condition: undefined };
  const need = proxyNeeded(release);
  if (!need.needed)
    return withStatus(
      release,
      removals(observed, ours),
      null,
      { status: 'False', reason: 'ReleaseFinished', message: need.why },
      now,
    );

  const rendered = renderProxy(release, settings);
  const live = observed.children.deployment as V1Deployment | undefined;
  if (!rendered.ok) {
    // What runs keeps running: the proxy of the last good spec.proxy still serves the release.
    const kept =
      live !== undefined && isOurs(live, observed.name)
        ? proxyStatus(proxyName(observed.name), 0, live, observed.pods)
        : null;
    return withStatus(
      release,
      [],
      kept,
      { status: 'False', reason: 'InvalidProxySpec', message: `${rendered.problems.join('; ')}; nothing was changed` },
      now,
    );
  }
  // Being deleted: made if missing, otherwise left alone until the proxy has handed back.
  const converged = converge(
    CHILD_KINDS,
    rendered.objects,
    observed.children,
    (object) => isOurs(object, observed.name),
    release.metadata.deletionTimestamp != null,
  );
  const steps = converged.steps;
  const taken = converged.taken.map((kind) => `${KIND_OF[kind]} ${childName(kind, observed.name)}`);
  const status = proxyStatus(
    proxyName(observed.name),
    rendered.spec.replicas,
    taken.length === 0 ? live : undefined,
    taken.length === 0 ? observed.pods : [],
  );
  const condition: ConditionDraft =
    taken.length > 0
      ? {
          status: 'False',
          reason: 'NameInUse',
          message: `${taken.join(', ')} exist and are not the manager's (a standalone proxy?): delete them, or rename the release`,
        }
      : observed.refusal !== undefined
        ? { status: 'False', reason: 'Refused', message: `the API refused the proxy's objects: ${observed.refusal}` }
        : availability(status);
  return withStatus(release, taken.length > 0 ? [] : steps, status, condition, now);
}

function withStatus(
  release: ManagedRelease,
  steps: Step[],
  proxy: ProxyStatus | null,
  condition: ConditionDraft,
  now: Date,
): Plan {
  const patch = statusPatch(release, proxy, condition, now);
  return { steps: patch === undefined ? steps : [...steps, { kind: 'writeStatus', patch }], proxy, condition };
}

function removals(observed: ObservedRelease, ours: readonly ChildKind[]): Step[] {
  return removalsOf(ours, observed.children, observed.pods.length > 0);
}
