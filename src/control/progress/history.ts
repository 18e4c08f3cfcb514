// status.history: what a release went through since it began, so that a page opened after a
// rollback can still draw what led there (Events expire after an hour; status.analysis holds the
// last interval only). A mark each time the phase, the step in force, a port's served weight, the
// hold or the transition changes; an entry per interval counted, with its verdict. Bounded: the
// oldest go first. Pure.

import type {
  CanaryReleaseStatus,
  HistoryInterval,
  HistoryMark,
  PortStatus,
  ReleaseHistory,
} from '../../api/status-types.ts';
import { servedWeight } from '../service/l4.ts';
import { portKeyId } from '../service/ports.ts';

/** Marks kept: a stepped release makes a handful per step. */
export const HISTORY_MARKS = 100;
/** Intervals kept: 33 minutes of 10 s intervals, 3 h 20 min of 1 min ones. ~150 bytes each. */
export const HISTORY_INTERVALS = 200;

export interface HistoryPass {
  /** status.history as recorded. */
  readonly recorded: ReleaseHistory | undefined;
  /** status.ports as recorded: the achieved split before this pass's interval. */
  readonly recordedPorts: readonly PortStatus[];
  /** status.currentStep as recorded. */
  readonly recordedStep: number | undefined;
  /** spec.promotedStep. */
  readonly promotedStep: number | undefined;
  /** The status this pass writes (its history aside). */
  readonly status: Omit<CanaryReleaseStatus, 'history'>;
  /** The interval this pass counted into ports[].achieved, if any. */
  readonly counted: { readonly at: string; readonly intervalMs: number } | undefined;
  readonly now: Date;
}

/** `web:80/TCP`: how the history names a port. */
export const historyPort = (port: Pick<PortStatus, 'service' | 'port' | 'protocol'>) =>
  `${port.service}:${port.port}/${port.protocol}`;

/** The history with this pass's mark (if anything it records changed) and interval (if it counted one). */
export function extendHistory(pass: HistoryPass): ReleaseHistory {
  const marks = pass.recorded?.marks ?? [];
  const intervals = pass.recorded?.intervals ?? [];
  const mark = markOf(pass);
  const last = marks.at(-1);
  const changed = last === undefined || !sameStanding(last, mark);
  const interval = pass.counted === undefined ? undefined : intervalOf(pass, pass.counted);
  return {
    marks: changed ? [...marks, mark].slice(-HISTORY_MARKS) : marks,
    intervals: interval === undefined ? intervals : [...intervals, interval].slice(-HISTORY_INTERVALS),
  };
}

function markOf(pass: HistoryPass): HistoryMark {
  const { status } = pass;
  // A pass without a plan of steps (a transition) leaves status.currentStep as recorded.
  const step = status.currentStep ?? pass.recordedStep;
  const advanced = step !== undefined && pass.recordedStep !== undefined && step > pass.recordedStep;
  return {
    at: pass.now.toISOString(),
    phase: status.phase,
    weights: status.ports.map((port) => ({ port: historyPort(port), served: servedWeight(port) })),
    ...(step === undefined ? {} : { step }),
    ...(advanced && (pass.promotedStep ?? -1) >= pass.recordedStep ? { promoted: true as const } : {}),
    ...(status.pause == null ? {} : { pause: status.pause.reason }),
    ...(status.transition == null
      ? {}
      : {
          transition: {
            type: status.transition.type,
            reason: status.transition.reason,
            message: status.transition.message,
          },
        }),
  };
}

/** Whether two marks tell the same standing (when and how a step began aside). */
function sameStanding(a: HistoryMark, b: HistoryMark): boolean {
  const standing = ({ at: _at, promoted: _promoted, ...rest }: HistoryMark) => JSON.stringify(rest);
  return standing(a) === standing(b);
}

function intervalOf(pass: HistoryPass, counted: { at: string; intervalMs: number }): HistoryInterval {
  const before = new Map(pass.recordedPorts.map((port) => [portKeyId(port), port.achieved] as const));
  const { analysis } = pass.status;
  const judged = analysis !== undefined && analysis.at === counted.at ? analysis : undefined;
  return {
    at: counted.at,
    intervalMs: counted.intervalMs,
    ...(pass.recordedStep === undefined ? {} : { step: pass.recordedStep }),
    ports: pass.status.ports.map((port) => {
      const was = before.get(portKeyId(port));
      return {
        port: historyPort(port),
        stable: Math.max(0, (port.achieved?.stable ?? 0) - (was?.stable ?? 0)),
        canary: Math.max(0, (port.achieved?.canary ?? 0) - (was?.canary ?? 0)),
      };
    }),
    ...(judged === undefined
      ? {}
      : {
          verdict: judged.verdict,
          signals: judged.signals.map(({ name, canary, stable, threshold, verdict }) => ({
            name,
            // Absent, not null, as in status.analysis: a merge patch keeps no null in a list's objects.
            ...(canary == null ? {} : { canary }),
            ...(stable == null ? {} : { stable }),
            threshold,
            verdict,
          })),
        }),
  };
}
