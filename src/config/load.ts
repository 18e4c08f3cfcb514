// Reads a config document (design §3) from a file: YAML or JSON, parsed on the main thread or, when
// big, on a thread of its own, then validated by validate.ts. Only `serve` (and the parse thread)
// load this file: it brings the YAML parser and worker_threads, which the proxy never needs.

import { readFile } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import { LineCounter, parseDocument } from 'yaml';
import { ConfigError } from '../errors.ts';
import type { L4Config, ListenerConfig } from './types.ts';
import { validateConfig } from './validate.ts';

/**
 * Documents up to this size (a dozen listeners) parse on the main thread in a few milliseconds.
 * A thread costs more than its parse there: one that has run leaves ~18 MiB of RSS behind for the
 * life of the process (its malloc arena and the code it touched), over a serve idling at ~80 MiB.
 */
const MAIN_THREAD_PARSE_MAX_BYTES = 4 * 1024;

/**
 * Reads and validates a config file; every failure, I/O included, is a ConfigError. A bigger
 * document is parsed on a thread of its own, started for that parse only: a 3 MB file takes
 * seconds, which on the main thread would hold every connection still.
 */
export async function loadConfigFile(path: string): Promise<L4Config> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? String(error);
    throw new ConfigError(path, [`cannot read the file (${reason})`], { cause: error });
  }
  return Buffer.byteLength(text) <= MAIN_THREAD_PARSE_MAX_BYTES ? parseConfig(text, path) : parseOffThread(text, path);
}

/** What the parsing thread sends (parse-thread.ts): the problems, or parts of the config. */
export type ParseReply =
  | { readonly problems: readonly string[] }
  | { readonly listeners: readonly ListenerConfig[] }
  | { readonly rest: L4Config };

/** Set to true by the bundle (build/bundle.ts), where the parsing thread is a chunk beside this code's; undeclared in the sources. */
declare const CANARY_L4_BUNDLED: boolean | undefined;
const PARSE_THREAD = typeof CANARY_L4_BUNDLED === 'undefined' ? './parse-thread.ts' : './parse-thread.js';

/** parseConfig on a thread of its own; the config comes back frozen, as parseConfig's does. */
export function parseOffThread(text: string, source: string): Promise<L4Config> {
  return new Promise((resolve, reject) => {
    const thread = new Worker(new URL(PARSE_THREAD, import.meta.url), { workerData: { text, source } });
    const listeners: ListenerConfig[] = [];
    thread.on('message', (reply: ParseReply) => {
      if ('problems' in reply) return reject(new ConfigError(source, reply.problems));
      if ('rest' in reply) return resolve(Object.freeze({ ...reply.rest, listeners: Object.freeze(listeners) }));
      for (const listener of reply.listeners) listeners.push(deepFreeze(listener));
      thread.postMessage('next');
    });
    // A thread may throw anything, not only an Error (@types/node 26 says so).
    thread.once('error', (error) =>
      reject(
        new ConfigError(source, [`could not be parsed: ${error instanceof Error ? error.message : String(error)}`], {
          cause: error,
        }),
      ),
    );
    thread.once('exit', (code) =>
      reject(new ConfigError(source, [`could not be parsed: the parsing thread exited (${code})`])),
    );
  });
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/** Parses a YAML or JSON document (JSON is YAML) and validates it. `source` names it in errors. */
export function parseConfig(text: string, source: string): L4Config {
  return validateConfig(parseYaml(text, source), source);
}

function parseYaml(text: string, source: string): unknown {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false });
  if (document.errors.length > 0) {
    throw new ConfigError(
      source,
      document.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        // The library's own wording for this one sends the reader to its API.
        const what =
          error.code === 'MULTIPLE_DOCS'
            ? 'a config file holds one YAML document, this is the start of a second'
            : error.message.replace(/\s+/g, ' ');
        return `line ${line}, column ${col}: ${what}`;
      }),
    );
  }
  try {
    return document.toJS();
  } catch (error) {
    // An alias to a missing anchor, or too many aliases (a "billion laughs" document).
    throw new ConfigError(source, [(error as Error).message], { cause: error });
  }
}
