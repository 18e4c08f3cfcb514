// How the image runs canary-l4, read from deploy/Dockerfile so the bench cannot drift from it: the
// Node flags of its ENTRYPOINT and the environment of its last stage (glibc's and V8's settings).
// NODE_COMPILE_CACHE is left out: it names a path in the image; the bench keeps caches of its own.
import { readDockerfile, runtimeOf } from '../test/support/process/dockerfile.ts';

export interface CanarySettings {
  readonly nodeFlags: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

export function imageSettings(dockerfile?: string): CanarySettings {
  const { entrypoint, nodeFlags, env } = runtimeOf(readDockerfile(dockerfile).stages.at(-1));
  if (!entrypoint.includes('node')) throw new Error('deploy/Dockerfile: the ENTRYPOINT of its last stage runs no node');
  return { nodeFlags, env };
}

/** `A=1 B=2` as an environment ('' is none). */
export function parseEnv(flag: string, text: string): Record<string, string> {
  return Object.fromEntries(
    text
      .split(/\s+/)
      .filter((word) => word !== '')
      .map((word) => {
        const [name, value] = word.split('=', 2);
        if (!name || value === undefined) throw new Error(`--${flag}: expected NAME=VALUE words, got "${word}"`);
        return [name, value];
      }),
  );
}
