// The CanaryRelease API (group canary-l4.io, version v1alpha1) and the names canary-l4 writes on
// the objects it manages. Field names follow the seed (design §5) so its users recognise them.
// Custom objects reach us as plain JSON (CustomObjectsApi returns `any`), so timestamps are strings.

export const GROUP = 'canary-l4.io';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;
export const KIND = 'CanaryRelease';
export const PLURAL = 'canaryreleases';

/** On the forked/canary copies: the release that owns them. Also the key of the default proxy selector. */
export const LABEL_RELEASE = `${GROUP}/release`;
/** On the copies: `forked` or `canary`. */
export const LABEL_ROLE = `${GROUP}/role`;
/** On the copies: the name of the original Service they were made from. */
export const LABEL_SERVICE = `${GROUP}/service`;
/** On an original Service: its selector and ports as they were before the release touched it (JSON). */
export const ANNOTATION_ORIGINAL = `${GROUP}/original`;
/** On the CanaryRelease: the Services are restored before the release may go. */
export const FINALIZER = `${GROUP}/restore-services`;
/** On the pods of a canary workload, and in the canary selectors that pick them. */
export const LABEL_TRACK = `${GROUP}/track`;
export const TRACK_CANARY = 'canary';
/** On a canary Deployment: the workload it is the canary of. */
export const LABEL_WORKLOAD = `${GROUP}/workload`;
/** The Deployment controller's label on a ReplicaSet's pods: what pins the forked copy to the stable pods. */
export const LABEL_TEMPLATE_HASH = 'pod-template-hash';
/** On a canary Deployment: a hash of what the release asks of it (its live spec carries the
 * apiserver's defaults, so it cannot be compared with the desired one). */
export const ANNOTATION_SPEC_HASH = `${GROUP}/spec-hash`;

export type Labels = Readonly<Record<string, string>>;

/** The field manager of every write: GitOps tools can tell our fields apart (Argo CD's
 * `managedFieldsManagers`), and server-side apply records them as ours. */
export const FIELD_MANAGER = 'canary-l4';

/** `canary-l4.io/release: <name>`: the label the proxy Deployment's pods carry by default. */
export function defaultProxySelector(release: string): Labels {
  return { [LABEL_RELEASE]: release };
}

/** HTTP and HTTPS are proxied as TCP, as the seed did. */
export type SpecProtocol = 'TCP' | 'UDP' | 'HTTP' | 'HTTPS';
/** The Kubernetes spelling of the protocols the data plane speaks. */
export type PortProtocol = 'TCP' | 'UDP';
export type TransitionType = 'Adopted' | 'Deprecated';
/** "" = running. */
export type Transition = '' | TransitionType;
/**
 * status.phase, what `kubectl get crel` shows. Running: the release converges or serves. Holding:
 * it cannot go on as written, or waits for another release; nothing changes. Adopting and
 * Deprecating: handing the Services back. Adopted and Deprecated: done (terminal).
 */
export const PHASES = ['Running', 'Holding', 'Adopting', 'Deprecating', 'Adopted', 'Deprecated'] as const;
export type Phase = (typeof PHASES)[number];

export interface SelectorOperations {
  /** Labels set, or overwritten. */
  readonly add?: Labels;
  /** Keys dropped. Applied before `add`, so a key in both ends up set. */
  readonly remove?: readonly string[];
}

export interface CanaryPortSpec {
  readonly port: number;
  /** Default TCP. */
  readonly protocol?: SpecProtocol;
  /**
   * weight = the canary's percentage (0–100); missing = 0. The other fields are the data plane's
   * opt-in connection policies of the port's listener (config/types.ts ListenerConfig).
   */
  readonly config?: {
    readonly weight?: number;
    readonly maxConnectionAgeMs?: number;
    readonly rebalanceWindowMs?: number;
    readonly drainTimeoutMs?: number;
    readonly affinity?: 'none' | 'clientIP';
    /** A dark canary: this share of new connections/flows also goes to the canary, its replies judged, never seen by a client. */
    readonly mirror?: PortMirrorSpec;
  };
}

/** A port's mirror to the canary (config/types.ts MirrorConfig without `to`). */
export interface PortMirrorSpec {
  /** 0–100; a step's `mirror` replaces it while the step is in force. Missing = 0. */
  readonly percent?: number;
  /** replies (compare the canary's replies with the stable's) or none (default). */
  readonly compare?: 'replies' | 'none';
  /** TCP: client bytes copied per mirrored connection, at most (default 65536). */
  readonly maxBytes?: number;
}

export interface CanaryServiceSpec {
  readonly service: string;
  readonly canaryServiceOperations?: SelectorOperations;
  readonly forkedServiceOperations?: SelectorOperations;
  readonly ports?: readonly CanaryPortSpec[];
}

/** A stable Deployment the release makes a canary of: `<name>-canary`, its template patched. */
export interface WorkloadSpec {
  /** Deployment (the only kind, and the default). */
  readonly kind?: string;
  readonly name: string;
  /** Canary pods; default 1. */
  readonly replicas?: number;
  /** A strategic merge patch of the stable Deployment's spec.template (e.g. a new image). */
  readonly patch?: unknown;
}

/** A weight (and a mirror share) every listed port takes in turn, and how long it holds before the next. */
export interface StepSpec {
  /** Missing = 0 (a step with only `mirror` runs the canary dark). */
  readonly weight?: number;
  /** Percent of new connections/flows mirrored to the canary while the step is in force; missing = the port's config.mirror.percent. */
  readonly mirror?: number;
  /** No duration: hold until promoted (spec.promotedStep reaches this step). */
  readonly pause?: { readonly duration?: string };
}

export interface RateThreshold {
  readonly max?: number;
  readonly maxAboveStable?: number;
}

export interface AnalysisThresholds {
  readonly connectErrorRate?: RateThreshold;
  readonly resetRate?: RateThreshold;
  readonly connectLatencyP99?: { readonly maxMs?: number; readonly maxRatioToStable?: number };
  readonly udpReplyRate?: { readonly min?: number; readonly maxBelowStable?: number };
  /** Mirrored replies that differed from the stable's, of those compared (different / compared). */
  readonly mirrorMismatchRate?: { readonly max?: number };
  /** Mirror legs that failed or never answered, of those mirrored ((missing + dropped) / mirrored). */
  readonly mirrorErrorRate?: { readonly max?: number };
}

export interface AnalysisSpec {
  /** e.g. `30s` (default). */
  readonly interval?: string;
  /** Canary connections/flows an interval needs before it is judged (default 50). */
  readonly minSamples?: number;
  /** Failed intervals in a row that deprecate the release (default 2). */
  readonly failureLimit?: number;
  /** How sure the counts must make a verdict, in (0.5, 1) (default 0.99): a threshold fails only
   * when the canary is beyond it at this confidence, passes only when within it. */
  readonly confidence?: number;
  readonly thresholds?: AnalysisThresholds;
}

export interface CanaryReleaseSpec {
  readonly workloads?: readonly WorkloadSpec[];
  readonly services?: readonly CanaryServiceSpec[];
  readonly transition?: Transition;
  /** With steps, every listed port follows the current step's weight. */
  readonly steps?: readonly StepSpec[];
  /** After the last step: adopt (default true). */
  readonly autoAdopt?: boolean;
  /** Hold the current step (a person's pause). */
  readonly paused?: boolean;
  /** The step a person released: a pause at this step or an earlier one is over (`kubectl canary-l4 promote`). */
  readonly promotedStep?: number;
  /** Why spec.transition was set, said in status (`kubectl canary-l4 abort --reason`). */
  readonly transitionReason?: string;
  readonly analysis?: AnalysisSpec;
}

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

export type TransitionReason = 'Requested' | 'ReleaseDeleted' | 'ServiceDeleted' | 'SelectorChanged' | 'StableChanged' | 'StepsComplete' | 'AnalysisFailed';

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
  /** With steps: the current step's index (steps.length once every step is done), since when. */
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
}

/** The proxy container's own port (its admin server): a name no Service's targetPort can have on it. */
export const PROXY_ADMIN_PORT_NAME = 'admin';

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

export interface CanaryReleaseMetadata {
  readonly name: string;
  readonly namespace?: string;
  readonly uid: string;
  readonly generation?: number;
  readonly resourceVersion?: string;
  readonly finalizers?: readonly string[];
  readonly deletionTimestamp?: string;
}

export interface CanaryRelease {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: CanaryReleaseMetadata;
  readonly spec?: CanaryReleaseSpec;
  /** As read from the cluster: anything may be missing (a fresh object has no status). */
  readonly status?: Partial<CanaryReleaseStatus>;
}
