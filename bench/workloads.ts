// The main workloads: load generators (iperf3, wrk, sockperf, dnsperf), their output parsers, and
// what each workload reports. Every run is bounded in time.
import { fileURLToPath } from 'node:url';
import type { ProxyVariant, RunningProxy } from './proxies.ts';
import type { CanarySettings } from './image-settings.ts';
import { runBounded, runToCompletion } from './processes.ts';
import { dnsperf, DNSPERF_CLIENTS, sockperfAtRate, sockperfPingPong } from './udp-tools.ts';

export interface MetricSpec {
  readonly key: string;
  readonly label: string;
  readonly unit: string;
  readonly lowerIsBetter?: boolean;
}

export interface WorkloadContext {
  /** Length of one load-generator run. */
  readonly seconds: number;
  /** 0-based; lets workloads alternate the order of paired runs. */
  readonly repetition: number;
  readonly proxies: ReadonlyMap<ProxyVariant, RunningProxy | Error>;
  /** dnsperf's query file. */
  readonly dnsQueryFile: string;
}

export interface Workload {
  readonly name: string;
  /** `--only` picks a workload by its name or by its group (`footprint`: the memory figures). */
  readonly group?: string;
  readonly title: string;
  readonly metrics: readonly MetricSpec[];
  /** Record the proxy's CPU % and peak RSS over the run. */
  readonly recordsUsage: boolean;
  /** Restart the proxy first: memory measurements must not inherit an earlier run's heap. */
  readonly freshProxy?: boolean;
  /** The key of the rate that is also reported per proxy CPU-second (see perCpuSecond). */
  readonly efficiencyOf?: string;
  appliesTo(proxy: ProxyVariant): boolean;
  run(proxy: RunningProxy, context: WorkloadContext): Promise<Record<string, number>>;
}

/** A measurement that starts the canary-l4 processes it measures: no backend, load tool or proxy of run.ts. */
export interface StandaloneWorkload extends Omit<Workload, 'run' | 'freshProxy' | 'efficiencyOf'> {
  /** `root`: the checkout whose canary-l4 runs (this one, or --baseline's), with `settings`. */
  runAlone(root: string, settings: CanarySettings): Promise<Record<string, number>>;
}

export type AnyWorkload = Workload | StandaloneWorkload;

export const isStandalone = (workload: AnyWorkload): workload is StandaloneWorkload => 'runAlone' in workload;

/** The work a proxy does per second of its own CPU time: the key run.ts fills in. */
export const perCpuSecondKey = (key: string): string => `${key}PerCpuSecond`;

function perCpuSecond(key: string, unit: string): MetricSpec {
  return { key: perCpuSecondKey(key), label: 'per proxy CPU-second', unit };
}

/** Generous slack on top of a run's nominal length before its load generator is killed. */
const PROCESS_SLACK_MS = 15_000;
/** A rate nginx sustains here with little loss (sockperf under-load, one flow). */
export const UDP_FIXED_RATE_PER_SECOND = 40_000;
const WRK_CONNECTIONS = 50;
const CONNECTION_CLOSE_SCRIPT = fileURLToPath(new URL('connection-close.lua', import.meta.url));

// ---- iperf3 ---------------------------------------------------------------------------------

interface Iperf3Report {
  readonly error?: string;
  readonly end?: { readonly sum_received?: { readonly bits_per_second?: number } };
}

export function parseIperf3Gbps(json: string): number {
  const report = JSON.parse(json) as Iperf3Report;
  if (report.error !== undefined) throw new Error(`iperf3: ${report.error}`);
  const bitsPerSecond = report.end?.sum_received?.bits_per_second;
  if (bitsPerSecond === undefined) throw new Error('iperf3: no end.sum_received.bits_per_second in its -J output');
  return bitsPerSecond / 1e9;
}

async function iperf3Gbps(port: number, streams: number, seconds: number): Promise<number> {
  const args = [
    '--client',
    '127.0.0.1',
    '--port',
    String(port),
    '--time',
    String(seconds),
    '--parallel',
    String(streams),
    '--connect-timeout',
    '3000',
    '--json',
  ];
  // iperf3 -J reports its own errors as JSON on stdout and exits non-zero: parse stdout either way.
  const { exitCode, stdout, outputTail } = await runBounded('iperf3', args, seconds * 1_000 + PROCESS_SLACK_MS);
  if (!stdout.trimStart().startsWith('{'))
    throw new Error(`iperf3 failed (${exitCode ?? 'killed'}): ${outputTail.slice(-500)}`);
  return parseIperf3Gbps(stdout);
}

// ---- wrk ------------------------------------------------------------------------------------

export interface WrkResult {
  readonly requestsPerSecond: number;
  readonly p50Ms: number | undefined;
  readonly p99Ms: number | undefined;
  /** Socket errors plus non-2xx/3xx responses. */
  readonly errors: number;
}

const MS_PER_UNIT: Readonly<Record<string, number>> = { us: 0.001, ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

function wrkLatencyMs(output: string, percentile: number): number | undefined {
  const match = new RegExp(`^\\s*${percentile}%\\s+([\\d.]+)(us|ms|s|m|h)\\s*$`, 'm').exec(output);
  if (match?.[1] === undefined || match[2] === undefined) return undefined;
  return Number(match[1]) * (MS_PER_UNIT[match[2]] ?? Number.NaN);
}

export function parseWrk(output: string): WrkResult {
  const rate = /^Requests\/sec:\s+([\d.]+)/m.exec(output)?.[1];
  if (rate === undefined) throw new Error(`wrk: no Requests/sec in its output: ${output.slice(-300)}`);
  const socketErrors = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(output);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(output)?.[1];
  const errors = (socketErrors?.slice(1) ?? []).reduce((sum, count) => sum + Number(count), 0) + Number(non2xx ?? 0);
  return { requestsPerSecond: Number(rate), p50Ms: wrkLatencyMs(output, 50), p99Ms: wrkLatencyMs(output, 99), errors };
}

async function wrk(port: number, seconds: number, oneRequestPerConnection: boolean): Promise<WrkResult> {
  const args = [
    '--threads',
    '1',
    '--connections',
    String(WRK_CONNECTIONS),
    '--duration',
    `${seconds}s`,
    '--timeout',
    '2s',
    '--latency',
  ];
  if (oneRequestPerConnection) args.push('--script', CONNECTION_CLOSE_SCRIPT);
  args.push(`http://127.0.0.1:${port}/`);
  return parseWrk(await runToCompletion('wrk', args, seconds * 1_000 + PROCESS_SLACK_MS));
}

// ---- UDP ------------------------------------------------------------------------------------

function udpPort(proxy: RunningProxy, which: 'udp' | 'dns' = 'udp'): number {
  const port = proxy.ports[which];
  if (port === undefined) throw new Error(`${proxy.name} has no UDP listener`);
  return port;
}

// ---- the workloads --------------------------------------------------------------------------

const anyProxy = (): boolean => true;
/** HAProxy proxies no plain UDP (it has QUIC and syslog forwarding only). */
const udpCapable = (proxy: ProxyVariant): boolean => proxy !== 'haproxy';

function tcpBulk(streams: number): Workload {
  return {
    name: `tcp-bulk-${streams}`,
    title: `TCP bulk, ${streams} stream${streams === 1 ? '' : 's'}`,
    metrics: [{ key: 'gbps', label: 'throughput', unit: 'Gbit/s' }, perCpuSecond('gbps', 'Gbit')],
    recordsUsage: true,
    efficiencyOf: 'gbps',
    appliesTo: anyProxy,
    run: async (proxy, { seconds }) => ({ gbps: await iperf3Gbps(proxy.ports.bulk, streams, seconds) }),
  };
}

export const tcpBulk1 = tcpBulk(1);
export const tcpBulk8 = tcpBulk(8);

export const tcpShort: Workload = {
  name: 'tcp-short',
  title: 'Short connections (HTTP, Connection: close)',
  metrics: [
    { key: 'connectionsPerSecond', label: 'rate', unit: 'conn/s' },
    perCpuSecond('connectionsPerSecond', 'conn'),
  ],
  recordsUsage: true,
  efficiencyOf: 'connectionsPerSecond',
  appliesTo: anyProxy,
  run: async (proxy, { seconds }) => {
    const result = await wrk(proxy.ports.http, seconds, true);
    return { connectionsPerSecond: result.requestsPerSecond, errors: result.errors };
  },
};

export const httpKeepalive: Workload = {
  name: 'http-keepalive',
  title: `Keep-alive HTTP, ${WRK_CONNECTIONS} connections`,
  metrics: [
    { key: 'requestsPerSecond', label: 'rate', unit: 'req/s' },
    { key: 'p50Ms', label: 'p50 latency', unit: 'ms', lowerIsBetter: true },
    { key: 'p99Ms', label: 'p99 latency', unit: 'ms', lowerIsBetter: true },
    perCpuSecond('requestsPerSecond', 'req'),
  ],
  recordsUsage: true,
  efficiencyOf: 'requestsPerSecond',
  appliesTo: anyProxy,
  run: async (proxy, { seconds }) => {
    const result = await wrk(proxy.ports.http, seconds, false);
    return {
      requestsPerSecond: result.requestsPerSecond,
      p50Ms: result.p50Ms ?? Number.NaN,
      p99Ms: result.p99Ms ?? Number.NaN,
      errors: result.errors,
    };
  },
};

export const udpRoundTrips: Workload = {
  name: 'udp-roundtrips',
  title: 'UDP round trips, one flow (sockperf ping-pong)',
  metrics: [
    { key: 'roundTripsPerSecond', label: 'rate', unit: 'round trips/s' },
    { key: 'p99Us', label: 'p99 latency', unit: 'µs', lowerIsBetter: true },
    perCpuSecond('roundTripsPerSecond', 'round trips'),
  ],
  recordsUsage: true,
  efficiencyOf: 'roundTripsPerSecond',
  appliesTo: udpCapable,
  run: async (proxy, { seconds }) => {
    const result = await sockperfPingPong(udpPort(proxy), seconds);
    return { roundTripsPerSecond: result.roundTripsPerSecond, p99Us: result.p99Us ?? Number.NaN };
  },
};

export const udpLoss: Workload = {
  name: 'udp-loss',
  title: `UDP at a fixed ${UDP_FIXED_RATE_PER_SECOND.toLocaleString('en-US')}/s, one flow (sockperf under-load)`,
  metrics: [{ key: 'lossPercent', label: 'loss', unit: '%', lowerIsBetter: true }],
  recordsUsage: true,
  appliesTo: udpCapable,
  run: async (proxy, { seconds }) => {
    const result = await sockperfAtRate(udpPort(proxy), seconds, UDP_FIXED_RATE_PER_SECOND);
    return { lossPercent: result.lossPercent };
  },
};

export const dnsQueries: Workload = {
  name: 'dns',
  title: `DNS queries to knot, ${DNSPERF_CLIENTS} client sockets (dnsperf)`,
  metrics: [
    { key: 'queriesPerSecond', label: 'rate', unit: 'queries/s' },
    { key: 'lostPercent', label: 'lost', unit: '%', lowerIsBetter: true },
    perCpuSecond('queriesPerSecond', 'queries'),
  ],
  recordsUsage: true,
  efficiencyOf: 'queriesPerSecond',
  appliesTo: udpCapable,
  run: async (proxy, { seconds, dnsQueryFile }) => {
    const result = await dnsperf(udpPort(proxy, 'dns'), seconds, dnsQueryFile);
    return { queriesPerSecond: result.queriesPerSecond, lostPercent: result.lostPercent };
  },
};

export const MAIN_WORKLOADS: readonly Workload[] = [
  tcpBulk1,
  tcpBulk8,
  tcpShort,
  httpKeepalive,
  udpRoundTrips,
  udpLoss,
  dnsQueries,
];
