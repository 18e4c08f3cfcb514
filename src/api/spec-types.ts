// The CanaryRelease's spec (API group canary-l4.io, version v1alpha1), as canary-l4 reads it. Field
// names follow the seed (design §5) so its users recognise them.

import type { Labels } from './names.ts';

/** HTTP and HTTPS are proxied as TCP, as the seed did. */
export type SpecProtocol = 'TCP' | 'UDP' | 'HTTP' | 'HTTPS';
/** The Kubernetes spelling of the protocols the data plane speaks. */
export type PortProtocol = 'TCP' | 'UDP';
export type TransitionType = 'Adopted' | 'Deprecated';
/** "" = running. */
export type Transition = '' | TransitionType;

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
  /** What the patch adds on purpose (see {@link WorkloadAdds}). */
  readonly adds?: WorkloadAdds;
}

/**
 * The items a workload's patch adds on purpose. A strategic merge patch matches a container, init
 * container or volume by name and a container's port by containerPort, and adds what matches
 * nothing: a misspelt name gives the canary a second container and leaves the first unchanged. So
 * a patch that adds one is refused unless it is listed here.
 */
export interface WorkloadAdds {
  readonly containers?: readonly string[];
  readonly initContainers?: readonly string[];
  readonly volumes?: readonly string[];
  /** A port (containerPort) added to any container. */
  readonly containerPorts?: readonly number[];
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
  /** The step a person released, an index into steps (0 is the first step): a pause at this step or an earlier one is over (`kubectl canary-l4 promote`). */
  readonly promotedStep?: number;
  /** Why spec.transition was set, said in status (`kubectl canary-l4 abort --reason`). */
  readonly transitionReason?: string;
  readonly analysis?: AnalysisSpec;
}
