// What the dashboard shows of a CanaryRelease. Pure: the release as read (and the time) → the row
// of the list and the model of its page. The page renders these as they are; it decides nothing.
// Times stay RFC 3339 here: the page shows them in the browser's local time.

import { parseDuration } from '../../api/validate.ts';
import { formatStep } from '../../api/steps.ts';
import type { ManagedRelease } from '../../api/proxy-types.ts';
import type { CanaryReleaseCondition, MirrorCounts, SignalResult, Verdict } from '../../api/status-types.ts';
import { abort, pause, promote, resume, type ActionResult } from '../actions.ts';
import { stepLabel } from './step-label.ts';

/** How long past its due a step may stay before it needs attention: a pass or two of the proxy. */
export const HELD_SLACK_MS = 30_000;
/** Intervals without a new one judged before the proxy counts as stuck (a pass may skip one). */
const STALE_INTERVALS = 3;

export type ActionName = 'promote' | 'promote-full' | 'pause' | 'resume' | 'abort' | 'set-weight';

export interface PortRow {
  readonly service: string;
  readonly port: number;
  readonly protocol: string;
  /** The canary weight the spec (or a --weight override) asks for, in percent. */
  readonly configured: number;
  readonly served: number | null;
  /** The canary's achieved share since the release began, or null before anything was counted. */
  readonly achieved: number | null;
  /** With steps: the share since the step in force began (`49.6`, 251 of 506), or null before an interval of it counted. */
  readonly thisStep: { readonly percent: number; readonly canary: number; readonly of: number } | null;
}

export interface ReleaseRow {
  /** `namespace/name`: the key of the list, the SSE updates and the charts. */
  readonly key: string;
  readonly namespace: string;
  readonly name: string;
  readonly phase: string;
  /** `2/3 (index 1)` (api/steps.ts formatStep, as status.step), or `-` without steps. */
  readonly step: string;
  /** metadata.resourceVersion: the page fetches the story again when it changes. */
  readonly version: string;
  readonly paused: boolean;
  readonly ports: readonly PortRow[];
  readonly verdict: Verdict | null;
  /** Why a person should look, one line each; empty when nothing does. */
  readonly attention: readonly string[];
}

export interface StepModel {
  /** 1-based, as `2/3` counts. */
  readonly number: number;
  readonly weight: number;
  readonly mirror: number | null;
  /** `2m`, `until promoted`, or null without a pause. */
  readonly pause: string | null;
  /** The analysis judges the step before it goes on. */
  readonly gate: boolean;
  readonly state: 'done' | 'current' | 'next';
}

/** A mirroring port's counts since the release began. */
export interface MirrorRow extends MirrorCounts {
  readonly service: string;
  readonly port: number;
  readonly protocol: string;
}

export interface SignalRow {
  readonly name: string;
  readonly canary: string;
  readonly stable: string;
  readonly threshold: string;
  readonly verdict: Verdict;
}

export interface ActionModel {
  readonly action: ActionName;
  /** The button's name. */
  readonly label: string;
  /** What it does, for the confirmation (actions.ts's summary, the CLI's line). */
  readonly effect: string;
}

export interface ReleaseDetail extends ReleaseRow {
  readonly transition: string | null;
  /** status.pause: why the steps stand still, since when. */
  readonly pause: { readonly reason: string; readonly since: string } | null;
  readonly steps: readonly StepModel[];
  readonly analysis: {
    readonly verdict: Verdict;
    readonly at: string;
    readonly message: string;
    readonly confidence: number | null;
    readonly signals: readonly SignalRow[];
  } | null;
  readonly mirrors: readonly MirrorRow[];
  readonly conditions: readonly CanaryReleaseCondition[];
  /** What a person may do now; the page offers no more (and --read-only none). */
  readonly actions: readonly ActionModel[];
}

const keyOf = (release: ManagedRelease) => `${release.metadata.namespace ?? 'default'}/${release.metadata.name}`;

/**
 * What needs a person, one line each: Failure True (a refused config, a rollback, selectors that
 * mix), a proxy not Ready, a proxy that stopped moving the release on (a timed step overdue, or no
 * interval judged for several intervals). A step held longer than its pause while its analysis
 * pools too few samples, a person's pause and a promotion awaited are the release working as
 * written: no attention.
 */
export function attention(release: ManagedRelease, now: Date): string[] {
  const status = release.status ?? {};
  const reasons: string[] = [];
  const stuck = isRunning(status.phase) ? stuckProxy(release, now) : undefined;
  if (stuck !== undefined) reasons.push(stuck);
  for (const condition of status.conditions ?? [])
    if (condition.type === 'Failure' && condition.status === 'True')
      reasons.push(`Failure: ${condition.reason}${condition.message === '' ? '' : `: ${condition.message}`}`);
  const proxy = status.proxy;
  if (proxy != null && proxy.readyReplicas < proxy.replicas)
    reasons.push(`proxy not Ready: ${proxy.readyReplicas}/${proxy.replicas} replicas Ready`);
  return reasons;
}

/** Why the proxy looks stuck: a step held past its pause that nothing explains, or an analysis gone quiet. */
function stuckProxy(release: ManagedRelease, now: Date): string | undefined {
  const spec = release.spec ?? {};
  const status = release.status ?? {};
  const steps = spec.steps ?? [];
  const current = status.currentStep;
  const { analysis } = status;
  if (spec.analysis !== undefined && analysis !== undefined && status.transition == null) {
    const quietMs = now.getTime() - Date.parse(analysis.at);
    if (quietMs > STALE_INTERVALS * analysis.intervalMs + HELD_SLACK_MS)
      return `no analysis interval judged for ${Math.round(quietMs / 1000)}s (every ${analysis.intervalMs / 1000}s before): is the proxy running?`;
  }
  if (current === undefined || current >= steps.length || spec.paused === true) return undefined;
  const duration = steps[current]?.pause?.duration;
  const pauseMs = duration === undefined ? undefined : parseDuration(duration);
  if (pauseMs === undefined || status.stepStartedAt === undefined) return undefined;
  const heldMs = now.getTime() - Date.parse(status.stepStartedAt);
  if (heldMs <= pauseMs + HELD_SLACK_MS) return undefined;
  // Past its pause, a gated step waits for an interval that passes: the analysis says why it holds.
  if (spec.analysis !== undefined && status.analysis?.verdict !== 'Passed') return undefined;
  return `${stepLabel(current, steps.length)} held ${Math.round(heldMs / 1000)}s, past its pause of ${duration}${spec.analysis === undefined ? '' : ' and a passing interval'}: the proxy has not moved it on (is it running?)`;
}

const isRunning = (phase: string | undefined) => phase === undefined || phase === '' || phase === 'Running';

export function releaseRow(release: ManagedRelease, now: Date): ReleaseRow {
  const status = release.status ?? {};
  const steps = release.spec?.steps ?? [];
  return {
    key: keyOf(release),
    namespace: release.metadata.namespace ?? 'default',
    name: release.metadata.name,
    phase: status.phase || 'Pending',
    step: steps.length === 0 ? '-' : formatStep(status.currentStep ?? 0, steps.length),
    version: release.metadata.resourceVersion ?? '',
    paused: release.spec?.paused === true,
    ports: (status.ports ?? []).map((port) => ({
      service: port.service,
      port: port.port,
      protocol: port.protocol,
      configured: port.override ?? port.weight,
      served: port.served ?? null,
      achieved:
        port.achieved === undefined || port.achieved.stable + port.achieved.canary === 0
          ? null
          : port.achieved.canaryPercent,
      thisStep:
        steps.length === 0 ||
        port.achievedStep === undefined ||
        port.achievedStep.step !== status.currentStep ||
        port.achievedStep.stable + port.achievedStep.canary === 0
          ? null
          : {
              percent: port.achievedStep.canaryPercent,
              canary: port.achievedStep.canary,
              of: port.achievedStep.stable + port.achievedStep.canary,
            },
    })),
    verdict: status.analysis?.verdict ?? null,
    attention: attention(release, now),
  };
}

const counted = (counts: { count: number; of: number } | null | undefined, rate: number | null | undefined) => {
  const shown = rate === null || rate === undefined ? '-' : String(rate);
  return counts == null ? shown : `${counts.count} of ${counts.of} (${shown})`;
};

const signalRow = (signal: SignalResult): SignalRow => ({
  name: signal.name,
  canary: counted(signal.counts?.canary, signal.canary),
  stable: counted(signal.counts?.stable, signal.stable),
  threshold: signal.threshold,
  verdict: signal.verdict,
});

/** The actions that make sense now, each with what it would do. */
function actionsOf(release: ManagedRelease): ActionModel[] {
  const steps = release.spec?.steps ?? [];
  const offered: [ActionName, string, ActionResult][] = [
    ...(steps.length > 0
      ? [['promote', 'Promote', promote(release, false)] as [ActionName, string, ActionResult]]
      : []),
    ['promote-full', 'Promote fully', promote(release, true)],
    release.spec?.paused === true ? ['resume', 'Resume', resume(release)] : ['pause', 'Pause', pause(release)],
    ['abort', 'Abort', abort(release, undefined)],
  ];
  const actions = offered.flatMap(([action, label, result]) =>
    result.ok ? [{ action, label, effect: result.action.summary }] : [],
  );
  // Set weight applies to releases without steps that are not over (abort is offered exactly then).
  if (steps.length === 0 && actions.some((action) => action.action === 'abort'))
    actions.push({ action: 'set-weight', label: 'Set weight', effect: "sets one Service port's canary weight" });
  return actions;
}

export function releaseDetail(release: ManagedRelease, now: Date): ReleaseDetail {
  const status = release.status ?? {};
  const spec = release.spec ?? {};
  const steps = spec.steps ?? [];
  const current = status.currentStep ?? 0;
  const analysis = status.analysis;
  return {
    ...releaseRow(release, now),
    transition:
      status.transition == null
        ? null
        : `${status.transition.type} (${status.transition.reason}): ${status.transition.message}`,
    pause: status.pause == null ? null : { reason: status.pause.reason, since: status.pause.since },
    steps: steps.map((step, index) => ({
      number: index + 1,
      weight: step.weight ?? 0,
      mirror: step.mirror ?? null,
      pause: step.pause === undefined ? null : (step.pause.duration ?? 'until promoted'),
      gate: spec.analysis !== undefined,
      state: index < current ? 'done' : index === current ? 'current' : 'next',
    })),
    analysis:
      analysis === undefined
        ? null
        : {
            verdict: analysis.verdict,
            at: analysis.at,
            message: analysis.message,
            confidence: analysis.confidence ?? null,
            signals: analysis.signals.map(signalRow),
          },
    mirrors: (status.ports ?? []).flatMap(({ service, port, protocol, mirror }) =>
      mirror === undefined ? [] : [{ service, port, protocol, ...mirror }],
    ),
    conditions: status.conditions ?? [],
    actions: actionsOf(release),
  };
}
