// status.proxy and the ProxyAvailable condition, from the proxy Deployment and its pods as the
// cluster reports them. Pure. Written as one merge patch carrying the release's resourceVersion:
// the proxy writes the other conditions of the same list, and a list is replaced whole, so a
// write from a stale read must fail (409) rather than undo the proxy's.

import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import { formatTime } from '../api/conditions.ts';
import type { CanaryReleaseCondition, ConditionStatus } from '../api/status-types.ts';
import { canonicalJson } from '../kube/canonical.ts';
import { MAX_LISTED_PODS, PROXY_CONDITION } from './names.ts';
import type { ManagedRelease, ProxyPodStatus, ProxyStatus } from '../api/proxy-types.ts';

export interface ConditionDraft {
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
}

export interface StatusPatch {
  readonly metadata: { readonly resourceVersion: string | undefined };
  readonly status: { readonly proxy: ProxyStatus | null; readonly conditions: readonly CanaryReleaseCondition[] };
}

export function podStatus(pod: V1Pod): ProxyPodStatus {
  const statuses = pod.status?.containerStatuses ?? [];
  const waiting = statuses.map((status) => status.state?.waiting?.reason).find((reason) => reason !== undefined);
  const terminated = statuses.map((status) => status.state?.terminated?.reason).find((reason) => reason !== undefined);
  const reason =
    pod.metadata?.deletionTimestamp != null ? 'Terminating' : (pod.status?.reason ?? waiting ?? terminated);
  const node = pod.spec?.nodeName;
  return {
    name: pod.metadata?.name ?? '',
    ready:
      pod.status?.conditions?.some((condition) => condition.type === 'Ready' && condition.status === 'True') ?? false,
    phase: pod.status?.phase ?? 'Pending',
    restarts: statuses.reduce((sum, status) => sum + (status.restartCount ?? 0), 0),
    ...(node === undefined || node === '' ? {} : { node }),
    ...(reason === undefined || reason === '' ? {} : { reason }),
  };
}

/** What status.proxy says of a Deployment (undefined: not there yet) and its pods. */
export function proxyStatus(
  name: string,
  desiredReplicas: number,
  deployment: V1Deployment | undefined,
  pods: readonly V1Pod[],
): ProxyStatus {
  const replicas = deployment?.spec?.replicas ?? desiredReplicas;
  const readyReplicas = deployment?.status?.readyReplicas ?? 0;
  return {
    deployment: name,
    replicas,
    readyReplicas,
    updatedReplicas: deployment?.status?.updatedReplicas ?? 0,
    ready: `${readyReplicas}/${replicas}`,
    pods: pods
      .map(podStatus)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .slice(0, MAX_LISTED_PODS),
  };
}

/** The condition for a proxy that is (or should be) running. */
export function availability(status: ProxyStatus): ConditionDraft {
  const rolling =
    status.updatedReplicas < status.replicas
      ? `; rolling out, ${status.updatedReplicas}/${status.replicas} updated`
      : '';
  if (status.readyReplicas > 0)
    return { status: 'True', reason: 'ProxyReady', message: `${status.ready} proxy pods ready${rolling}` };
  const troubled = status.pods.filter((pod) => pod.reason !== undefined).map((pod) => `${pod.name}: ${pod.reason}`);
  return {
    status: 'False',
    reason: 'NoReadyProxy',
    message: `${status.ready} proxy pods ready${troubled.length > 0 ? ` (${troubled.join(', ')})` : ''}${rolling}`,
  };
}

/**
 * The status write that gives the release this proxy status and condition, or undefined when it
 * has them already. The other conditions are kept as observed; lastTransitionTime moves only when
 * the condition's status flips.
 */
export function statusPatch(
  release: ManagedRelease,
  proxy: ProxyStatus | null,
  draft: ConditionDraft,
  now: Date,
): StatusPatch | undefined {
  const observed = (release.status?.conditions ?? []) as readonly CanaryReleaseCondition[];
  const before = observed.find((condition) => (condition.type as string) === PROXY_CONDITION);
  const generation = release.metadata.generation ?? 0;
  const unchanged =
    before !== undefined &&
    before.status === draft.status &&
    before.reason === draft.reason &&
    before.message === draft.message &&
    before.observedGeneration === generation;
  if (unchanged && canonicalJson(release.status?.proxy ?? null) === canonicalJson(proxy)) return undefined;
  const condition = {
    type: PROXY_CONDITION,
    ...draft,
    lastTransitionTime:
      before !== undefined && before.status === draft.status ? before.lastTransitionTime : formatTime(now),
    observedGeneration: generation,
  } as unknown as CanaryReleaseCondition;
  const conditions =
    before === undefined ? [...observed, condition] : observed.map((item) => (item === before ? condition : item));
  return { metadata: { resourceVersion: release.metadata.resourceVersion }, status: { proxy, conditions } };
}
