#!/usr/bin/env node
// kubectl canary-l4: the kubectl plugin (kubectl runs `kubectl-canary_l4` from PATH). It reads and
// patches CanaryRelease objects, nothing else; every action is an ordinary patch, printed so that
// plain `kubectl patch` can do the same. `plan` is a dry run: it reads, and never writes. The commands
// are in program.ts; this file parses the command line and turns a failure into a message and an exit code.

import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { ConfigError } from '../errors.ts';
import { knownFlagsOf, parseFailureMessage } from '../util/parse-failures.ts';
import { COMMAND_NAMES, NAME, UsageError, pluginProgram } from './program.ts';

/** One line per problem, each saying whose it is; the exit code. */
function fail(message: string, code = 1): never {
  process.stderr.write(`${NAME}: ${message.split('\n').join(`\n${NAME}: `)}\n`);
  process.exit(code);
}

const args = hideBin(process.argv);
const parser = yargs(args);
try {
  await pluginProgram(parser)
    .wrap(Math.min(110, process.stdout.columns ?? 110))
    .fail((message, err) => {
      if (err) throw err;
      // An unknown command or flag, with what it likely meant (as canary-l4's own command line says it).
      process.stderr.write(`${parseFailureMessage(NAME, args, COMMAND_NAMES, knownFlagsOf(parser), message)}\n`);
      process.exit(2);
    })
    .parseAsync();
} catch (err) {
  fail((err as Error).message, err instanceof UsageError || err instanceof ConfigError ? 2 : 1);
}
