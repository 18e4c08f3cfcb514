// The manager's metrics: its passes, and the proxy pods of every release it keeps (on the Lease
// holder, which is the one that looks).
import { Gauge, type Registry } from 'prom-client';
import { METRIC_PREFIX } from '../defaults.ts';
import { PassMetrics, type PassResult } from '../controller-kit/pass-metrics.ts';
import type { ProxyStatus } from '../api/proxy-types.ts';

const STATES = ['desired', 'ready', 'updated'] as const;

export class ManagerMetrics {
  readonly #passes: PassMetrics;
  /** Not labelled `namespace`: Prometheus gives every series it scrapes the manager's own namespace by that name. */
  readonly #replicas: Gauge<'release_namespace' | 'release' | 'state'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#passes = new PassMetrics({
      registry,
      prefix: `${METRIC_PREFIX}manager_`,
      passesHelp: "Reconcile passes of a CanaryRelease's proxy, by result.",
      durationHelp: 'Duration of a manager reconcile pass, API writes included.',
    });
    this.#replicas = new Gauge({
      name: `${METRIC_PREFIX}manager_proxy_replicas`,
      help: 'Proxy pods of each CanaryRelease: desired, ready, and updated (running the current template); on the Lease holder.',
      labelNames: ['release_namespace', 'release', 'state'],
      registers,
    });
  }

  /** Starts timing a pass; the returned function ends it and counts its result. */
  pass(): (result: PassResult) => void {
    return this.#passes.pass();
  }

  /** Reports no release's proxy: another manager leads. */
  forgetProxies(): void {
    this.#replicas.reset();
  }

  /** A release's proxy as status.proxy says it; null: it has none (any more). */
  proxy(namespace: string, release: string, proxy: ProxyStatus | null): void {
    for (const state of STATES) {
      const labels = { release_namespace: namespace, release, state };
      if (proxy === null) this.#replicas.remove(labels);
      else
        this.#replicas.set(
          labels,
          state === 'desired' ? proxy.replicas : state === 'ready' ? proxy.readyReplicas : proxy.updatedReplicas,
        );
    }
  }
}
