// docs/cli.md, written from the yargs definitions themselves (src/cli/program.ts, src/plugin/program.ts):
// every command with every flag, its aliases, type, default and environment variable. `npm run docs:cli`
// writes it; test/docs/cli-reference.test.ts fails when the page differs from what this renders.
import { writeFileSync } from 'node:fs';
import yargs, { type Argv } from 'yargs';
import { canaryL4Program } from '../src/cli/program.ts';
import { NAME as PLUGIN, pluginProgram } from '../src/plugin/program.ts';

export const CLI_REFERENCE = new URL('../docs/cli.md', import.meta.url);

/** yargs's parser state, which it has no types for: the flags it was given, and its commands. */
interface ParserState {
  getOptions(): {
    key: Record<string, boolean>;
    alias: Record<string, string[]>;
    default: Record<string, unknown>;
    boolean: string[];
    number: string[];
    string: string[];
    array: string[];
    choices: Record<string, string[]>;
    hiddenOptions: string[];
    demandedOptions: Record<string, unknown>;
    envPrefix?: string;
  };
  getGroups(): Record<string, string[]>;
  getInternalMethods(): {
    getUsageInstance(): { getDescriptions(): Record<string, string | undefined> };
    getCommandInstance(): { getCommandHandlers(): Record<string, CommandHandler> };
  };
}

interface CommandHandler {
  /** As declared: `status <name>`. */
  readonly original: string;
  readonly description: string | false;
  readonly builder: (parser: Argv) => Argv;
}

/** Flags yargs adds to every command, said once at the top of the page. */
const BUILT_IN = ['help', 'version'];
/** How yargs marks its own (translatable) descriptions. */
const YARGS_STRING = '__yargsString__:';

interface Flag {
  readonly name: string;
  readonly positional: boolean;
  readonly aliases: readonly string[];
  readonly type: string;
  readonly default: string;
  readonly env: string | undefined;
  readonly description: string;
}

/** The flags a parser was given, in the order they were declared; aliases are not flags of their own. */
function flagsOf(parser: Argv, envPrefix: string | undefined): Flag[] {
  const state = parser as unknown as ParserState;
  const options = state.getOptions();
  const descriptions = state.getInternalMethods().getUsageInstance().getDescriptions();
  const positionals = new Set(
    Object.entries(state.getGroups())
      .filter(([group]) => group.startsWith('Positionals'))
      .flatMap(([, keys]) => keys),
  );
  const aliases = new Set(Object.values(options.alias).flat());
  return Object.keys(options.key)
    .filter((key) => !BUILT_IN.includes(key) && !aliases.has(key) && !options.hiddenOptions.includes(key))
    .map((key) => ({
      name: key,
      positional: positionals.has(key),
      aliases: options.alias[key] ?? [],
      type: typeOf(key, options),
      default: key in options.demandedOptions ? 'required' : defaultOf(options.default[key]),
      env: envPrefix === undefined || positionals.has(key) ? undefined : envName(envPrefix, key),
      description: (descriptions[key] ?? '').replace(YARGS_STRING, ''),
    }));
}

/** As yargs's `.env(prefix)` reads a flag: `CANARY_L4_ADMIN_PORT` for `--admin-port`. */
function envName(prefix: string, key: string): string {
  return `${prefix}_${key.toUpperCase().replaceAll('-', '_')}`;
}

function typeOf(key: string, options: ReturnType<ParserState['getOptions']>): string {
  const choices = options.choices[key];
  const base =
    choices !== undefined
      ? `one of ${choices.map((choice) => `\`${choice}\``).join(', ')}`
      : ((['boolean', 'number', 'string'] as const).find((type) => options[type].includes(key)) ?? 'string');
  return options.array.includes(key) ? `${base}, repeatable` : base;
}

function defaultOf(value: unknown): string {
  if (value === undefined || (Array.isArray(value) && value.length === 0)) return 'none';
  return `\`${Array.isArray(value) ? value.join(',') : String(value)}\``;
}

/** `--admin-address` or `<name>`; an alias `-c` or `--admin-host`. */
const flagName = (name: string) => (name.length === 1 ? `-${name}` : `--${name}`);

function flagEntry(command: string, flag: Flag): string {
  const shown = flag.positional ? `<${flag.name}>` : flagName(flag.name);
  const facts = [
    [shown, ...flag.aliases.map(flagName)].map((name) => `\`${name}\``).join(', '),
    flag.type,
    flag.positional || flag.default === 'required' ? 'required' : `default ${flag.default}`,
    ...(flag.env === undefined ? [] : [`environment \`${flag.env}\``]),
  ];
  return `### \`${command} ${shown}\`\n\n${facts.join(' · ')}\n\n${flag.description}\n`;
}

function programSection(name: string, program: Argv, intro: string): string {
  const state = program as unknown as ParserState;
  const envPrefix = state.getOptions().envPrefix;
  const globals = flagsOf(program, envPrefix);
  const commands = Object.values(state.getInternalMethods().getCommandInstance().getCommandHandlers());
  const parts = [`## ${name}\n\n${intro}\n`];
  if (envPrefix !== undefined) {
    const variable = `\`${envPrefix}_<FLAG>\``;
    parts.push(`Every flag can also be set in the environment as ${variable} (upper case, \`-\` as \`_\`).\n`);
  }
  const index = commands.map((command) => {
    const link = anchor(`${name} ${commandName(command)}`);
    return `- [\`${name} ${command.original}\`](#${link}): ${command.description || ''}`;
  });
  parts.push(`${index.join('\n')}\n`);
  if (globals.length > 0) {
    parts.push(`Flags of every ${name} command:\n`, ...globals.map((flag) => flagEntry(name, flag)));
  }
  for (const command of commands) {
    const title = `${name} ${commandName(command)}`;
    const flags = flagsOf(command.builder(yargs([])), envPrefix);
    const usage = `${name} ${command.original}${flags.some((flag) => !flag.positional) ? ' [flags]' : ''}`;
    parts.push(`## ${title}\n\n${command.description || ''}\n\n\`\`\`\n${usage}\n\`\`\`\n`);
    parts.push(...flags.map((flag) => flagEntry(title, flag)));
  }
  return parts.join('\n');
}

const commandName = (command: CommandHandler) => command.original.split(' ')[0] ?? command.original;

/** GitHub's heading anchors: lower case, spaces as '-', punctuation other than '-' and '_' dropped. */
export function anchor(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** docs/cli.md as the parsers define it today. */
export function renderCliReference(): string {
  return [
    '# CLI reference',
    '',
    '<!-- Generated from the yargs definitions by `npm run docs:cli` (build/cli-reference.ts);',
    'edit those, not this page. -->',
    '',
    'Every command also takes `--help` (`-h`), which prints what this page says, and `--version`.',
    '',
    'Exit status: 2 for a command line that does not parse (an unknown flag or command is named with the one it',
    "likely meant and the command's own `--help`) and for every start-up error a user can fix (a bad config file, a",
    'port taken, an unusable kubeconfig: one line naming the flag, field or variable); 1 for other failures, and for',
    '`kubectl canary-l4 plan` when a release of the file has a problem; 0 otherwise.',
    '',
    programSection(
      'canary-l4',
      canaryL4Program(yargs([])),
      'The balancer (`serve`, `demo`), the per-release proxy (`proxy`) and the Kubernetes manager (`manager`).',
    ),
    programSection(
      PLUGIN,
      pluginProgram(yargs([])),
      'The kubectl plugin (`kubectl-canary_l4` on PATH): reads and patches CanaryReleases, ' +
        'each action an ordinary patch it prints.',
    ),
  ].join('\n');
}

if (import.meta.main) writeFileSync(CLI_REFERENCE, renderCliReference());
