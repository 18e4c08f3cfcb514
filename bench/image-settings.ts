// How the image runs canary-l4, read from deploy/Dockerfile so the bench cannot drift from it: the
// Node flags of its ENTRYPOINT and the environment of its last stage (glibc's and V8's settings).
// NODE_COMPILE_CACHE is left out: it names a path in the image; the bench keeps caches of its own.
// The Node binary is the project's own unless --node names another (a runtime measured against the
// pinned one in the same repetitions).
import { spawnSync } from 'node:child_process';
import { readDockerfile, runtimeOf } from '../test/support/process/dockerfile.ts';

export interface CanarySettings {
  /** The Node binary that runs canary-l4, and its version (`v26.10.0`). */
  readonly node: { readonly path: string; readonly version: string };
  readonly nodeFlags: readonly string[];
  readonly env: Readonly<Record<string, string>>;
}

export function imageSettings(dockerfile?: string): Omit<CanarySettings, 'node'> {
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

/** The Node binary at `path`, with its version; `flag` names the option it came from, for the error. */
export function nodeBinary(flag: string, path: string): CanarySettings['node'] {
  const result = spawnSync(path, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  const version = result.stdout?.trim() ?? '';
  if (result.status === 0 && /^v\d+\.\d+\.\d+$/.test(version)) return { path, version };
  const said = result.error?.message ?? `${result.stderr || version || `exit ${result.status}`}`.trim().split('\n')[0];
  throw new Error(`--${flag}: ${path} is not a Node binary (its --version said: ${said}); name a node executable`);
}
