// The extra measurements: memory per idle TCP connection and UDP session (connection-cost.ts), memory under a slow reader, and what
// canary-l4's metrics and UDP mirroring cost. Each is a workload of its own, selectable with --only.
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CANARY_METRICS_URL,
  CANARY_MIRROR,
  CANARY_NO_METRICS,
  type CanaryVariant,
  type ProxyVariant,
  type RunningProxy,
} from './proxies.ts';
import { treeRssKiB } from './proc-usage.ts';
import {
  dnsQueries,
  httpKeepalive,
  tcpBulk8,
  tcpShort,
  udpRoundTrips,
  type Workload,
  type WorkloadContext,
} from './workloads.ts';
import { bigConfigStalls } from './stalls.ts';
import { connectionCost } from './connection-cost.ts';

/** Lets the proxy close what the workload opened before the next measurement starts. */
const TEARDOWN_MS = 300;
const SLOW_READERS = 20;
const SLOW_READ_INTERVAL_MS = 100;
/** A proxy that ignores backpressure would eat the machine: stop the workload beyond this. */
const SLOW_READER_RSS_LIMIT_KIB = 2 * 1024 * 1024;

const KIB_PER_MIB = 1024;
const realProxy = (proxy: ProxyVariant): boolean => proxy !== 'direct';

function requirePid(proxy: RunningProxy): number {
  if (proxy.pid === undefined) throw new Error(`${proxy.name} has no process to measure`);
  return proxy.pid;
}

/** A client that asks for an endless body and then reads one chunk per interval. */
function slowReader(port: number, onBytes: (count: number) => void): Socket {
  const socket = connect({ host: '127.0.0.1', port }, () => {
    socket.write('GET /stream HTTP/1.1\r\nHost: bench\r\n\r\n');
  });
  socket.on('error', () => {});
  socket.on('data', (chunk: Buffer) => {
    onBytes(chunk.length);
    socket.pause();
  });
  const resumeTimer = setInterval(() => socket.resume(), SLOW_READ_INTERVAL_MS);
  socket.on('close', () => clearInterval(resumeTimer));
  return socket;
}

export const slowReaders: Workload = {
  name: 'slow-reader-rss',
  title: `${SLOW_READERS} slow readers of an endless download`,
  metrics: [
    { key: 'peakRssMiB', label: 'peak RSS', unit: 'MiB', lowerIsBetter: true },
    { key: 'growthMiB', label: 'growth over idle', unit: 'MiB', lowerIsBetter: true },
    { key: 'readMiBPerSecond', label: 'read by the clients', unit: 'MiB/s' },
  ],
  recordsUsage: false,
  freshProxy: true,
  appliesTo: realProxy,
  run: async (proxy, { seconds }) => {
    const pid = requirePid(proxy);
    const rssBefore = treeRssKiB(pid);
    let peakRss = rssBefore;
    let bytesRead = 0;
    const readers = Array.from({ length: SLOW_READERS }, () =>
      slowReader(proxy.ports.http, (count) => (bytesRead += count)),
    );
    const startedAt = performance.now();
    try {
      while (performance.now() - startedAt < seconds * 1_000) {
        await sleep(250);
        peakRss = Math.max(peakRss, treeRssKiB(pid));
        if (peakRss > SLOW_READER_RSS_LIMIT_KIB) break;
      }
    } finally {
      for (const reader of readers) reader.destroy();
    }
    const elapsed = (performance.now() - startedAt) / 1_000;
    await sleep(TEARDOWN_MS);
    return {
      peakRssMiB: peakRss / KIB_PER_MIB,
      growthMiB: (peakRss - rssBefore) / KIB_PER_MIB,
      readMiBPerSecond: bytesRead / KIB_PER_MIB / KIB_PER_MIB / elapsed,
    };
  },
};

/** Prometheus scrapes every 15–60 s; once a second is the pessimistic case. */
const SCRAPE_INTERVAL_MS = 1_000;

/** Runs `work` while scraping the metrics endpoint as Prometheus would. */
async function whileScraped<T>(work: () => Promise<T>): Promise<T> {
  const timer = setInterval(() => {
    fetch(CANARY_METRICS_URL).then(
      (res) => res.arrayBuffer(),
      () => undefined,
    );
  }, SCRAPE_INTERVAL_MS);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}

/** Which of the pair has the feature whose cost is measured: the plain canary-l4, or the variant. */
type FeatureIn = 'canary-l4' | 'variant';

/**
 * With the feature ÷ without, on each of `workloads`: canary-l4 and its `other` variant measured
 * back to back, alternating which goes first per repetition. `around` wraps the runs of the one
 * with the feature (a scrape while it runs).
 */
function pairedRatios(
  name: string,
  title: string,
  other: CanaryVariant,
  featureIn: FeatureIn,
  workloads: readonly Workload[],
  around: <T>(work: () => Promise<T>) => Promise<T> = (work) => work(),
): Workload {
  return {
    name,
    title,
    metrics: workloads.map((workload) => ({
      key: workload.name,
      label: `${workload.title}: ${workload.metrics[0]?.label ?? ''}`,
      unit: '×',
    })),
    recordsUsage: false,
    appliesTo: (proxy) => proxy === 'canary-l4',
    run: async (canary, context: WorkloadContext) => {
      const variant = context.proxies.get(other);
      if (variant === undefined) throw new Error(`${other} was not started`);
      if (variant instanceof Error) throw new Error(`${other} failed to start: ${variant.message}`);
      const [numerator, denominator] = featureIn === 'variant' ? [variant, canary] : [canary, variant];
      const ratios: Record<string, number> = {};
      for (const workload of workloads) {
        const key = workload.metrics[0]?.key ?? '';
        const pair = context.repetition % 2 === 0 ? [numerator, denominator] : [denominator, numerator];
        const values = new Map<RunningProxy, number>();
        for (const proxy of pair) {
          const run = () => workload.run(proxy, context);
          const result = proxy === numerator ? await around(run) : await run();
          values.set(proxy, result[key] ?? Number.NaN);
        }
        ratios[workload.name] = (values.get(numerator) ?? Number.NaN) / (values.get(denominator) ?? Number.NaN);
      }
      return ratios;
    },
  };
}

/**
 * Metrics on (and scraped) ÷ off. Off means no endpoint and no process-metrics sampling; the data
 * plane's counters are plain additions in both.
 */
export const metricsCost = pairedRatios(
  'metrics-cost',
  'canary-l4 metrics on ÷ --no-metrics (1 = free)',
  CANARY_NO_METRICS,
  'canary-l4',
  [tcpBulk8, tcpShort, httpKeepalive, udpRoundTrips],
  whileScraped,
);

/** Every UDP flow mirrored (a second upstream socket, every datagram sent twice, replies compared) ÷ no mirror. */
export const mirrorCost = pairedRatios(
  'mirror-cost',
  'canary-l4 with 100 % UDP mirroring ÷ without (1 = free)',
  CANARY_MIRROR,
  'variant',
  [udpRoundTrips, dnsQueries],
);

export const EXTRA_WORKLOADS: readonly Workload[] = [
  connectionCost,
  slowReaders,
  metricsCost,
  mirrorCost,
  bigConfigStalls,
];
