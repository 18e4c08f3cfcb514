import pino, { type Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** JSON lines on stdout, one per event worth a human's attention. */
export function createLogger(level: LogLevel): Logger {
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime });
}

/**
 * A warning about a condition that may recur many times a second (a flood refused): the first
 * occurrence is logged at once, later ones at most once per interval, with how many there were.
 */
export class ThrottledWarning {
  readonly #log: Logger;
  readonly #message: string;
  readonly #intervalMs: number;
  readonly #now: () => number;
  #lastAt = -Infinity;
  #since = 0;

  constructor(log: Logger, message: string, intervalMs = 60_000, now: () => number = Date.now) {
    this.#log = log;
    this.#message = message;
    this.#intervalMs = intervalMs;
    this.#now = now;
  }

  /** One more occurrence; `fields` (computed only when a line is due) describe it. */
  note(fields: () => object): void {
    this.#since++;
    const now = this.#now();
    if (now - this.#lastAt < this.#intervalMs) return;
    this.#log.warn({ ...fields(), occurrences: this.#since }, this.#message);
    this.#lastAt = now;
    this.#since = 0;
  }
}
