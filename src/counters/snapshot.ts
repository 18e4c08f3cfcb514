// The per-backend counters one replica's data plane reports (its admin server's `/stats`) and the
// leader's analysis sums over every replica: the document's shape and the keys of its by-outcome
// and by-cause counts. Types and key lists only, imported by the data plane that counts them
// (dataplane/stats/) and the control loop that reads them (control/progress/).

/**
 * What mirroring to a backend did (kept on the backend the mirror goes to). mirrored: connections or
 * flows also sent to it; compared: those whose replies were judged, equal or different; missing: a
 * reply of the stable's the mirror never matched in time; dropped: mirror legs given up (it failed,
 * fell behind, or no descriptor was left for it).
 */
export type MirrorOutcome = 'mirrored' | 'compared' | 'equal' | 'different' | 'missing' | 'dropped';
export const MIRROR_OUTCOMES: readonly MirrorOutcome[] = [
  'mirrored',
  'compared',
  'equal',
  'different',
  'missing',
  'dropped',
];

/**
 * What took a backend out of rotation: failed connects (or UDP sends, or silence past
 * firstByteTimeoutMs), or resets before the first byte (failOnReset). The offers are counted by
 * this cause, for the analysis to report under the signal it belongs to.
 */
export const TAKE_OUT_CAUSES = ['connect', 'reset'] as const;
export type TakeOutCause = (typeof TAKE_OUT_CAUSES)[number];

/** One backend's counts, cumulative since its process started. */
export interface BackendCounters {
  /** TCP: established connections; UDP: sessions opened. */
  readonly connections: number;
  /** TCP connects that failed (every reason). */
  readonly connectErrors: number;
  /** Established TCP connections the backend reset. */
  readonly resets: number;
  /** Connect durations: counts per upper bound of `latencyBucketsMs`. */
  readonly connectLatency: readonly number[];
  /** UDP sessions that got at least one reply. */
  readonly sessionsReplied: number;
  /** Times passive health took the backend out of rotation. */
  readonly markedDown: number;
  /** Milliseconds passive health held it out of rotation, each take-out counted to its scheduled end
   * (absent from a version before it: 0). */
  readonly outMs?: number;
  /** New connections and flows its weight offered it while passive health held it out, by what took
   * it out (absent from a version before it: none). */
  readonly heldOut?: Readonly<Record<TakeOutCause, number>>;
  /** Of connectErrors, the connects the backend reset before they completed (absent from a version
   * before it: none told apart) — a reset, to the user, whatever the socket calls it. */
  readonly connectResets?: number;
  /** New TCP connections refused and UDP flows dropped as its share, a backend with `refuse: true`
   * (absent from a version before it: none). */
  readonly refused?: number;
  /** Mirroring to this backend (a listener's `mirror.to`); absent: none counted. */
  readonly mirror?: Readonly<Record<MirrorOutcome, number>>;
}

/** One replica's document. */
export interface CounterSnapshot {
  readonly instance: string;
  /** Upper bounds, in milliseconds, of the connect latency buckets. */
  readonly latencyBucketsMs: readonly number[];
  /** By listener, then backend. */
  readonly listeners: Readonly<Record<string, Readonly<Record<string, BackendCounters>>>>;
  /** The weights served when the snapshot was taken, by listener, then backend: an interval in
   * which they moved is not judged on each side's share. */
  readonly weights: Readonly<Record<string, Readonly<Record<string, number>>>>;
}
