// `kubectl canary-l4` as a user runs it: kubectl finds `kubectl-canary_l4` on PATH (here a link to the
// package bin in a temporary bin directory) and runs it with the user's KUBECONFIG.

import { execFile } from 'node:child_process';
import { mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package's bin (package.json), as npm installs it: its launcher checks the Node version, then runs src/plugin/main.ts. */
export const PLUGIN = fileURLToPath(new URL('../../../bin/kubectl-canary_l4', import.meta.url));

export interface PluginRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

export interface Plugin {
  (...args: string[]): Promise<PluginRun>;
  cleanup(): Promise<void>;
}

export async function pluginFor(kubeconfigPath: string): Promise<Plugin> {
  const home = await mkdtemp(join(tmpdir(), 'kubectl-plugin-'));
  await symlink(PLUGIN, join(home, 'kubectl-canary_l4'));
  // The plugin's `#!/usr/bin/env node` must find this Node (24), not an older one on the PATH.
  const env = {
    ...process.env,
    HOME: home,
    KUBECONFIG: kubeconfigPath,
    PATH: `${home}:${dirname(process.execPath)}:${process.env.PATH ?? ''}`,
  };
  const run = (...args: string[]) =>
    new Promise<PluginRun>((resolve) => {
      execFile('kubectl', ['canary-l4', ...args], { env, timeout: 30_000 }, (err, stdout, stderr) => {
        const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
        resolve({ code, stdout, stderr });
      });
    });
  return Object.assign(run, { cleanup: () => rm(home, { recursive: true, force: true }) });
}
