// The UDP and DNS load tools and their output parsers: sockperf (ping-pong for round trips,
// under-load at a fixed rate for loss) and dnsperf. Compiled tools made for the job, so the load
// generator is never the slower side (a Node client was, and made every proxy look alike).
import { runToCompletion } from './processes.ts';

/** sockperf's message size: a small datagram, like a DNS query or a metrics packet. */
const SOCKPERF_MESSAGE_BYTES = 64;
/** dnsperf client sockets: ten flows, so that a 90/10 split has something to split. */
export const DNSPERF_CLIENTS = 10;
const PROCESS_SLACK_MS = 15_000;

export interface SockperfResult {
  /** Round trips per second over sockperf's valid duration (its warm-up excluded). */
  readonly roundTripsPerSecond: number;
  readonly sent: number;
  readonly received: number;
  readonly lossPercent: number;
  readonly p50Us: number | undefined;
  readonly p99Us: number | undefined;
}

export function parseSockperf(output: string): SockperfResult {
  const valid = /\[Valid Duration\] RunTime=([\d.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)/.exec(output);
  if (valid === null) throw new Error(`sockperf: no "Valid Duration" line in its output: ${output.slice(-400)}`);
  const [runTime, sent, received] = [Number(valid[1]), Number(valid[2]), Number(valid[3])];
  const percentile = (p: string) => {
    const match = new RegExp(`percentile ${p} =\\s+([\\d.]+)`).exec(output);
    return match?.[1] === undefined ? undefined : Number(match[1]);
  };
  return {
    roundTripsPerSecond: received / runTime,
    sent,
    received,
    lossPercent: sent === 0 ? 100 : (100 * Math.max(0, sent - received)) / sent,
    p50Us: percentile('50.000'),
    p99Us: percentile('99.000'),
  };
}

/** One flow, one datagram in flight: each reply sends the next. */
export async function sockperfPingPong(port: number, seconds: number): Promise<SockperfResult> {
  const args = [
    'ping-pong',
    '-i',
    '127.0.0.1',
    '-p',
    String(port),
    '-t',
    String(seconds),
    '-m',
    String(SOCKPERF_MESSAGE_BYTES),
  ];
  return parseSockperf(await runToCompletion('sockperf', args, seconds * 1_000 + PROCESS_SLACK_MS));
}

/** One flow at `perSecond` datagrams a second, each answered: what does not come back was lost. */
export async function sockperfAtRate(port: number, seconds: number, perSecond: number): Promise<SockperfResult> {
  const args = [
    'under-load',
    '-i',
    '127.0.0.1',
    '-p',
    String(port),
    '-t',
    String(seconds),
    '-m',
    String(SOCKPERF_MESSAGE_BYTES),
    '--mps',
    String(perSecond),
    '--reply-every',
    '1',
  ];
  return parseSockperf(await runToCompletion('sockperf', args, seconds * 1_000 + PROCESS_SLACK_MS));
}

export interface DnsperfResult {
  readonly queriesPerSecond: number;
  readonly lostPercent: number;
  readonly averageLatencyMs: number;
}

export function parseDnsperf(output: string): DnsperfResult {
  const qps = /Queries per second:\s+([\d.]+)/.exec(output)?.[1];
  if (qps === undefined) throw new Error(`dnsperf: no "Queries per second" in its output: ${output.slice(-400)}`);
  const lost = /Queries lost:\s+\d+ \(([\d.]+)%\)/.exec(output)?.[1];
  const latency = /Average Latency \(s\):\s+([\d.]+)/.exec(output)?.[1];
  return {
    queriesPerSecond: Number(qps),
    lostPercent: Number(lost ?? Number.NaN),
    averageLatencyMs: Number(latency ?? Number.NaN) * 1_000,
  };
}

/** dnsperf's default: as fast as answers come, up to 100 queries outstanding, over DNSPERF_CLIENTS sockets. */
export async function dnsperf(port: number, seconds: number, queryFile: string): Promise<DnsperfResult> {
  const args = [
    '-s',
    '127.0.0.1',
    '-p',
    String(port),
    '-d',
    queryFile,
    '-l',
    String(seconds),
    '-c',
    String(DNSPERF_CLIENTS),
  ];
  return parseDnsperf(await runToCompletion('dnsperf', args, seconds * 1_000 + PROCESS_SLACK_MS));
}
