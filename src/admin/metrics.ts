// Prometheus exposition of the data plane's plain counters, read at scrape time (see
// dataplane/stats.ts for why they are not prom-client metrics on the hot path).
import client, { Registry } from 'prom-client';
import { METRIC_PREFIX } from '../defaults.ts';
import { DURATION_BUCKETS, type BackendStats, type DurationHistogram, type ListenerStats, type StatsRegistry } from '../dataplane/stats.ts';
import type { BackendState } from '../dataplane/dataplane.ts';
import type { DescriptorBudget } from '../dataplane/descriptor-budget.ts';

type Labels = Record<string, string>;
interface Sample {
  labels: Labels;
  value: number;
  metricName?: string;
}

/**
 * A metric whose samples are computed on each scrape. `aggregator` says how `--workers`
 * processes combine: counters add up, a weight is the same everywhere, health is the worst.
 */
function scraped(
  registry: Registry,
  name: string,
  help: string,
  type: 'counter' | 'gauge' | 'histogram',
  collect: () => Sample[],
  aggregator: 'sum' | 'max' | 'min' = 'sum',
): void {
  const fullName = METRIC_PREFIX + name;
  const metric = {
    name: fullName,
    help,
    type,
    aggregator,
    get: () => ({ name: fullName, help, type, aggregator, values: collect() }),
  };
  registry.registerMetric(metric as unknown as client.Metric);
}

function histogramSamples(name: string, labels: Labels, histogram: DurationHistogram): Sample[] {
  const samples: Sample[] = [];
  let cumulative = 0;
  for (let i = 0; i < DURATION_BUCKETS.length; i++) {
    cumulative += histogram.counts[i]!;
    samples.push({ metricName: `${name}_bucket`, labels: { ...labels, le: String(DURATION_BUCKETS[i]) }, value: cumulative });
  }
  samples.push({ metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: histogram.count });
  samples.push({ metricName: `${name}_sum`, labels, value: histogram.sum });
  samples.push({ metricName: `${name}_count`, labels, value: histogram.count });
  return samples;
}

export interface MetricsSources {
  readonly stats: StatsRegistry;
  /** Whether this process counts config reloads (in `--workers` mode the primary does). */
  readonly reloads: boolean;
  /** Weight and health of every backend of the running config. */
  readonly backendStates: () => BackendState[];
  readonly descriptors: Pick<DescriptorBudget, 'capacity' | 'inUse'>;
  /** Bytes of read buffers the open TCP connections hold. */
  readonly readBufferBytes: () => number;
}

export function createMetricsRegistry(sources: MetricsSources, options: { processMetrics: boolean }): Registry {
  const registry = new Registry();
  if (options.processMetrics) client.collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  const { stats } = sources;

  const perBackend = (value: (b: BackendStats) => number, extra: Labels = {}) => () => {
    const samples: Sample[] = [];
    for (const [listener, backends] of stats.backends)
      for (const [backend, s] of backends) samples.push({ labels: { listener, backend, ...extra }, value: value(s) });
    return samples;
  };
  const perListener = <K extends string>(record: (l: ListenerStats) => Record<K, number>) => () => {
    const samples: Sample[] = [];
    for (const [listener, s] of stats.listeners)
      for (const [reason, value] of Object.entries(record(s)) as [K, number][]) samples.push({ labels: { listener, reason }, value });
    return samples;
  };

  scraped(registry, 'listener_connections_total', 'Client TCP connections accepted and UDP sessions requested, per listener.', 'counter', () =>
    [...stats.listeners].map(([listener, s]) => ({ labels: { listener }, value: s.accepted })),
  );
  scraped(
    registry,
    'connections_refused_total',
    'New connections refused, by reason (no_backend: all weights 0 or every backend failed; fd_limit: the descriptor budget is spent; local_error: the system refused a socket).',
    'counter',
    perListener((s) => s.refused),
  );
  scraped(registry, 'backend_connections_total', 'TCP connections established (and UDP sessions opened) to each backend.', 'counter', perBackend((s) => s.connections));
  scraped(registry, 'active_connections', 'Open TCP connections and live UDP sessions, per backend.', 'gauge', perBackend((s) => s.active));
  scraped(registry, 'bytes_total', 'Bytes proxied, per backend and direction.', 'counter', () => [
    ...perBackend((s) => s.bytesToBackend, { direction: 'to_backend' })(),
    ...perBackend((s) => s.bytesToClient, { direction: 'to_client' })(),
  ]);
  scraped(registry, 'connect_errors_total', 'Failed backend connects (TCP) or refused UDP sessions, by reason.', 'counter', () => {
    const samples: Sample[] = [];
    for (const [listener, backends] of stats.backends)
      for (const [backend, s] of backends)
        for (const [reason, value] of Object.entries(s.connectErrors)) samples.push({ labels: { listener, backend, reason }, value });
    return samples;
  });
  scraped(
    registry,
    'backend_failures_total',
    'Established connections counted against the backend\'s health, by reason (reset before its first byte with failOnReset; no byte within firstByteTimeoutMs).',
    'counter',
    () => {
      const samples: Sample[] = [];
      for (const [listener, backends] of stats.backends)
        for (const [backend, s] of backends)
          for (const [reason, value] of Object.entries(s.failures)) samples.push({ labels: { listener, backend, reason }, value });
      return samples;
    },
  );
  for (const [name, help, pick] of [
    ['connect_duration_seconds', 'Time to connect to the backend.', (s: BackendStats) => s.connectDuration],
    ['session_duration_seconds', 'Lifetime of proxied TCP connections and UDP sessions.', (s: BackendStats) => s.sessionDuration],
  ] as const) {
    scraped(registry, name, help, 'histogram', () => {
      const samples: Sample[] = [];
      for (const [listener, backends] of stats.backends)
        for (const [backend, s] of backends) samples.push(...histogramSamples(METRIC_PREFIX + name, { listener, backend }, pick(s)));
      return samples;
    });
  }
  scraped(registry, 'udp_datagrams_total', 'UDP datagrams proxied, per backend and direction.', 'counter', () => [
    ...perBackend((s) => s.datagramsToBackend, { direction: 'to_backend' })(),
    ...perBackend((s) => s.datagramsToClient, { direction: 'to_client' })(),
  ]);
  scraped(registry, 'udp_dropped_datagrams_total', 'UDP datagrams dropped, by reason (fd_limit, local_error: no socket for a new session).', 'counter', perListener((s) => s.udpDropped));
  scraped(registry, 'descriptor_budget', 'File descriptors listeners, connections and UDP sessions may hold: the open-file limit less what the process and the admin server keep.', 'gauge', () => [
    { labels: {}, value: sources.descriptors.capacity },
  ]);
  scraped(registry, 'read_buffer_bytes', 'Bytes of read buffers held by open TCP connections (let go of once a connection idles).', 'gauge', () => [
    { labels: {}, value: sources.readBufferBytes() },
  ]);
  scraped(registry, 'descriptors_in_use', 'File descriptors held by listeners, connections and UDP sessions.', 'gauge', () => [
    { labels: {}, value: sources.descriptors.inUse },
  ]);
  scraped(registry, 'backend_weight', 'Configured weight of each backend of the running config.', 'gauge', () =>
    sources.backendStates().map((b) => ({ labels: { listener: b.listener, backend: b.backend }, value: b.weight })),
    'max',
  );
  scraped(registry, 'backend_healthy', '1 unless passive health checks took the backend out of rotation.', 'gauge', () =>
    sources.backendStates().map((b) => ({ labels: { listener: b.listener, backend: b.backend }, value: b.healthy ? 1 : 0 })),
    'min',
  );
  if (sources.reloads) registerReloadMetrics(registry, stats);
  return registry;
}

/** Config reload outcomes: a failed reload leaves the previous config serving, so it needs an alert. */
export function registerReloadMetrics(
  registry: Registry,
  stats: Pick<StatsRegistry, 'reloadsSucceeded' | 'reloadsFailed' | 'reloadsUnchanged' | 'lastReloadSuccessSeconds'>,
): void {
  scraped(
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
  scraped(registry, 'config_last_reload_success_timestamp_seconds', 'When the running config was applied.', 'gauge', () => [
    { labels: {}, value: stats.lastReloadSuccessSeconds },
  ]);
}
