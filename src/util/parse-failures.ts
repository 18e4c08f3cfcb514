// What a command line that does not parse gets told, by canary-l4 and by kubectl canary-l4 alike: an
// unknown command or flag named with the one it most likely meant and the help to read. yargs says
// only "Unknown arguments: admin-prot, adminProt", or, when the typo is of a required flag
// (`--confg`), "Missing required argument: config".
import { closestKey } from './closest.ts';

/**
 * A failed parse of `args` (yargs's `message`) by `program` (`canary-l4`, `kubectl canary-l4`), one
 * line per problem: an unknown command or unknown flags first, each with what it likely meant (of a
 * misspelt required flag yargs says only that the flag is missing).
 */
export function parseFailureMessage(
  program: string,
  args: readonly string[],
  commands: readonly string[],
  knownFlags: readonly string[],
  message: string,
): string {
  const command = [program, ...args.filter((arg) => commands.includes(arg)).slice(0, 1)].join(' ');
  const first = args[0];
  if (command === program && first !== undefined && !first.startsWith('-')) {
    const meant = closestKey(first, commands);
    return `${program}: unknown command ${first}${meant === undefined ? '' : `, did you mean ${meant}?`} (the commands: ${commands.join(', ')})`;
  }
  const unknown = unknownFlags(args, knownFlags);
  if (unknown.length > 0) return unknownFlagsMessage(command, unknown);
  return `${command}: ${message}\nRun ${command} --help for usage.`;
}

/** yargs's own parser state, which it has no type for. */
interface ParserState {
  getOptions(): { key: Record<string, unknown> };
}

/** The flags and aliases yargs knows for the command being parsed (`admin-port`, `c`), from `parser` in its `.fail()`. */
export function knownFlagsOf(parser: unknown): string[] {
  return Object.keys((parser as ParserState).getOptions().key);
}

export interface UnknownFlag {
  /** As typed, with its dashes: `--admin-prot`. */
  readonly typed: string;
  /** The known flag meant, with its dashes, when one is close: `--admin-port`. */
  readonly meant?: string;
}

/**
 * `args`: the command line after the program. `known`: the command's flags and aliases as yargs
 * keeps them (`admin-port`, `c`). yargs also takes a flag in camelCase and `--no-` before any flag.
 */
export function unknownFlags(args: readonly string[], known: readonly string[]): UnknownFlag[] {
  const accepted = new Set(known.flatMap((flag) => [flag, camelCase(flag)]));
  const unknown: UnknownFlag[] = [];
  for (const arg of args) {
    if (arg === '--') break;
    for (const name of flagNames(arg)) {
      if (accepted.has(name) || (name.startsWith('no-') && accepted.has(name.slice(3)))) continue;
      const typed = `${name.length === 1 ? '-' : '--'}${name}`;
      const meant = meantFlag(name, known);
      unknown.push(meant === undefined ? { typed } : { typed, meant: `${meant.length === 1 ? '-' : '--'}${meant}` });
    }
  }
  return unknown;
}

/** One line per unknown flag, each naming the command's own help. */
export function unknownFlagsMessage(command: string, unknown: readonly UnknownFlag[]): string {
  const help = `${command} --help lists its flags`;
  return unknown
    .map(
      ({ typed, meant }) =>
        `${command}: unknown flag ${typed}${meant === undefined ? '' : `, did you mean ${meant}?`} (${help})`,
    )
    .join('\n');
}

/** `--a=1` → a; `-abc` → a, b, c (short flags grouped); a value or a negative number → none. */
function flagNames(arg: string): string[] {
  if (arg.startsWith('--')) return arg.length > 2 ? [arg.slice(2).split('=')[0] ?? ''] : [];
  if (arg.startsWith('-') && arg.length > 1 && !/^-\d/.test(arg)) return [...(arg.slice(1).split('=')[0] ?? '')];
  return [];
}

/** A close spelling, else the one flag that ends with what was typed (`--release` → `--canary-release`). */
function meantFlag(typed: string, known: readonly string[]): string | undefined {
  const long = known.filter((flag) => flag.length > 1);
  if (typed.length === 1) return undefined;
  const close = closestKey(typed, long);
  if (close !== undefined) return close;
  const endings = long.filter((flag) => flag.endsWith(`-${typed}`));
  return endings.length === 1 ? endings[0] : undefined;
}

function camelCase(flag: string): string {
  return flag.replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase());
}
