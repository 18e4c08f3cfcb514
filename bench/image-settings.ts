// How the image runs canary-l4, read from deploy/Dockerfile so the bench cannot drift from it: the
// Node flags of its ENTRYPOINT and the environment of its last stage (glibc's and V8's settings).
// NODE_COMPILE_CACHE is left out: it names a path in the image; the bench keeps caches of its own.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from './paths.ts';

export interface CanarySettings {
  readonly nodeFlags: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

const NOT_A_SETTING = new Set(['NODE_COMPILE_CACHE']);

export function imageSettings(dockerfile: string = readFileSync(join(PROJECT_ROOT, 'deploy', 'Dockerfile'), 'utf8')): CanarySettings {
  const lines = dockerfile.replace(/\\\n/g, ' ').split('\n').filter((line) => !line.trimStart().startsWith('#'));
  const lastStage = lines.slice(lines.findLastIndex((line) => /^FROM\s/i.test(line)));
  const env: Record<string, string> = {};
  for (const line of lastStage) {
    const assignments = /^ENV\s+(.*)$/i.exec(line)?.[1];
    for (const assignment of assignments?.split(/\s+/) ?? []) {
      const [name, value] = assignment.split('=', 2);
      if (name && value !== undefined && !NOT_A_SETTING.has(name)) env[name] = value;
    }
  }
  const entrypoint = lastStage.find((line) => /^ENTRYPOINT\s/i.test(line));
  if (entrypoint === undefined) throw new Error('deploy/Dockerfile: no ENTRYPOINT in its last stage');
  const words = JSON.parse(entrypoint.replace(/^ENTRYPOINT\s+/i, '')) as string[];
  const node = words.indexOf('node');
  const script = words.findIndex((word) => word.endsWith('.js'));
  if (node === -1 || script < node) throw new Error(`deploy/Dockerfile: its ENTRYPOINT runs no node script: ${entrypoint}`);
  return { nodeFlags: words.slice(node + 1, script), env };
}

/** `A=1 B=2` as an environment ('' is none). */
export function parseEnv(flag: string, text: string): Record<string, string> {
  return Object.fromEntries(text.split(/\s+/).filter((word) => word !== '').map((word) => {
    const [name, value] = word.split('=', 2);
    if (!name || value === undefined) throw new Error(`--${flag}: expected NAME=VALUE words, got "${word}"`);
    return [name, value];
  }));
}
