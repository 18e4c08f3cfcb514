// kubectl canary-l4 as yargs knows it: its commands, their flags and what each does, without the
// parse. main.ts runs it; build/cli-reference.ts reads it to write docs/cli.md. Every action is an
// ordinary patch, printed so that plain `kubectl patch` can do the same; `plan` reads, never writes.

import { readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';
import type { Argv } from 'yargs';
import { DEFAULT_ADMIN_PORT, DEFAULT_PORT_BASE } from '../defaults.ts';
import { dryRun } from '../control/index.ts';
import { checkPortBase, parseSelector } from '../api/proxy-flags.ts';
import { unknownFieldProblems } from '../api/fields.ts';
import type { CanaryRelease } from '../api/release-types.ts';
import { defaultProxySelector, KIND } from '../api/names.ts';
import { abort, parseWeightTarget, pause, promote, resume, setWeight, type ActionResult } from './actions.ts';
import { connect, userKubeConfig, type Cluster } from './cluster.ts';
import { isLoopback, startDashboard } from './dashboard/server.ts';
import { planProblems } from './plan-problems.ts';
import { formatPlan, formatStatus } from './view.ts';

export const NAME = 'kubectl canary-l4';

/** The plugin's commands, for the usage line and a misspelt one's "did you mean". */
export const COMMAND_NAMES = ['status', 'promote', 'pause', 'resume', 'abort', 'set-weight', 'plan', 'dashboard'];

/** A command line or input the user can fix: exit 2. */
export class UsageError extends Error {}

async function act(cluster: Cluster, name: string, decide: (release: CanaryRelease) => ActionResult): Promise<void> {
  const decided = decide(await cluster.release(name));
  if (!decided.ok) throw new UsageError(decided.error);
  await cluster.patchRelease(name, decided.action.type, decided.action.patch);
  process.stdout.write(
    `canaryrelease.canary-l4.io/${name}: ${decided.action.summary}\n` +
      `  the same with kubectl: kubectl patch canaryrelease ${name} -n ${cluster.namespace} --type=${decided.action.type} -p ${shellQuote(JSON.stringify(decided.action.patch))}\n`,
  );
}

/** One shell word: single quotes, a quote inside written as '\''. */
function shellQuote(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** A CanaryRelease of a manifest file, and where in the file it is (`document 2`, `document 1, item 3`). */
interface FoundRelease {
  readonly where: string;
  readonly release: CanaryRelease;
}

type Manifest = { kind?: string; metadata?: { name?: string }; items?: unknown } | null;

/** Why a file cannot be read, in words (Node says `ENOENT: no such file or directory, open '…'`). */
function unreadable(err: unknown): string {
  switch ((err as NodeJS.ErrnoException).code) {
    case 'ENOENT':
      return 'no such file; give the path of a manifest file (as with kubectl apply -f)';
    case 'EACCES':
    case 'EPERM':
      return 'you may not read this file (its permissions); check them with ls -l';
    case 'EISDIR':
      return 'is a directory; give one manifest file (plan reads one file, not a directory)';
    default:
      return `cannot be read: ${(err as Error).message}`;
  }
}

/** Every CanaryRelease of a manifest file: each YAML document, and each item of a v1 List. */
function releasesFromFile(file: string): FoundRelease[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new UsageError(`-f ${file}: ${unreadable(err)}`);
  }
  const documents = parseAllDocuments(text);
  const found = (Array.isArray(documents) ? documents : [documents]).flatMap((document, index): FoundRelease[] => {
    const where = `document ${index + 1}`;
    const error = document.errors[0];
    // The parser's message ends in a colon that introduces a code excerpt: the line and column say where instead.
    if (error !== undefined)
      throw new UsageError(`-f ${file}: ${where} is not YAML: ${error.message.split('\n')[0]!.replace(/:\s*$/, '')}`);
    const object = document.toJS() as Manifest;
    const items =
      object?.kind === 'List' && Array.isArray(object.items)
        ? (object.items as Manifest[]).map((item, at) => ({ item, where: `${where}, item ${at + 1}` }))
        : [{ item: object, where }];
    return items
      .filter(({ item }) => item?.kind === KIND)
      .map(({ item, where: at }) => {
        if (typeof item?.metadata?.name !== 'string' || item.metadata.name === '')
          throw new UsageError(`-f ${file}: the ${KIND} of ${at} has no metadata.name`);
        return { where: at, release: item as unknown as CanaryRelease };
      });
  });
  if (found.length === 0) throw new UsageError(`-f ${file}: holds no object of kind ${KIND}`);
  return found;
}

/** The dry run of each release of the file, in order; exit 1 if any would hold. */
async function planFile(argv: {
  filename: string;
  portBase: number;
  proxyOnHost: boolean;
  proxySelector?: string | undefined;
  namespace?: string | undefined;
  kubeconfig?: string | undefined;
  context?: string | undefined;
}): Promise<void> {
  const found = releasesFromFile(argv.filename);
  // A misspelt field is named, with what it likely meant, before any release is planned.
  const typos = found.flatMap(({ where, release }) =>
    unknownFieldProblems(release).map((problem) => `-f ${argv.filename}: ${where}: ${problem}`),
  );
  if (typos.length > 0) throw new UsageError(typos.join('\n'));
  const portBase = checkPortBase(argv.portBase);
  const held: string[] = [];
  for (const [index, { where, release }] of found.entries()) {
    const cluster = connect({ ...argv, namespace: argv.namespace ?? release.metadata.namespace });
    const name = release.metadata.name;
    const observed = await cluster.observe(release);
    const proxySelector =
      argv.proxySelector === undefined ? defaultProxySelector(name) : parseSelector(argv.proxySelector);
    const admission = await cluster.admission(release);
    const planned = dryRun(observed, {
      proxySelector,
      portBase,
      weightOverrides: [],
      handBackGraceMs: 0,
      now: new Date(),
      inPod: !argv.proxyOnHost,
      reservedPorts: new Set([DEFAULT_ADMIN_PORT]),
    });
    const plan = {
      ...planned,
      problems: planProblems(admission, planned.problems),
      notes: [
        ...planned.notes,
        ...(admission.unchecked === undefined
          ? []
          : [`not checked against the API server's schema: ${admission.unchecked}`]),
      ],
    };
    process.stdout.write(
      `${index === 0 ? '' : '\n'}${formatPlan(release, cluster.namespace, plan, `${where} of ${argv.filename}`)}`,
    );
    if (plan.problems.length > 0) held.push(`${name} (${where})`);
  }
  if (found.length > 1) {
    process.stdout.write(
      `\n${found.length} CanaryReleases planned; ${held.length === 0 ? 'none has a problem' : `with problems: ${held.join(', ')}`}.\n`,
    );
  }
  if (held.length > 0) process.exitCode = 1;
}

/** Serves until SIGINT or SIGTERM, then closes the watch and the server and exits 0. */
async function serveDashboard(argv: {
  port: number;
  address: string;
  readOnly: boolean;
  allNamespaces: boolean;
  namespace?: string | undefined;
  kubeconfig?: string | undefined;
  context?: string | undefined;
}): Promise<void> {
  if (!Number.isInteger(argv.port) || argv.port < 0 || argv.port > 65535)
    throw new UsageError(`--port ${argv.port}: a port 0-65535`);
  const { kubeConfig, namespace } = userKubeConfig(argv);
  const dashboard = await startDashboard({
    kubeConfig,
    namespace: argv.allNamespaces ? undefined : namespace,
    port: argv.port,
    address: argv.address,
    readOnly: argv.readOnly,
  });
  if (!isLoopback(argv.address))
    process.stderr.write(
      `${NAME} dashboard: serving on ${argv.address}: whoever reaches it acts with your kubeconfig (see docs/dashboard.md#security)\n`,
    );
  process.stdout.write(
    `${NAME} dashboard: ${dashboard.url} (${argv.allNamespaces ? 'all namespaces' : `namespace ${namespace}`}${argv.readOnly ? ', read-only' : ''}); Ctrl-C stops it\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  // Bounded, then out: the client's kept-alive sockets to the API (and a watch the API is slow to
  // end) would otherwise hold Ctrl-C for seconds.
  await Promise.race([dashboard.close(), new Promise((resolve) => setTimeout(resolve, DASHBOARD_CLOSE_MS).unref())]);
  process.exit(0);
}

/** How long Ctrl-C waits for the dashboard's pages and watch to close. */
const DASHBOARD_CLOSE_MS = 2_000;

const nameArg = { name: { type: 'string', demandOption: true, describe: 'The CanaryRelease' } } as const;

/** The plugin's commands and flags, without the parse: main.ts runs it, build/cli-reference.ts documents it. */
export function pluginProgram(parser: Argv) {
  return parser
    .scriptName(NAME)
    .option('namespace', {
      alias: 'n',
      type: 'string',
      describe: "Namespace [default: the kubeconfig context's, else default]",
    })
    .option('kubeconfig', { type: 'string', describe: 'kubeconfig file [default: KUBECONFIG, else ~/.kube/config]' })
    .option('context', { type: 'string', describe: 'kubeconfig context [default: the current one]' })
    .command(
      'status <name>',
      'Per Service port: configured, served and achieved split; the step; the last analysis; the conditions',
      (y) => y.positional('name', nameArg.name),
      async (argv) => {
        const cluster = connect(argv);
        process.stdout.write(formatStatus(await cluster.release(argv.name), new Date()));
      },
    )
    .command(
      'promote <name>',
      "End the current step's pause and analysis gate (spec.promotedStep); --full adopts now (spec.transition: Adopted)",
      (y) =>
        y.positional('name', nameArg.name).option('full', {
          type: 'boolean',
          default: false,
          describe: 'Adopt the canary now, skipping the remaining steps',
        }),
      (argv) => act(connect(argv), argv.name, (release) => promote(release, argv.full)),
    )
    .command(
      'pause <name>',
      'Hold the current step however long its pause (spec.paused: true)',
      (y) => y.positional('name', nameArg.name),
      (argv) => act(connect(argv), argv.name, pause),
    )
    .command(
      'resume <name>',
      'Let the steps go on (spec.paused: false)',
      (y) => y.positional('name', nameArg.name),
      (argv) => act(connect(argv), argv.name, resume),
    )
    .command(
      'abort <name>',
      'Roll back: every Service goes back to the stable version (spec.transition: Deprecated)',
      (y) =>
        y.positional('name', nameArg.name).option('reason', {
          type: 'string',
          describe: 'Why, said in status and in the Event (spec.transitionReason)',
        }),
      (argv) => act(connect(argv), argv.name, (release) => abort(release, argv.reason)),
    )
    .command(
      'set-weight <name> <target>',
      "Set a port's canary weight, SERVICE:PORT=N (releases without steps)",
      (y) =>
        y.positional('name', nameArg.name).positional('target', {
          type: 'string',
          demandOption: true,
          describe: 'SERVICE:PORT=WEIGHT, e.g. web:80=25',
        }),
      (argv) => {
        const target = parseWeightTarget(argv.target);
        if (typeof target === 'string') throw new UsageError(target);
        return act(connect(argv), argv.name, (release) => setWeight(release, target));
      },
    )
    .command(
      'plan',
      'Dry run: what each CanaryRelease in FILE would create and change in the cluster as it is now, its steps, and every problem it would hit; changes nothing',
      (y) =>
        y
          .option('filename', {
            alias: 'f',
            type: 'string',
            demandOption: true,
            describe: 'A manifest with CanaryReleases (several documents, or a v1 List)',
          })
          .option('port-base', { type: 'number', default: DEFAULT_PORT_BASE, describe: "The proxy's --port-base" })
          .option('proxy-selector', {
            type: 'string',
            describe: "The proxy's --proxy-selector [default: canary-l4.io/release=NAME]",
          })
          .option('proxy-on-host', {
            type: 'boolean',
            default: false,
            describe:
              'Plan for a proxy run outside a pod: every proxy port from --port-base, every targetPort moved to it',
          }),
      (argv) => planFile(argv),
    )
    .command(
      'dashboard',
      "A web page of the releases, live, with their actions: served on loopback with the user's kubeconfig (its RBAC is the dashboard's)",
      (y) =>
        y
          .option('port', { type: 'number', default: 3100, describe: 'The port to serve on (0: one the OS picks)' })
          .option('address', {
            type: 'string',
            default: '127.0.0.1',
            describe: 'The address to serve on; another than loopback lets others on the network use your kubeconfig',
          })
          .option('read-only', {
            type: 'boolean',
            default: false,
            describe: 'Show no action and refuse every one (the cluster may still allow them to you)',
          })
          .option('all-namespaces', {
            alias: 'A',
            type: 'boolean',
            default: false,
            describe: 'Every namespace instead of one (-n)',
          })
          .conflicts('all-namespaces', 'namespace'),
      (argv) => serveDashboard(argv),
    )
    .demandCommand(1, `name a command: ${COMMAND_NAMES.join(', ')} (see --help)`)
    .strict()
    .help()
    .alias('h', 'help');
}
