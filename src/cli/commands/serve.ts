import type { Argv } from 'yargs';
import { parseWeightOverride } from '../../config/overrides.ts';
import { Runtime } from '../../runtime.ts';
import { serveConfigFile } from '../../serve.ts';
import { runtimeOptions, withCommonOptions } from '../options.ts';

function builder(yargs: Argv) {
  return (
    withCommonOptions(yargs)
      .option('config', { alias: 'c', type: 'string', demandOption: true, describe: 'L4 config file (YAML or JSON)' })
      .option('weight', {
        type: 'string',
        array: true,
        default: [] as string[],
        describe: 'Override a backend weight: LISTENER:BACKEND=N (repeatable); shown in /config',
      })
      .option('watch', { type: 'boolean', default: true, describe: 'Reload when the config file changes (--no-watch: only on SIGHUP)' })
      .example('$0 serve --config lb.yaml', 'Serve the listeners of lb.yaml')
      .example('$0 serve -c lb.yaml --weight web:canary=0', 'Same, with the canary of listener "web" taking no new traffic')
  );
}

type Args = Awaited<ReturnType<typeof builder>['argv']>;

export const serveCommand = {
  command: 'serve',
  describe: 'Balance TCP and UDP by weight from a config file (YAML or JSON); reloads on SIGHUP and file change',
  builder,
  handler: async (argv: Args) => {
    const overrides = argv.weight.map(parseWeightOverride);
    const runtime = await Runtime.start(runtimeOptions(argv));
    runtime.exitOnSignals(argv.drainTimeout * 1000);
    await serveConfigFile(runtime, { configPath: argv.config, overrides, watchFile: argv.watch });
  },
};
