import fs from 'node:fs';
import pino, { type Logger } from 'pino';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Where the JSON log lines go: stdout, or stderr for a command whose stdout is its answer (`demo`). */
export type LogStream = 'stdout' | 'stderr';

/** JSON lines on `stream`, one per event worth a human's attention. */
export function createLogger(level: LogLevel, stream: LogStream = 'stdout'): Logger {
  const options = { level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime };
  return pino(options, destinationOf(stream === 'stdout' ? 1 : 2));
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

// Where the log lines go: a file descriptor (stdout, stderr), written asynchronously so that a slow
// reader never stalls the data plane, with what is still buffered written on exit within a bound.
// pino's own destination (sonic-boom 4.2) retried a failed flush on exit forever on any error but
// EAGAIN: a process whose log reader had gone (EPIPE) hung in its exit, and ignored SIGTERM after.

/** A write the kernel refused for now (a full pipe) is tried again this much later. */
const RETRY_MS = 50;
/** On exit, a full pipe gets this long to take the rest; then it is dropped, and the process exits. */
const EXIT_FLUSH_MS = 1_000;
/** A reader this far behind costs no more memory: later lines are dropped, and counted. */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

const exitWait = new Int32Array(new SharedArrayBuffer(4));

/** One destination per file descriptor, shared by every logger on it: one queue keeps their lines in order. */
const destinations = new Map<number, LogDestination>();

function destinationOf(fd: number): LogDestination {
  let destination = destinations.get(fd);
  if (destination === undefined) {
    if (destinations.size === 0)
      process.once('exit', () => {
        for (const each of destinations.values()) each.flushSync();
      });
    destinations.set(fd, (destination = new LogDestination(fd)));
  }
  return destination;
}

class LogDestination {
  readonly #fd: number;
  /** Lines not handed to the kernel yet. */
  #queued: string[] = [];
  #queuedBytes = 0;
  /** Refused with EAGAIN: written again before anything queued. */
  #retry: Buffer | undefined;
  /** An fs.write is under way (its buffer belongs to it). */
  #writing = false;
  /** The reader has gone (EPIPE, EBADF, ...): nothing more is written. */
  #closed = false;
  #dropped = 0;

  constructor(fd: number) {
    this.#fd = fd;
  }

  /** Takes one line (pino's contract: a string ending in a newline). */
  write(line: string): boolean {
    if (this.#closed) return true;
    if (this.#queuedBytes + line.length > MAX_BUFFERED_BYTES) {
      this.#dropped++;
      return false;
    }
    if (this.#dropped > 0) this.#enqueue(droppedLine(this.#dropped));
    this.#dropped = 0;
    this.#enqueue(line);
    if (!this.#writing && this.#retry === undefined) this.#writeNext();
    return true;
  }

  /** Writes what is left, synchronously, giving a full pipe EXIT_FLUSH_MS; gives up on any other error. */
  flushSync(): void {
    const rest = [this.#retry, this.#takeQueued()].filter((chunk): chunk is Buffer => chunk !== undefined);
    this.#retry = undefined;
    const deadline = Date.now() + EXIT_FLUSH_MS;
    for (let chunk of rest) {
      while (chunk.length > 0 && !this.#closed) {
        try {
          chunk = chunk.subarray(fs.writeSync(this.#fd, chunk));
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() >= deadline) this.#closed = true;
          else Atomics.wait(exitWait, 0, 0, 10);
        }
      }
    }
  }

  #enqueue(line: string): void {
    this.#queued.push(line);
    this.#queuedBytes += line.length;
  }

  #takeQueued(): Buffer | undefined {
    if (this.#queued.length === 0) return undefined;
    const buffer = Buffer.from(this.#queued.join(''));
    this.#queued = [];
    this.#queuedBytes = 0;
    return buffer;
  }

  #writeNext(): void {
    const buffer = this.#retry ?? this.#takeQueued();
    this.#retry = undefined;
    if (buffer === undefined || this.#closed) return;
    this.#writing = true;
    fs.write(this.#fd, buffer, 0, buffer.length, null, (err, written) => {
      this.#writing = false;
      if (err?.code === 'EAGAIN') {
        this.#retry = buffer;
        setTimeout(() => this.#writeNext(), RETRY_MS).unref();
        return;
      }
      if (err) {
        this.#closed = true;
        return;
      }
      if (written < buffer.length) this.#retry = buffer.subarray(written);
      this.#writeNext();
    });
  }
}

/** What a reader that fell behind missed, said as a pino line. */
function droppedLine(count: number): string {
  return `${JSON.stringify({
    level: 40,
    time: new Date().toISOString(),
    pid: process.pid,
    dropped: count,
    msg: `${count} log lines dropped: the log reader fell ${MAX_BUFFERED_BYTES / 1024 / 1024} MiB behind`,
  })}\n`;
}
