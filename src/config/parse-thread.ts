// The body of the thread that parses and validates a config document (see parseOffThread in
// load.ts): { text, source } in; out the problems, or the listeners in parts, the next part sent
// once the main thread asked for it, so that taking 10 000 listeners in (a structured clone)
// never holds its event loop for long.
import { parentPort, workerData } from 'node:worker_threads';
import { ConfigError } from '../errors.ts';
import { parseConfig, type ParseReply } from './load.ts';
import type { L4Config } from './types.ts';

/** Listeners per part: a millisecond or two to take in. */
const LISTENERS_PER_PART = 200;

const { text, source } = workerData as { text: string; source: string };
const port = parentPort!;
const send = (reply: ParseReply) => port.postMessage(reply);
const asked = () => new Promise((resolve) => port.once('message', resolve));

let parsed: L4Config | undefined;
try {
  parsed = parseConfig(text, source);
} catch (error) {
  send({ problems: error instanceof ConfigError ? error.problems : [String(error)] });
}
if (parsed !== undefined) {
  const { listeners } = parsed;
  for (let start = 0; start < listeners.length; start += LISTENERS_PER_PART) {
    send({ listeners: listeners.slice(start, start + LISTENERS_PER_PART) });
    await asked();
  }
  send({ rest: { ...parsed, listeners: [] } });
}
