// `proxy --state-dir DIR`: the last L4 config the proxy served, kept on disk (an emptyDir in the
// pod, which outlives container restarts) so that a restarted proxy serves at once, before the
// API answers. Without it, a proxy restarted while the apiserver is unreachable listens on
// nothing, and every Service retargeted to it is a black hole until the API comes back.

import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { formatListenAddress } from '../config/listen-address.ts';
import { validateConfig } from '../config/validate.ts';
import type { L4Config } from '../config/types.ts';

const FILE = 'served-config.json';

/** Which release a saved config belongs to: a directory reused by another release is ignored. */
export interface StateOwner {
  readonly namespace: string;
  readonly release: string;
}

interface StateFile {
  readonly namespace: string;
  readonly release: string;
  readonly savedAt: string;
  /** The config as a document (the form `serve` reads), validated again on load. */
  readonly config: unknown;
}

export type LoadedState =
  | { readonly kind: 'none' }
  | { readonly kind: 'loaded'; readonly config: L4Config; readonly savedAt: string }
  | { readonly kind: 'ignored'; readonly problem: string };

/** The config as the document `validateConfig` reads: listen addresses as text, no --weight marks. */
function toDocument(config: L4Config): unknown {
  return {
    listeners: config.listeners.map((listener) => ({
      ...listener,
      listen: formatListenAddress(listener.listen),
      backends: listener.backends.map(({ overriddenFrom: _marked, ...backend }) => backend),
    })),
  };
}

/** Written to a temporary file, then renamed over the old one: a crash leaves one or the other, whole. */
export async function saveServedConfig(
  dir: string,
  owner: StateOwner,
  config: L4Config,
  now = new Date(),
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const state: StateFile = { ...owner, savedAt: now.toISOString(), config: toDocument(config) };
  const path = join(dir, FILE);
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(state, null, 2)}\n`, { flush: true });
  await rename(temporary, path);
}

export async function loadServedConfig(dir: string, owner: StateOwner): Promise<LoadedState> {
  const path = join(dir, FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { kind: 'none' };
    return {
      kind: 'ignored',
      problem: `${path}: cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    };
  }
  let state: Partial<StateFile>;
  try {
    state = JSON.parse(text) as Partial<StateFile>;
  } catch (err) {
    return { kind: 'ignored', problem: `${path}: not JSON (${(err as Error).message})` };
  }
  if (state.namespace !== owner.namespace || state.release !== owner.release) {
    return {
      kind: 'ignored',
      problem: `${path} holds the config of CanaryRelease ${state.namespace}/${state.release}, not ${owner.namespace}/${owner.release}`,
    };
  }
  try {
    return { kind: 'loaded', config: validateConfig(state.config, path), savedAt: String(state.savedAt) };
  } catch (err) {
    return { kind: 'ignored', problem: (err as Error).message };
  }
}
