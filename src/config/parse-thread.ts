// The body of the thread that parses and validates a config document (see parseOffThread in
// load.ts): { text, source } in, the config or the problems out.
import { parentPort, workerData } from 'node:worker_threads';
import { ConfigError } from '../errors.ts';
import { parseConfig } from './load.ts';
import type { ParseReply } from './load.ts';

const { text, source } = workerData as { text: string; source: string };
let reply: ParseReply;
try {
  reply = { config: parseConfig(text, source) };
} catch (error) {
  reply = { problems: error instanceof ConfigError ? error.problems : [String(error)] };
}
parentPort!.postMessage(reply);
