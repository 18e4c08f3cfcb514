/**
 * What the test simulations of cluster components (kube-proxy.ts, kubelet.ts) share: informers
 * that keep watching through errors, and passes over their caches run one at a time. Independent of
 * the code under test: client-node's ListWatch only.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import {
  ListWatch,
  Watch,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
} from '@kubernetes/client-node';

export interface KeptWatch<T extends KubernetesObject> {
  readonly informer: ListWatch<T>;
  /** Resolves once the first list has filled the cache. */
  readonly synced: Promise<void>;
}

/** A ListWatch that restarts after errors (client-node's stops for good) and re-watches within 1 s. */
export function keepWatching<T extends KubernetesObject>(
  kubeConfig: KubeConfig,
  path: string,
  list: () => Promise<KubernetesListObject<T>>,
  onChange: () => void,
  options: {
    readonly labelSelector?: string;
    readonly fieldSelector?: string;
    readonly retryMs: number;
    readonly stopped: () => boolean;
  },
): KeptWatch<T> {
  let listed!: () => void;
  const synced = new Promise<void>((resolve) => (listed = resolve));
  const listAndMark = async () => {
    const result = await list();
    listed();
    return result;
  };
  const informer = new ListWatch<T>(
    path,
    new Watch(kubeConfig),
    listAndMark,
    false,
    options.labelSelector,
    options.fieldSelector,
    { delayFn: (ms) => sleep(Math.min(ms, 1000)) },
  );
  for (const event of ['add', 'update', 'delete'] as const) informer.on(event, onChange);
  informer.on('error', () => {
    void sleep(options.retryMs).then(() => {
      if (!options.stopped()) void informer.start();
    });
  });
  void informer.start();
  return { informer, synced };
}

/**
 * Runs `pass` one at a time: asked again while one runs, it runs once more after. A pass that
 * throws (a write that raced the test) is run again after `retryMs`.
 */
export class OnePassAtATime {
  readonly #pass: () => Promise<void>;
  readonly #stopped: () => boolean;
  readonly #retryMs: number;
  #running: Promise<void> | undefined;
  #again = false;

  constructor(pass: () => Promise<void>, stopped: () => boolean, retryMs = 100) {
    this.#pass = pass;
    this.#stopped = stopped;
    this.#retryMs = retryMs;
  }

  /** Settles when no pass runs (now, or once the running ones are done). */
  get idle(): Promise<void> {
    return this.#running ?? Promise.resolve();
  }

  request(): void {
    if (this.#stopped()) return;
    if (this.#running !== undefined) {
      this.#again = true;
      return;
    }
    this.#running = (async () => {
      do {
        this.#again = false;
        try {
          await this.#pass();
        } catch {
          this.#again = true;
          await sleep(this.#retryMs);
        }
      } while (this.#again && !this.#stopped());
      this.#running = undefined;
    })();
  }
}
