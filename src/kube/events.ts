// Kubernetes Events (core/v1), what `kubectl describe` and `kubectl get events` show. Recording
// never holds up the caller: events queue, are sent one at a time, and a full queue or a failed
// write drops the event (it is logged too). The same event again within the dedup window is
// not sent twice, so a condition that holds across passes makes one event, not one per pass.
// Each carries an eventTime (microsecond precision on the wire, strictly later than the recorder's
// previous one) beside first/lastTimestamp: those are stored in whole seconds, so the events of one
// second sorted by them come out in any order, while `kubectl get events --sort-by=.eventTime` lists
// them as they happened. lastTimestamp stays: kubectl describe (1.32) sorts by it alone, and without
// it listed the events in no order at all.

import { V1MicroTime, type CoreV1Api, type CoreV1Event, type V1ObjectReference } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { CallOptions } from './client.ts';
import { describeError } from './patch.ts';

export type EventType = 'Normal' | 'Warning';

export interface EventRecorderOptions {
  readonly core: CoreV1Api;
  readonly namespace: string;
  /** source.component and reportingComponent, e.g. canary-l4-proxy. */
  readonly component: string;
  /** reportingInstance: which replica said it. */
  readonly instance: string;
  readonly log: Logger;
  readonly callOptions: CallOptions;
  readonly dedupWindowMs?: number;
  readonly maxQueued?: number;
}

const DEFAULT_DEDUP_WINDOW_MS = 10 * 60_000;
const DEFAULT_MAX_QUEUED = 100;
/** Kubernetes truncates messages longer than this. */
const MAX_MESSAGE = 1024;

export class EventRecorder {
  readonly #options: EventRecorderOptions;
  readonly #queue: CoreV1Event[] = [];
  /** When each (object, type, reason, message) was last sent. */
  readonly #sent = new Map<string, number>();
  #sending = false;
  /** The eventTime of the last event queued (ms since the epoch). */
  #lastEventTime = 0;
  /** Settles when the queue is next empty. */
  #drained: Promise<void> = Promise.resolve();

  constructor(options: EventRecorderOptions) {
    this.#options = options;
  }

  /** Resolves once every event recorded so far is sent (or dropped), or after `timeoutMs`. */
  async flushed(timeoutMs: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.#drained, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
  }

  record(object: V1ObjectReference, type: EventType, reason: string, message: string, now = new Date()): void {
    const key = `${object.uid}\n${type}\n${reason}\n${message}`;
    const windowMs = this.#options.dedupWindowMs ?? DEFAULT_DEDUP_WINDOW_MS;
    const last = this.#sent.get(key);
    if (last !== undefined && now.getTime() - last < windowMs) return;
    for (const [seen, at] of this.#sent) if (now.getTime() - at >= windowMs) this.#sent.delete(seen);
    this.#sent.set(key, now.getTime());
    if (this.#queue.length >= (this.#options.maxQueued ?? DEFAULT_MAX_QUEUED)) {
      this.#options.log.warn({ reason }, 'event queue full; dropping an event');
      return;
    }
    this.#queue.push(this.#event(object, type, reason, message, now));
    if (!this.#sending) this.#drained = this.#drain();
  }

  #event(object: V1ObjectReference, type: EventType, reason: string, message: string, now: Date): CoreV1Event {
    const { component, instance, namespace } = this.#options;
    this.#lastEventTime = Math.max(now.getTime(), this.#lastEventTime + 1);
    return {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { generateName: `${object.name ?? 'object'}.`, namespace },
      involvedObject: object,
      type,
      reason,
      message: message.length > MAX_MESSAGE ? `${message.slice(0, MAX_MESSAGE - 3)}...` : message,
      source: { component },
      reportingComponent: component,
      reportingInstance: instance,
      // With an eventTime, kube-apiserver wants the action too: what the reason says was done.
      action: reason,
      eventTime: new V1MicroTime(this.#lastEventTime),
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    };
  }

  async #drain(): Promise<void> {
    if (this.#sending) return;
    this.#sending = true;
    try {
      for (let event = this.#queue.shift(); event !== undefined; event = this.#queue.shift()) {
        try {
          await this.#options.core.createNamespacedEvent(
            { namespace: this.#options.namespace, body: event },
            this.#options.callOptions,
          );
        } catch (err) {
          this.#options.log.debug({ reason: event.reason, error: describeError(err) }, 'could not record an event');
        }
      }
    } finally {
      this.#sending = false;
    }
  }
}
