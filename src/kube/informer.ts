// Informers that stay up. client-node's ListWatch stops for good on any error but 410 and asks
// for neither bookmarks nor a server timeout, so a half-open connection can stall it silently
// (notes/kubernetes-api.md §1.4–1.5). This wrapper restarts it with capped exponential backoff,
// asks for bookmarks and a server-side timeout, and restarts a watch that has gone quiet.
import {
  type KubeConfig,
  ListWatch,
  Watch,
  type KubernetesListObject,
  type KubernetesObject,
} from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { describeError } from './patch.ts';

export interface InformerOptions<T extends KubernetesObject> {
  readonly kubeConfig: KubeConfig;
  /** Collection path, e.g. /api/v1/namespaces/ns/services. */
  readonly path: string;
  readonly list: () => Promise<KubernetesListObject<T>>;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /** Called for every add, update and delete; must only enqueue work. */
  readonly onChange: (object: T) => void;
  readonly log: Logger;
  /** Restart the watch when nothing (not even a bookmark) arrived for this long. */
  readonly staleAfterMs: number;
  readonly watchTimeoutSeconds: number;
  readonly maxBackoffMs?: number;
  /** Called when a list and watch succeed after a failure: the API answers again. */
  readonly onRestarted?: () => void;
}

export interface Informer<T extends KubernetesObject> {
  /** The cached objects; never mutate them. */
  list(): readonly T[];
  get(name: string, namespace: string): T | undefined;
  /** Resolves once the first list has filled the cache. */
  readonly synced: Promise<void>;
  stop(): Promise<void>;
}

const INITIAL_BACKOFF_MS = 500;

/** What a controller's informers run with: a server-side watch timeout, a restart of a watch silent
 * for long, and retries at least every 3 s, so recovery after an API outage is prompt. */
export const CONTROLLER_INFORMER_TUNING = {
  watchTimeoutSeconds: 300,
  staleAfterMs: 10 * 60_000,
  maxBackoffMs: 3_000,
} as const;

class TunedWatch extends Watch {
  readonly #timeoutSeconds: number;
  readonly #onActivity: () => void;

  constructor(kubeConfig: KubeConfig, timeoutSeconds: number, onActivity: () => void) {
    super(kubeConfig);
    this.#timeoutSeconds = timeoutSeconds;
    this.#onActivity = onActivity;
  }

  override watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    // biome-ignore lint/suspicious/noExplicitAny: the signature of client-node's Watch.watch, which this overrides
    callback: (phase: string, apiObj: any, watchObj?: any) => void,
    // biome-ignore lint/suspicious/noExplicitAny: as above
    done: (err: any) => void,
  ): Promise<AbortController> {
    const params = { ...queryParams, allowWatchBookmarks: true, timeoutSeconds: this.#timeoutSeconds };
    return super.watch(
      path,
      params,
      (phase, object, raw) => {
        this.#onActivity();
        callback(phase, object, raw);
      },
      done,
    );
  }
}

export function startInformer<T extends KubernetesObject>(options: InformerOptions<T>): Informer<T> {
  const { log } = options;
  const maxBackoffMs = options.maxBackoffMs ?? 30_000;
  let lastActivity = Date.now();
  const touch = () => (lastActivity = Date.now());
  const watch = new TunedWatch(options.kubeConfig, options.watchTimeoutSeconds, touch);
  const listAndTouch = async () => {
    const list = await options.list();
    touch();
    return list;
  };
  const informer = new ListWatch<T>(
    options.path,
    watch,
    listAndTouch,
    false,
    options.labelSelector,
    options.fieldSelector,
  );
  for (const event of ['add', 'update', 'delete'] as const) informer.on(event, options.onChange);

  let stopped = false;
  let backoffMs = INITIAL_BACKOFF_MS;
  let restartTimer: NodeJS.Timeout | undefined;
  let resolveSynced!: () => void;
  const synced = new Promise<void>((resolve) => (resolveSynced = resolve));

  let failed = false;
  const start = () => {
    if (stopped) return;
    // start() resolves even when the list or watch failed (the failure goes to the 'error'
    // handlers, which schedule a restart), so success is "resolved with no restart pending".
    informer.start().then(
      () => {
        if (restartTimer !== undefined) return;
        backoffMs = INITIAL_BACKOFF_MS;
        touch();
        resolveSynced();
        if (failed) options.onRestarted?.();
        failed = false;
      },
      (err) => restartLater(err),
    );
  };
  const restartLater = (err: unknown) => {
    if (stopped || restartTimer !== undefined) return;
    failed = true;
    // Jitter: replicas that lost the API together do not all come back in the same instant.
    const delayMs = Math.round(backoffMs * (0.8 + Math.random() * 0.4));
    log.warn({ path: options.path, error: describeError(err), retryInMs: delayMs }, 'watch failed; restarting');
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      start();
    }, delayMs);
    backoffMs = Math.min(backoffMs * 2, maxBackoffMs);
  };
  /**
   * Set while the watchdog waits for the watch it aborted to report its end. Starting at once would
   * race it: ListWatch's end handler aborts whatever request is current, the new one included.
   */
  let watchdogRestart: NodeJS.Timeout | undefined;
  const restartAfterWatchdog = () => {
    clearTimeout(watchdogRestart);
    watchdogRestart = undefined;
    start();
  };
  informer.on('error', (err) => (watchdogRestart !== undefined ? restartAfterWatchdog() : restartLater(err)));

  const watchdog = setInterval(
    () => {
      if (
        stopped ||
        restartTimer !== undefined ||
        watchdogRestart !== undefined ||
        Date.now() - lastActivity < options.staleAfterMs
      )
        return;
      log.warn({ path: options.path, quietForMs: Date.now() - lastActivity }, 'watch went quiet; restarting it');
      touch();
      // Should the watch have ended already, no end will be reported: start anyway after a while.
      watchdogRestart = setTimeout(restartAfterWatchdog, 1_000);
      void informer.stop();
    },
    Math.max(1000, Math.floor(options.staleAfterMs / 4)),
  );
  watchdog.unref();

  start();
  return {
    list: () => informer.list(),
    get: (name, namespace) => informer.get(name, namespace),
    synced,
    stop: async () => {
      stopped = true;
      clearTimeout(restartTimer);
      clearTimeout(watchdogRestart);
      clearInterval(watchdog);
      await informer.stop();
    },
  };
}
