/**
 * A program a suite needs on PATH (kubectl, python3, lua5.1, chromium, go, openssl): without it the suite skips on a developer's
 * machine, but fails in CI (`CI` set, as .ci/run does), so that a CI image missing it cannot pass by
 * skipping what it was meant to test.
 *
 * ```ts
 * describe('through kubectl', await requireTool('kubectl'), () => { … });
 * ```
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

/** Each tool's cheapest call that proves it runs. */
const PROBES = {
  kubectl: ['version', '--client'],
  python3: ['--version'],
  chromium: ['--version'],
  'lua5.1': ['-v'],
  go: ['version'],
  openssl: ['version'],
} as const;

export type Tool = keyof typeof PROBES;

/**
 * `{ skip }` for a describe or it that needs `tool`: `false` when it runs, the reason when it is
 * missing; in CI a missing tool throws instead. `env` (PATH, CI) is the process's own unless a test
 * of this helper gives another.
 */
export async function requireTool(tool: Tool, env: NodeJS.ProcessEnv = process.env): Promise<{ skip: string | false }> {
  const found = await promisify(execFile)(tool, PROBES[tool], { env, timeout: 15_000 }).then(
    () => true,
    () => false,
  );
  if (found) return { skip: false };
  const reason = `${tool} is not on PATH`;
  if (env.CI !== undefined && env.CI !== '') throw new Error(`${reason}, and CI runs every suite that needs it`);
  return { skip: reason };
}
