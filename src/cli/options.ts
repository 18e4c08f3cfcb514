// Flags shared by every command. Each can also come from the environment as CANARY_L4_<FLAG>
// (e.g. CANARY_L4_ADMIN_PORT=9100), which is how the container image sets them.
import type { Argv } from 'yargs';
import { LOG_LEVELS, createLogger, type LogLevel, type LogStream } from '../log.ts';
import { DEFAULT_ADMIN_PORT, DEFAULT_DRAIN_TIMEOUT_MS, DEFAULT_LISTENER_GRACE_MS } from '../defaults.ts';
import type { RuntimeOptions } from '../runtime/runtime.ts';
import { ConfigError } from '../errors.ts';

/**
 * `adminAddress`: where the admin server listens unless told. Every address by default: in a pod
 * the kubelet's probes and Prometheus come from outside; `serve` and `demo` ask for loopback.
 * `logs`: where the JSON logs go (runtimeOptions must be given the same).
 */
export function withCommonOptions<T>(
  yargs: Argv<T>,
  defaults: { adminAddress: string; logs?: LogStream } = { adminAddress: EVERY_ADDRESS },
) {
  return yargs
    .option('log-level', {
      choices: LOG_LEVELS,
      default: 'info' as LogLevel,
      describe: `Log level of the JSON logs on ${defaults.logs ?? 'stdout'}`,
    })
    .option('admin-port', {
      type: 'number',
      default: DEFAULT_ADMIN_PORT,
      describe: 'Port of the admin HTTP server (/metrics /healthz /readyz /config); 0 = any free port',
    })
    .option('admin-address', {
      alias: 'admin-host',
      type: 'string',
      default: defaults.adminAddress,
      describe: `Address of the admin HTTP server: an address of this host, or ${EVERY_ADDRESS} for every address (IPv4 and IPv6). --admin-host is the old name`,
    })
    .option('config-endpoint', {
      type: 'boolean',
      default: true,
      describe: 'Serve /config, the running config with every backend address (--no-config-endpoint: 404)',
    })
    .option('drain-timeout', {
      type: 'number',
      default: DEFAULT_DRAIN_TIMEOUT_MS / 1000,
      describe: 'Seconds live connections may take to finish after SIGTERM/SIGINT',
    })
    .option('metrics', {
      type: 'boolean',
      default: true,
      describe: 'Serve /metrics (--no-metrics: no endpoint and no process-metrics sampling)',
    })
    .option('tcp-fast-path', {
      type: 'boolean',
      default: true,
      describe:
        "Plain TCP pipes on the runtime's own handles where this Node has them (--no-tcp-fast-path: every TCP listener on net.Socket)",
    })
    .option('listener-grace', {
      type: 'number',
      default: DEFAULT_LISTENER_GRACE_MS / 1000,
      describe: 'Seconds a listener removed by a reload keeps serving its live connections',
    })
    .check((argv) => {
      const port = argv['admin-port'];
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new ConfigError('--admin-port', [`must be an integer 0-65535, got ${port}`]);
      // An empty address would bind every address: /config with it, unasked.
      const address: unknown = argv['admin-address'];
      if (typeof address !== 'string' || address.trim() === '') {
        throw new ConfigError('--admin-address', [
          `must be one address of this host, or ${EVERY_ADDRESS} for every address, got ${JSON.stringify(address)}`,
        ]);
      }
      for (const flag of ['drain-timeout', 'listener-grace'] as const) {
        const value = argv[flag];
        if (!Number.isFinite(value) || value < 0)
          throw new ConfigError(`--${flag}`, [`must be a number of seconds >= 0, got ${value}`]);
      }
      return true;
    });
}

/**
 * The flags both controllers (`proxy`, `manager`) take: the resync period, the API deadline and
 * leader election; `leaderElect` says which Lease, and what a follower still does.
 */
export function withControllerOptions<T>(yargs: Argv<T>, leaderElect: string) {
  return yargs
    .option('resync', {
      type: 'number',
      default: 60,
      describe: 'Seconds between full reconciles that repair drift no event announced',
    })
    .option('api-timeout', {
      type: 'number',
      default: 30,
      describe: 'Seconds an API call may take before it is abandoned and retried',
    })
    .option('leader-elect', { type: 'boolean', default: true, describe: leaderElect })
    .option('lease-duration', {
      type: 'number',
      default: 15,
      describe: 'Seconds a leader that stopped renewing keeps the Lease before a follower takes over',
    })
    .check((argv) => {
      for (const flag of ['resync', 'api-timeout', 'lease-duration'] as const) {
        const value = argv[flag];
        if (!Number.isFinite(value) || value <= 0)
          throw new ConfigError(`--${flag}`, [`must be a number of seconds > 0, got ${value}`]);
      }
      return true;
    });
}

/** The --admin-address that means every address, as in nginx's `listen *:80`. */
const EVERY_ADDRESS = '*';

export interface CommonArgs {
  logLevel: LogLevel;
  adminPort: number;
  adminAddress: string;
  configEndpoint: boolean;
  drainTimeout: number;
  listenerGrace: number;
  metrics: boolean;
  tcpFastPath: boolean;
}

/** `logs`: where withCommonOptions said the logs go. */
export function runtimeOptions(argv: CommonArgs, logs: LogStream = 'stdout'): RuntimeOptions {
  return {
    log: createLogger(argv.logLevel, logs),
    adminHost: adminHost(argv),
    adminPort: argv.adminPort,
    configEndpoint: argv.configEndpoint,
    listenerGraceMs: argv.listenerGrace * 1000,
    metrics: argv.metrics,
    tcpFastPath: argv.tcpFastPath,
  };
}

/** The admin server's host as node:net takes it: undefined for every address. */
export function adminHost(argv: Pick<CommonArgs, 'adminAddress'>): string | undefined {
  return argv.adminAddress === EVERY_ADDRESS ? undefined : argv.adminAddress;
}

/** A flag, or its environment fallback when it has one; missing is a one-line error naming both. */
export function requiredFlag(value: string | undefined, flag: string, envName?: string): string {
  const resolved = value ?? (envName === undefined ? undefined : process.env[envName]);
  if (resolved === undefined || resolved === '')
    throw new ConfigError(`--${flag}`, [envName === undefined ? 'required' : `required (or set ${envName})`]);
  return resolved;
}
