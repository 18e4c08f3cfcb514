import type { Argv } from 'yargs';
import { ConfigError } from '../../errors.ts';
import { parseWeightOverride } from '../../config/overrides.ts';
import { adminHost, runtimeOptions, withCommonOptions } from '../options.ts';

function builder(yargs: Argv) {
  return withCommonOptions(yargs, { adminAddress: '127.0.0.1' })
    .option('config', { alias: 'c', type: 'string', demandOption: true, describe: 'L4 config file (YAML or JSON)' })
    .option('weight', {
      type: 'string',
      array: true,
      default: [] as string[],
      describe: 'Override a backend weight: LISTENER:BACKEND=N (repeatable); shown in /config',
    })
    .option('workers', {
      type: 'number',
      default: 1,
      describe: 'Processes serving the listeners together (SO_REUSEPORT), as nginx worker_processes',
    })
    .check((args) => {
      if (!Number.isInteger(args.workers) || args.workers < 1)
        throw new ConfigError('--workers', [`must be an integer >= 1, got ${args.workers}`]);
      return true;
    })
    .option('watch', {
      type: 'boolean',
      default: true,
      describe: 'Reload when the config file changes (--no-watch: only on SIGHUP)',
    })
    .example('$0 serve --config lb.yaml', 'Serve the listeners of lb.yaml')
    .example(
      '$0 serve -c lb.yaml --weight web:canary=0',
      'Same, with the canary of listener "web" taking no new traffic',
    );
}

type Args = Awaited<ReturnType<typeof builder>['argv']>;

export const serveCommand = {
  command: 'serve',
  describe: 'Balance TCP and UDP by weight from a config file (YAML or JSON); reloads on SIGHUP and file change',
  builder,
  handler: async (argv: Args) => {
    // Loaded here, not at the top: no other command needs the config-file parser or the worker pool.
    const { loadServedConfig, serveConfigFile } = await import('../../modes/serve.ts');
    const { Runtime, exitOnSignals } = await import('../../runtime/runtime.ts');
    const { WorkerPool, isWorkerProcess, runWorker } = await import('../../runtime/workers.ts');
    const options = runtimeOptions(argv);
    const drainMs = argv.drainTimeout * 1000;
    if (isWorkerProcess()) return runWorker(options, drainMs);
    const serveOptions = {
      configPath: argv.config,
      overrides: argv.weight.map(parseWeightOverride),
      watchFile: argv.watch,
    };
    // Load before starting anything, so a bad file is one clear error and nothing half-started.
    const first = await loadServedConfig(serveOptions);
    if (argv.workers > 1) {
      const pool = new WorkerPool(argv.workers, options.log);
      exitOnSignals(options.log, () => pool.stop(drainMs));
      await pool.start(
        { host: adminHost(argv), port: argv.adminPort },
        { metrics: argv.metrics, config: argv.configEndpoint },
      );
      await serveConfigFile(pool, first, serveOptions);
    } else {
      const runtime = await Runtime.start(options);
      exitOnSignals(runtime.log, () => runtime.stop(drainMs));
      await serveConfigFile(runtime, first, serveOptions);
    }
  },
};
