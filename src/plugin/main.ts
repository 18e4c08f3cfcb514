#!/usr/bin/env node
// kubectl canary-l4: the kubectl plugin (kubectl runs `kubectl-canary_l4` from PATH). It reads and
// patches CanaryRelease objects, nothing else; every action is an ordinary patch, printed so that
// plain `kubectl patch` can do the same. `plan` is a dry run: it reads, and never writes. The commands
// are in program.ts; this file parses the command line and turns a failure into a message and an exit code.

import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { ConfigError } from '../errors.ts';
import { NAME, UsageError, pluginProgram } from './program.ts';

function fail(message: string, code = 1): never {
  process.stderr.write(`${NAME}: ${message}\n`);
  process.exit(code);
}

try {
  await pluginProgram(yargs(hideBin(process.argv)))
    .wrap(Math.min(110, process.stdout.columns ?? 110))
    .fail((message, err) => {
      if (err) throw err;
      fail(`${message}\nRun ${NAME} --help for usage.`, 2);
    })
    .parseAsync();
} catch (err) {
  fail((err as Error).message, err instanceof UsageError || err instanceof ConfigError ? 2 : 1);
}
