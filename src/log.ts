import pino, { type Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Where the JSON log lines go: stdout, or stderr for a command whose stdout is its answer (`demo`). */
export type LogStream = 'stdout' | 'stderr';

/** JSON lines on `stream`, one per event worth a human's attention. */
export function createLogger(level: LogLevel, stream: LogStream = 'stdout'): Logger {
  const options = { level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime };
  // stderr written as pino writes stdout by default: asynchronously, flushed on exit.
  return stream === 'stdout' ? pino(options) : pino(options, pino.destination({ dest: 2, sync: false }));
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
