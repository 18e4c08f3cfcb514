import type { Argv } from 'yargs';
import { Runtime, exitOnSignals } from '../../runtime/runtime.ts';
import { formatSplit, runDemo } from '../../modes/demo.ts';
import { adminHost, runtimeOptions, withCommonOptions } from '../options.ts';

function builder(yargs: Argv) {
  // The split table is the demo's answer: stdout holds it alone, the logs go to stderr.
  return withCommonOptions(yargs, { adminAddress: '127.0.0.1', logs: 'stderr' })
    .option('tcp-port', { type: 'number', default: 10080, describe: 'Port of the demo TCP listener' })
    .option('udp-port', { type: 'number', default: 10053, describe: 'Port of the demo UDP listener' })
    .option('connections', { type: 'number', default: 1000, describe: 'TCP connections in the burst' })
    .option('sessions', { type: 'number', default: 200, describe: 'UDP sessions in the burst' })
    .option('exit', {
      type: 'boolean',
      default: false,
      describe: 'Exit after the burst instead of serving until Ctrl-C',
    });
}

type Args = Awaited<ReturnType<typeof builder>['argv']>;

export const demoCommand = {
  command: 'demo',
  describe:
    'Run the balancer on an embedded demo: local backends, a 90/10 split, a burst of traffic, the split achieved',
  builder,
  handler: async (argv: Args) => {
    const options = runtimeOptions(argv, 'stderr');
    const runtime = await Runtime.start(options);
    exitOnSignals(runtime.log, () => runtime.stop(argv.drainTimeout * 1000));
    const rows = await runDemo(runtime, {
      tcpPort: argv.tcpPort,
      udpPort: argv.udpPort,
      tcpConnections: argv.connections,
      udpSessions: argv.sessions,
    });
    const host = adminHost(argv) ?? '127.0.0.1';
    const admin = `http://${host.includes(':') ? `[${host}]` : host}:${runtime.adminPort}`;
    process.stdout.write(
      [
        '',
        'canary-l4 demo: two backends per listener, weights 90/10 (smooth weighted round robin)',
        '',
        formatSplit(rows),
        '',
        `Metrics: ${admin}/metrics   Running config: ${admin}/config`,
        argv.exit
          ? ''
          : `Still serving: try \`nc 127.0.0.1 ${argv.tcpPort}\` or \`echo hi | nc -u -w1 127.0.0.1 ${argv.udpPort}\`. Ctrl-C to stop.`,
        '',
      ].join('\n'),
    );
    if (argv.exit) {
      await runtime.stop(0);
      process.exit(0);
    }
  },
};
