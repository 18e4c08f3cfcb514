// The CanaryRelease's status, as the proxy writes it: phase, conditions, the ports' weights and
// achieved split, the analysis, the transition, the takeover and the workloads. Custom objects reach
// us as plain JSON (CustomObjectsApi returns `any`), so timestamps are strings.

import type { PortProtocol, TransitionType } from './spec-types.ts';

/**
 * status.phase, what `kubectl get crel` shows. Running: the release converges or serves. Holding:
 * it cannot go on as written, or waits for another release; nothing changes. Adopting and
 * Deprecating: handing the Services back. Adopted and Deprecated: done (terminal).
 */
export const PHASES = ['Running', 'Holding', 'Adopting', 'Deprecating', 'Adopted', 'Deprecated'] as const;
export type Phase = (typeof PHASES)[number];

/** Ready: the release serves what its spec asks, with nothing failing or held (the READY column). */
export type ConditionType = 'Ready' | 'Available' | 'Progressing' | 'Failure' | 'Archived';
export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface CanaryReleaseCondition {
  readonly type: ConditionType;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
  /** RFC 3339, whole seconds. Changes only when `status` changes. */
  readonly lastTransitionTime: string;
  readonly observedGeneration: number;
}

export interface PortStatus {
  readonly service: string;
  readonly port: number;
  readonly protocol: PortProtocol;
  /** Allocated once, never moved while the port stays in the release. */
  readonly proxyPort: number;
  /** The canary weight the spec asks for; a port of the Service the spec does not list: 0 (100 % stable). */
  readonly weight: number;
  /**
   * The canary weight a `--weight` flag of the proxy imposes instead, or null. Written as null, it
   * reads back absent: kube-apiserver's merge patch keeps no null keys in the objects of a list.
   */
  readonly override?: number | null;
  /** The canary weight the data plane applies: override ?? weight, unless a side has no Ready pod
   * (then that side gets no new traffic). Absent in statuses written before 0.2. */
  readonly served?: number;
  /** New connections (TCP) or flows (UDP) to each side since the release began, every replica counted. */
  readonly achieved?: AchievedSplit;
  /** With steps: the same, since the step in force began (it starts from zero at each step). */
  readonly achievedStep?: StepAchievedSplit;
  /** What mirroring to the canary did since the release began, every replica counted; absent until it mirrored. */
  readonly mirror?: MirrorCounts;
  /** The proxy listens on the Service port's own targetPort (in a pod): the takeover leaves it as its owner wrote it. */
  readonly targetPortKept?: true;
}

/** Mirroring counts (dataplane/stats/stats.ts MirrorCounts). */
export interface MirrorCounts {
  readonly mirrored: number;
  readonly compared: number;
  readonly equal: number;
  readonly different: number;
  readonly missing: number;
  readonly dropped: number;
}

export interface AchievedSplit {
  readonly stable: number;
  readonly canary: number;
  /** canary / (stable + canary), in percent, one decimal. */
  readonly canaryPercent: number;
}

export interface StepAchievedSplit extends AchievedSplit {
  /** The step these counts were served at: status.currentStep (0 is the first step). */
  readonly step: number;
}

export type Verdict = 'Passed' | 'Failed' | 'Inconclusive';

/** `count` events of `of` samples. */
export interface SignalCounts {
  readonly count: number;
  readonly of: number;
}

export interface SignalResult {
  /** connectErrorRate, resetRate, connectLatencyP99, udpReplyRate, mirrorMismatchRate, mirrorErrorRate, canaryShare. */
  readonly name: string;
  /** null: no sample on that side (written as null, it reads back absent, as override does). */
  readonly canary?: number | null;
  readonly stable?: number | null;
  /** The threshold as written, e.g. `max 0.01, maxAboveStable 0.005`. */
  readonly threshold: string;
  readonly verdict: Verdict;
  /** The counts judged (every interval since the last decisive one): connect errors of attempts,
   * resets of connections, flows replied of flows, connects slower than the line of connects, the
   * canary's new connections/flows of both sides'. */
  readonly counts?: { readonly canary: SignalCounts; readonly stable?: SignalCounts | null };
  /** Of the canary's count, the attempts passive health kept from it (offered while held out). */
  readonly heldOut?: number;
}

/** One side's counts summed over the intervals judged together. */
export interface PooledSide {
  readonly attempts: number;
  readonly errors: number;
  readonly established: number;
  readonly resets: number;
  readonly latency: readonly number[];
  readonly udpSessions: number;
  readonly udpReplied: number;
  readonly markedDown: number;
  /**
   * New connections (TCP) and flows (UDP) its weight offered it while passive health held it out
   * (they went to the other side): attempts it failed. TCP by what took it out, failed connects or
   * resets before the first byte. Absent from a pool written before they were counted: 0.
   */
  readonly heldOut?: number;
  readonly heldOutResets?: number;
  /** Of `errors`, the connects the side reset before they completed: resets, for resetRate. Absent from an older pool: 0. */
  readonly connectResets?: number;
  readonly udpHeldOut?: number;
  /** Flows mirrored to this side (the canary of a mirroring port), of them compared, of those
   * answered differently; mirrored flows whose reply was missing or whose leg was dropped. */
  readonly mirrored: number;
  readonly mirrorCompared: number;
  readonly mirrorDifferent: number;
  readonly mirrorFailed: number;
}

/** The evidence of the intervals since the last decisive verdict (Passed or Failed), judged together. */
export interface PooledEvidence {
  readonly intervals: number;
  readonly stable: PooledSide;
  readonly canary: PooledSide;
}

/** The last interval the release was judged on. */
export interface AnalysisStatus {
  /** When the interval ended (RFC 3339 with milliseconds): also what makes each interval count once. */
  readonly at: string;
  readonly intervalMs: number;
  /** Proxy replicas whose counters the interval holds. */
  readonly replicas: number;
  /** Canary connections/flows in the interval. */
  readonly samples: number;
  readonly verdict: Verdict;
  /** The confidence the verdict was reached at (spec.analysis.confidence). */
  readonly confidence?: number;
  readonly signals: readonly SignalResult[];
  /** While inconclusive: the intervals judged together so far (the next one adds to them). */
  readonly pooled?: PooledEvidence;
  /** Failed intervals in a row. */
  readonly failures: number;
  /** Why it failed or is inconclusive, one line. */
  readonly message: string;
}

export type TransitionReason =
  | 'Requested'
  | 'ReleaseDeleted'
  | 'ServiceDeleted'
  | 'SelectorChanged'
  | 'StableChanged'
  | 'StepsComplete'
  | 'AnalysisFailed';

/** A transition, recorded before its first step so that it survives the trigger going away
 * (a restored Service no longer shows the selector change that started the deprecation). */
export interface TransitionRecord {
  readonly type: TransitionType;
  readonly reason: TransitionReason;
  readonly message: string;
  /** When every Service was handed back (RFC 3339): the copies and listeners stay for the
   * hand-back grace after it, for clients still routed through the proxy. */
  readonly handedBackAt?: string;
}

export interface CanaryReleaseStatus {
  /** Adopted and Deprecated are terminal. Statuses written before 0.2 hold "" while running. */
  readonly phase: Phase;
  readonly observedGeneration: number;
  /** The transition under way or done; it wins over later spec changes. */
  readonly transition: TransitionRecord | null;
  readonly conditions: readonly CanaryReleaseCondition[];
  readonly ports: readonly PortStatus[];
  /** The served canary weight of every port, one line for the WEIGHTS column: `web:80=20%,dns:53/UDP=5%`. */
  readonly weights: string;
  /** One per spec.workloads entry the release has started; absent without workloads. */
  readonly workloads?: readonly WorkloadStatus[];
  /** With steps: the step in force as an index into spec.steps, 0 the first (steps.length once every step is done), since when. */
  readonly currentStep?: number;
  readonly stepStartedAt?: string;
  /** `2/3`: the STEP column. */
  readonly step?: string;
  /** Why the steps do not advance now, since when; null when they may. */
  readonly pause?: { readonly reason: string; readonly since: string } | null;
  readonly analysis?: AnalysisStatus;
  /** The end of the last interval counted into ports[].achieved (each interval counts once). */
  readonly countedAt?: string;
  /** While the release runs: the takeover's labels and ports (absent in statuses written before 0.3). */
  readonly takeover?: TakeoverStatus;
  /** What the release went through since it began, for the dashboard's charts (absent before 0.5). */
  readonly history?: ReleaseHistory;
}

/**
 * status.history: the release's story, bounded. A mark at each change of the phase, the step in
 * force, a port's served weight, the hold or the transition; an entry per interval counted. The
 * oldest go first past HISTORY_MARKS and HISTORY_INTERVALS (control/progress/history.ts).
 */
export interface ReleaseHistory {
  /** Oldest first. */
  readonly marks: readonly HistoryMark[];
  /** Oldest first. */
  readonly intervals: readonly HistoryInterval[];
}

/** The served canary weight of one Service port: `web:80/TCP`. */
export interface HistoryWeight {
  readonly port: string;
  readonly served: number;
}

/** The release as it stood from `at` until the next mark. */
export interface HistoryMark {
  /** RFC 3339 with milliseconds. */
  readonly at: string;
  readonly phase: Phase;
  readonly weights: readonly HistoryWeight[];
  /** status.currentStep (0 the first step); absent without steps. */
  readonly step?: number;
  /** This mark began the step by a promotion (spec.promotedStep), not by its pause running out. */
  readonly promoted?: true;
  /** status.pause.reason: why the steps stood still; absent when they could go on. */
  readonly pause?: string;
  /** The transition recorded (a rollback's cause is its message). */
  readonly transition?: Pick<TransitionRecord, 'type' | 'reason' | 'message'>;
}

/** One interval's new connections (TCP) or flows (UDP) of a Service port. */
export interface HistoryPortCounts {
  readonly port: string;
  readonly stable: number;
  readonly canary: number;
}

/** A signal as judged at an interval (status.analysis.signals[], without the counts). */
export type HistorySignal = Pick<SignalResult, 'name' | 'canary' | 'stable' | 'threshold' | 'verdict'>;

/** An interval counted into ports[].achieved, and, with spec.analysis, judged. */
export interface HistoryInterval {
  /** When it ended (status.countedAt then). */
  readonly at: string;
  readonly intervalMs: number;
  /** status.currentStep it was served at. */
  readonly step?: number;
  readonly ports: readonly HistoryPortCounts[];
  /** With spec.analysis: the verdict and each signal (judged on this interval and any pooled before it). */
  readonly verdict?: Verdict;
  readonly signals?: readonly HistorySignal[];
}

/** A named targetPort the proxy container declares, so the taken-over Service keeps its name. */
export interface NamedProxyPort {
  readonly name: string;
  readonly containerPort: number;
  readonly protocol: PortProtocol;
}

/**
 * status.takeover: what the proxy pods need to be selected by the taken-over Services (the manager
 * renders it). The pods carry each key with the value; lists, so a status merge patch replaces them.
 */
export interface TakeoverStatus {
  /** Every selector key of the release's Services, sorted. */
  readonly keys: readonly string[];
  /** The release's takeover value, `canary-l4.<release>`. */
  readonly value: string;
  readonly namedPorts: readonly NamedProxyPort[];
  /** `web:80/TCP: targetPort 8000 → 8081 (why)`: ports the takeover cannot leave on their own targetPort. */
  readonly movedPorts: readonly string[];
}

export interface WorkloadStatus {
  /** The stable Deployment. */
  readonly name: string;
  /** Its canary Deployment. */
  readonly canary: string;
  /** The stable pods' pod-template-hash when the release began: the forked copy selects only them,
   * and a stable rollout underneath (another hash) deprecates the release (StableChanged). */
  readonly stableHash: string;
  /** Available/desired canary pods, e.g. `1/1`. */
  readonly canaryReady: string;
  /** Adopted: the patch is on the stable Deployment; its rollout is what the hand-back waits for. */
  readonly stablePatched?: boolean;
}
