// The canary-l4 command line as yargs knows it: its commands and their flags, without the parse. main.ts
// runs it; build/cli-reference.ts reads it to write docs/cli.md, so the reference is the parser itself.
import type { Argv } from 'yargs';
import { serveCommand } from './commands/serve.ts';
import { demoCommand } from './commands/demo.ts';
import { proxyCommand } from './commands/proxy.ts';
import { managerCommand } from './commands/manager.ts';
import { gatewayCommand } from './commands/gateway.ts';

/** The command names, for a misspelt one's "did you mean". */
export const COMMAND_NAMES = [serveCommand, proxyCommand, gatewayCommand, managerCommand, demoCommand].map(
  ({ command }) => command,
);

/** Every flag can also come from the environment as CANARY_L4_<FLAG>. */
export const ENV_PREFIX = 'CANARY_L4';

export function canaryL4Program(parser: Argv): Argv {
  return parser
    .scriptName('canary-l4')
    .env(ENV_PREFIX)
    .command(serveCommand)
    .command(proxyCommand)
    .command(gatewayCommand)
    .command(managerCommand)
    .command(demoCommand)
    .demandCommand(1, 'name a command: serve, proxy, gateway, manager or demo (see --help)')
    .strict()
    .help()
    .alias('h', 'help')
    .epilog(
      `Every flag can also be set in the environment as ${ENV_PREFIX}_<FLAG>, ` + `e.g. ${ENV_PREFIX}_ADMIN_PORT=9100.`,
    );
}
