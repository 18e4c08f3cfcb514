#!/usr/bin/env -S node --max-semi-space-size=2
// canary-l4: the command line. Flags become options here; the work is done elsewhere.
// The shebang's --max-semi-space-size=2 keeps V8's young generation small: ~110 MiB less RSS under
// load at the same throughput (bench/); the Dockerfile and `npm start` pass it too.
// First, so that a SIGHUP during start-up cannot end the process (see hangups.ts).
import '../runtime/hangups.ts';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { ConfigError } from '../errors.ts';
import { knownFlagsOf, parseFailureMessage } from '../util/parse-failures.ts';
import { COMMAND_NAMES, canaryL4Program } from './program.ts';

/** Startup failures a user can cause are one line per problem and a non-zero exit, no stack. */
function exitWith(err: unknown): never {
  const message = err instanceof ConfigError || err instanceof Error ? err.message : String(err);
  process.stderr.write(`canary-l4: ${message.split('\n').join('\ncanary-l4: ')}\n`);
  process.exit(err instanceof ConfigError ? 2 : 1);
}

const args = hideBin(process.argv);
const parser = yargs(args);
try {
  await canaryL4Program(parser)
    .wrap(Math.min(110, process.stdout.columns ?? 110))
    .fail((message, err) => {
      if (err) throw err;
      process.stderr.write(`${parseFailureMessage('canary-l4', args, COMMAND_NAMES, knownFlagsOf(parser), message)}\n`);
      process.exit(2);
    })
    .parseAsync();
} catch (err) {
  exitWith(err);
}
