// What /metrics serves: the prom-client registry (process metrics, config reloads, and whatever
// the control loop registers) followed by the data plane's counters, which are plain numbers on
// the hot path (see dataplane/stats/stats.ts) and rendered at scrape time, in slices (exposition.ts).
import client, { Registry } from 'prom-client';
import { METRIC_PREFIX } from '../defaults.ts';
import type { StatsRegistry } from '../dataplane/stats/stats.ts';
import { renderDataPlane, type DataPlaneView } from './exposition.ts';

export interface MetricsEndpoint {
  readonly contentType: string;
  /** The whole exposition, as chunks of text. */
  render(): AsyncIterable<string>;
}

/** The prom-client registry of a process; with process metrics unless `--no-metrics`. */
export function createRegistry(options: { processMetrics: boolean }): Registry {
  const registry = new Registry();
  if (options.processMetrics) client.collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  return registry;
}

/** `before` (small: prom-client's registries) first, then the data plane's families from `view`. */
export function metricsEndpoint(before: () => Promise<string>, view: DataPlaneView): MetricsEndpoint {
  return {
    contentType: Registry.PROMETHEUS_CONTENT_TYPE,
    async *render() {
      yield await before();
      yield* renderDataPlane(view);
    },
  };
}

/** Config reload outcomes: a failed reload leaves the previous config serving, so it needs an alert. */
export function registerReloadMetrics(
  registry: Registry,
  stats: Pick<StatsRegistry, 'reloadsSucceeded' | 'reloadsFailed' | 'reloadsUnchanged' | 'lastReloadSuccessSeconds'>,
): void {
  computed(
    registry,
    'config_reloads_total',
    'Config reloads, by result (a failed one leaves the previous config serving; unchanged: equal to the one served, nothing applied).',
    'counter',
    () => [
      { labels: { result: 'success' }, value: stats.reloadsSucceeded },
      { labels: { result: 'failure' }, value: stats.reloadsFailed },
      { labels: { result: 'unchanged' }, value: stats.reloadsUnchanged },
    ],
  );
  computed(
    registry,
    'config_last_reload_success_timestamp_seconds',
    'When the running config was applied.',
    'gauge',
    () => [{ labels: {}, value: stats.lastReloadSuccessSeconds }],
  );
}

/** A prom-client metric whose samples are read from plain numbers on each scrape. */
function computed(
  registry: Registry,
  name: string,
  help: string,
  type: 'counter' | 'gauge',
  collect: () => { labels: Record<string, string>; value: number }[],
): void {
  const fullName = METRIC_PREFIX + name;
  const metric = {
    name: fullName,
    help,
    type,
    aggregator: 'sum',
    get: () => ({ name: fullName, help, type, aggregator: 'sum', values: collect() }),
  };
  registry.registerMetric(metric as unknown as client.Metric);
}
