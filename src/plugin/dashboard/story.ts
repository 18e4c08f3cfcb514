// A release's story since it began, for its page's charts: status.history (what the proxy kept)
// made into series the page draws as they are: each port's served weight over time with the steps
// marked, each interval's achieved canary share, the holds (a person's pause, a promotion awaited,
// an analysis awaited), the transition and its cause, and each interval's verdict and signals
// against their thresholds. Pure.

import type { ManagedRelease } from '../../api/proxy-types.ts';
import type { HistoryInterval, HistoryMark, Verdict } from '../../api/status-types.ts';
import { stepLabel } from './step-label.ts';

export type HoldKind = 'paused' | 'promotion' | 'analysis' | 'timed' | 'other';

export interface TimePoint {
  /** RFC 3339. */
  readonly at: string;
  readonly value: number;
}

export interface StoryEvent {
  readonly at: string;
  readonly kind: 'began' | 'step' | 'hold' | 'resumed' | 'weights' | 'phase' | 'transition';
  readonly text: string;
}

export interface SignalSeries {
  readonly name: string;
  /** The threshold as last written (`max 0.01, maxAboveStable 0.005`). */
  readonly threshold: string;
  /** Its absolute line (`max`, `min`, `maxMs`), drawn across the chart; null when it has none. */
  readonly limit: number | null;
  readonly points: readonly {
    readonly at: string;
    readonly canary: number | null;
    readonly stable: number | null;
    readonly verdict: Verdict;
  }[];
}

export interface Story {
  /** The first mark: when the proxy first wrote the release's status. */
  readonly from: string;
  /** Now while the release runs; the last mark once it is over. */
  readonly to: string;
  /** Each port's served canary weight: a point at each change (a step line). */
  readonly weights: readonly { readonly port: string; readonly points: readonly TimePoint[] }[];
  /** Each interval's achieved canary share of a port, in percent, at the interval's end. */
  readonly shares: readonly { readonly port: string; readonly points: readonly (TimePoint & { of: number })[] }[];
  /** Where each step began, named as the CLI names it. */
  readonly steps: readonly { readonly at: string; readonly label: string; readonly promoted: boolean }[];
  /** While the steps stood still, and why. */
  readonly holds: readonly {
    readonly from: string;
    readonly to: string;
    readonly kind: HoldKind;
    readonly reason: string;
  }[];
  /** The transition recorded, when: a rollback's cause is its message. */
  readonly transition: {
    readonly at: string;
    readonly type: string;
    readonly reason: string;
    readonly message: string;
  } | null;
  /** Each interval judged, its verdict. */
  readonly verdicts: readonly { readonly at: string; readonly intervalMs: number; readonly verdict: Verdict }[];
  readonly signals: readonly SignalSeries[];
  /** The story in words, oldest first. */
  readonly events: readonly StoryEvent[];
}

/** What holds the steps, from status.pause.reason (control/progress/steps.ts words it). */
export function holdKind(reason: string): HoldKind {
  if (reason.startsWith('paused (spec.paused)')) return 'paused';
  if (/waits for a promotion/.test(reason)) return 'promotion';
  if (/waits for an analysis interval/.test(reason)) return 'analysis';
  if (/holds until/.test(reason)) return 'timed';
  return 'other';
}

/** A threshold's absolute line: `max 0.01, maxAboveStable 0.005` → 0.01; `maxMs 250` → 250. */
export function thresholdLimit(threshold: string): number | null {
  const match = /(?:^|, )(?:max|min|maxMs) ([\d.]+)(?:,|$)/.exec(threshold);
  return match === null ? null : Number(match[1]);
}

const round1 = (value: number) => Math.round(value * 10) / 10;

/** A release that is over is drawn a little past its end, so that its last change shows. */
function afterTheEnd(from: string, last: string): string {
  const span = Date.parse(last) - Date.parse(from);
  return new Date(Date.parse(last) + Math.max(30_000, span * 0.04)).toISOString();
}

/** The release's story, or null before the proxy wrote any history. */
export function releaseStory(release: ManagedRelease, now: Date): Story | null {
  const history = release.status?.history;
  const marks = history?.marks ?? [];
  const first = marks[0];
  if (history === undefined || first === undefined) return null;
  const total = release.spec?.steps?.length ?? 0;
  const over = release.status?.phase === 'Adopted' || release.status?.phase === 'Deprecated';
  const to = over ? afterTheEnd(first.at, marks.at(-1)!.at) : now.toISOString();
  const ports = [...new Set(marks.flatMap((mark) => mark.weights.map((weight) => weight.port)))];
  const transitionMark = marks.find((mark) => mark.transition !== undefined);
  return {
    from: first.at,
    to,
    weights: ports.map((port) => ({
      port,
      points: marks.map((mark) => ({
        at: mark.at,
        value: mark.weights.find((weight) => weight.port === port)?.served ?? 0,
      })),
    })),
    shares: ports.map((port) => ({
      port,
      points: history.intervals.flatMap((interval) => {
        const counts = interval.ports.find((item) => item.port === port);
        const of = (counts?.stable ?? 0) + (counts?.canary ?? 0);
        return counts === undefined || of === 0
          ? []
          : [{ at: interval.at, value: round1((counts.canary / of) * 100), of }];
      }),
    })),
    steps: total === 0 ? [] : stepStarts(marks, total),
    holds: holds(marks, to),
    transition:
      transitionMark?.transition === undefined ? null : { at: transitionMark.at, ...transitionMark.transition },
    verdicts: history.intervals.flatMap(({ at, intervalMs, verdict }) =>
      verdict === undefined ? [] : [{ at, intervalMs, verdict }],
    ),
    signals: signalSeries(history.intervals),
    events: storyEvents(marks, total),
  };
}

/** A step began where the step in force changed (the first mark included). */
function stepStarts(marks: readonly HistoryMark[], total: number): Story['steps'] {
  return marks.flatMap((mark, index) => {
    const before = marks[index - 1];
    if (mark.step === undefined || mark.step >= total || (before !== undefined && before.step === mark.step)) return [];
    return [{ at: mark.at, label: stepLabel(mark.step, total), promoted: mark.promoted === true }];
  });
}

function holds(marks: readonly HistoryMark[], to: string): Story['holds'] {
  return marks.flatMap((mark, index) => {
    const until = marks[index + 1]?.at ?? to;
    // A hold the same pass lifted lasted no time: nothing to draw.
    return mark.pause === undefined || until === mark.at
      ? []
      : [{ from: mark.at, to: until, kind: holdKind(mark.pause), reason: mark.pause }];
  });
}

function signalSeries(intervals: readonly HistoryInterval[]): SignalSeries[] {
  const byName = new Map<string, SignalSeries>();
  for (const interval of intervals) {
    for (const signal of interval.signals ?? []) {
      const series = byName.get(signal.name);
      const point = {
        at: interval.at,
        canary: signal.canary ?? null,
        stable: signal.stable ?? null,
        verdict: signal.verdict,
      };
      byName.set(signal.name, {
        name: signal.name,
        threshold: signal.threshold,
        limit: thresholdLimit(signal.threshold),
        points: [...(series?.points ?? []), point],
      });
    }
  }
  return [...byName.values()];
}

const weightsText = (mark: HistoryMark) =>
  mark.weights.map((weight) => `${weight.port} ${weight.served}%`).join(', ') || 'no port through the proxy';

/** The marks in words: what changed from one to the next. */
function storyEvents(marks: readonly HistoryMark[], total: number): StoryEvent[] {
  return marks.flatMap((mark, index): StoryEvent[] => {
    const before = marks[index - 1];
    const at = mark.at;
    // A hold the same pass lifted (the takeover, then the step's clock) is no part of the story.
    const fleeting = marks[index + 1]?.at === at;
    if (before === undefined)
      return [
        {
          at,
          kind: 'began',
          text: `the proxy began the release (${mark.phase}): ${mark.step === undefined || total === 0 ? '' : `${stepLabel(mark.step, total)}, `}${weightsText(mark)}`,
        },
        ...(mark.pause === undefined || fleeting ? [] : [{ at, kind: 'hold' as const, text: mark.pause }]),
      ];
    const events: StoryEvent[] = [];
    if (mark.transition !== undefined && before.transition === undefined) {
      const rollback = mark.transition.type === 'Deprecated' && mark.transition.reason === 'AnalysisFailed';
      events.push({
        at,
        kind: 'transition',
        // A rollback's message says so itself (`rolled back: the canary failed ...`).
        text: rollback
          ? mark.transition.message
          : `${mark.transition.type} (${mark.transition.reason}): ${mark.transition.message}`,
      });
    }
    if (mark.phase !== before.phase) events.push({ at, kind: 'phase', text: `phase ${mark.phase}` });
    const stepChanged = mark.step !== undefined && mark.step !== before.step;
    if (stepChanged && total > 0) {
      const how =
        mark.promoted === true ? 'promoted' : before.pause === undefined ? '' : holdEnd(holdKind(before.pause));
      events.push({
        at,
        kind: 'step',
        text:
          mark.step! >= total
            ? `every step done${how === '' ? '' : ` (${how})`}`
            : `${stepLabel(mark.step!, total)} began: ${weightsText(mark)}${how === '' ? '' : ` (${how})`}`,
      });
    } else if (weightsText(mark) !== weightsText(before))
      events.push({
        at,
        kind: 'weights',
        text:
          mark.weights.length === 0
            ? 'the Services handed back: no port through the proxy'
            : `served: ${weightsText(mark)}`,
      });
    if (mark.pause !== undefined && mark.pause !== before.pause) {
      if (!fleeting) events.push({ at, kind: 'hold', text: mark.pause });
    } else if (mark.pause === undefined && before.pause !== undefined && !stepChanged && mark.transition === undefined)
      events.push({ at, kind: 'resumed', text: 'no longer held' });
    return events;
  });
}

/** How a hold of this kind ended when the step moved on. */
function holdEnd(kind: HoldKind): string {
  switch (kind) {
    case 'analysis':
      return 'an analysis interval passed';
    case 'timed':
      return 'its pause ran out';
    case 'paused':
      return 'resumed';
    default:
      return '';
  }
}
