// `serve`: the standalone balancer. Loads the config file, applies `--weight` overrides, and reloads
// on SIGHUP and when the file changes; a new config that fails to load, validate or bind is refused,
// logged and counted, and the previous one keeps serving.
import fs from 'node:fs';
import path from 'node:path';
import type { L4Config, WeightOverride } from './config/types.ts';
import { loadConfigFile } from './config/load.ts';
import { applyWeightOverrides } from './config/overrides.ts';
import type { Runtime } from './runtime.ts';

export interface ServeOptions {
  readonly configPath: string;
  readonly overrides: readonly WeightOverride[];
  readonly watchFile: boolean;
}

/** Loads and applies the first config; throws (one clear message) if it cannot be served. */
export async function serveConfigFile(runtime: Runtime, options: ServeOptions): Promise<void> {
  const load = async (): Promise<L4Config> => applyWeightOverrides(await loadConfigFile(options.configPath), options.overrides);
  await runtime.applyConfig(await load());
  runtime.setReady(true);
  if (runtime.dataplane.config.listeners.length === 0) {
    runtime.log.warn({ config: options.configPath }, 'the config has no listeners: nothing is balanced until a reload adds some');
  }
  runtime.log.info({ config: options.configPath, listeners: runtime.dataplane.config.listeners.length }, 'serving');

  let reloading = Promise.resolve();
  const reload = (trigger: string) => {
    reloading = reloading.then(async () => {
      try {
        await runtime.applyConfig(await load());
        runtime.log.info({ trigger, listeners: runtime.dataplane.config.listeners.length }, 'config reloaded');
      } catch (err) {
        runtime.log.error({ trigger, error: (err as Error).message }, 'config reload refused; the previous config keeps serving');
      }
    });
  };
  process.on('SIGHUP', () => reload('SIGHUP'));
  if (options.watchFile) watchFile(options.configPath, () => reload('file change'));
}

/**
 * Watches the file's directory rather than the file: editors and Kubernetes ConfigMap updates
 * replace the file (rename), which a watch on the old inode would miss. Bursts are debounced.
 */
function watchFile(file: string, onChange: () => void): void {
  const dir = path.dirname(path.resolve(file));
  const base = path.basename(file);
  let timer: NodeJS.Timeout | undefined;
  let last = fingerprint(file);
  const watcher = fs.watch(dir, (_event, name) => {
    if (name !== null && name !== base && name !== '..data') return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      const now = fingerprint(file);
      if (now === last) return;
      last = now;
      onChange();
    }, 200);
  });
  watcher.unref();
}

function fingerprint(file: string): string {
  try {
    const stat = fs.statSync(file);
    return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  } catch {
    return 'missing';
  }
}
