// `serve`: the standalone balancer. Loads the config file, applies `--weight` overrides, and reloads
// on SIGHUP and when the file changes; a new config that fails to load, validate or bind is refused,
// logged and counted, and the previous one keeps serving.
import { lookup } from 'node:dns/promises';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { L4Config, WeightOverride } from '../config/types.ts';
import { loadConfigFile } from '../config/load.ts';
import { configChanges } from '../config/changes.ts';
import { applyWeightOverrides } from '../config/overrides.ts';
import { allZeroWeights, namedBackendHosts } from '../config/warnings.ts';
import { BindError, ConfigError } from '../errors.ts';
import type { ConfigTarget } from '../runtime/runtime.ts';
import { handleHangups } from '../runtime/hangups.ts';

export interface ServeOptions {
  readonly configPath: string;
  readonly overrides: readonly WeightOverride[];
  readonly watchFile: boolean;
}

export function loadServedConfig(options: ServeOptions): Promise<L4Config> {
  return loadConfigFile(options.configPath).then((config) => applyWeightOverrides(config, options.overrides));
}

/**
 * Applies `first` (already loaded, so a bad file fails before anything starts), then reloads on
 * SIGHUP and file changes. Throws (one clear message) if the first config cannot be served.
 */
export async function serveConfigFile(target: ConfigTarget, first: L4Config, options: ServeOptions): Promise<void> {
  await applyFile(target, first, options.configPath);
  target.setReady(true);
  if (first.listeners.length === 0) {
    target.log.warn(
      { config: options.configPath },
      'the config has no listeners: nothing is balanced until a reload adds some',
    );
  }
  target.log.info({ config: options.configPath, listeners: first.listeners.length }, 'serving');
  warnAboutMistakes(first, options.configPath, target.log);

  let served = first;
  let reloading = Promise.resolve();
  const reload = (trigger: string) => {
    reloading = reloading.then(async () => {
      try {
        const config = await loadServedConfig(options).catch((err: unknown) => {
          target.recordRefusedConfig();
          throw err;
        });
        if (await applyFile(target, config, options.configPath)) {
          target.log.info(
            { trigger, listeners: config.listeners.length, ...configChanges(served, config) },
            'config reloaded',
          );
          served = config;
          warnAboutMistakes(config, options.configPath, target.log);
        } else {
          target.log.info({ trigger }, 'config unchanged; nothing to reload');
        }
      } catch (err) {
        target.log.error(
          { trigger, error: (err as Error).message },
          'config reload refused; the previous config keeps serving',
        );
      }
    });
  };
  handleHangups(() => reload('SIGHUP'));
  if (options.watchFile) watchFile(options.configPath, () => reload('file change'));
}

/** A listener that cannot bind is a config error like any other: the file, the field, the reason. */
async function applyFile(target: ConfigTarget, config: L4Config, file: string): Promise<boolean> {
  try {
    return await target.applyConfig(config);
  } catch (err) {
    if (err instanceof BindError) throw new ConfigError(file, [`${err.field}: ${err.message}`], { cause: err });
    throw err;
  }
}

/** Warns, naming the field, about what is valid but most likely a mistake; resolves names in the background. */
function warnAboutMistakes(config: L4Config, file: string, log: Logger): void {
  for (const { field, listener } of allZeroWeights(config)) {
    log.warn(
      { config: file, field, listener },
      'every backend has weight 0: the listener refuses every new connection',
    );
  }
  const byHost = Map.groupBy(namedBackendHosts(config), (backend) => backend.host);
  for (const [host, backends] of byHost) {
    lookup(host).catch((err: NodeJS.ErrnoException) => {
      for (const { field, listener } of backends) {
        log.warn(
          { config: file, field, listener, host, error: err.code },
          'backend host does not resolve: connections to it will fail',
        );
      }
    });
  }
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
