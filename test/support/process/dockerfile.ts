// deploy/Dockerfile read as Docker reads it (continuation lines joined, comments dropped): its
// build stages and their instructions, and how the last stage runs Node. The image test replays
// it; the bench runs canary-l4 with the same flags and environment.
import { readFileSync } from 'node:fs';

export interface Instruction {
  readonly keyword: string;
  readonly argument: string;
}
export interface Stage {
  readonly name: string | undefined;
  readonly from: string;
  readonly instructions: Instruction[];
}

export const DOCKERFILE = new URL('../../../deploy/Dockerfile', import.meta.url);

export function readDockerfile(text: string = readFileSync(DOCKERFILE, 'utf8')): {
  globalArgs: Map<string, string>;
  stages: Stage[];
} {
  const globalArgs = new Map<string, string>();
  const stages: Stage[] = [];
  for (const line of text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((raw) => raw.trim())) {
    if (line === '' || line.startsWith('#')) continue;
    const [, keyword = '', argument = ''] = /^(\w+)\s+(.*)$/.exec(line) ?? [];
    const upper = keyword.toUpperCase();
    if (upper === 'FROM') {
      const [from = '', , name] = argument.split(/\s+/);
      stages.push({ name, from, instructions: [] });
    } else if (stages.length === 0) {
      if (upper === 'ARG') globalArgs.set(...argDefault(argument));
    } else {
      stages.at(-1)!.instructions.push({ keyword: upper, argument });
    }
  }
  return { globalArgs, stages };
}

/** `NAME=default` of an ARG: [name, default]. */
export function argDefault(argument: string): [string, string] {
  const [name = '', value = ''] = argument.split('=');
  return [name, value];
}

export function instructions(stage: Stage | undefined, keyword: string): string[] {
  return (stage?.instructions ?? [])
    .filter((instruction) => instruction.keyword === keyword)
    .map((instruction) => instruction.argument);
}

/** How a stage runs its process: the ENTRYPOINT, the Node flags in it, and its ENV but the compile
 * cache's path (an image path: who runs it elsewhere gives it one of its own). */
export function runtimeOf(stage: Stage | undefined): {
  entrypoint: string[];
  nodeFlags: string[];
  env: Record<string, string>;
} {
  const entrypoint = JSON.parse(instructions(stage, 'ENTRYPOINT')[0] ?? '[]') as string[];
  const node = entrypoint.indexOf('node');
  const script = entrypoint.findIndex((word) => word.endsWith('.js'));
  const env = Object.fromEntries(
    instructions(stage, 'ENV')
      .flatMap((setting) => setting.split(/\s+/))
      .map((word) => word.split('=', 2) as [string, string])
      .filter(([name, value]) => value !== undefined && name !== 'NODE_COMPILE_CACHE'),
  );
  return { entrypoint, nodeFlags: node === -1 || script < node ? [] : entrypoint.slice(node + 1, script), env };
}
