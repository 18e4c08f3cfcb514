// An in-process data plane for tests: a DataPlane with its counters, a silent logger, configs
// validated exactly as a file would be, and the Prometheus view of the counters.
import pino from 'pino';
import { validateConfig } from '../../../src/config/validate.ts';
import { DataPlane, type DataPlaneOptions } from '../../../src/dataplane/dataplane.ts';
import { StatsRegistry, type BackendStats, type ListenerStats } from '../../../src/dataplane/stats/stats.ts';
import { metricsEndpoint } from '../../../src/admin/metrics.ts';
import { freePort } from '../net/free-ports.ts';

export const silentLog = pino({ level: 'silent' });

export interface TestPlane {
  readonly dataplane: DataPlane;
  readonly stats: StatsRegistry;
  /** Validates (defaults filled) and applies a raw config document; false when it equals the running one. */
  apply(raw: unknown): Promise<boolean>;
  listener(name: string): ListenerStats;
  backend(listener: string, backend: string): BackendStats;
  /** The Prometheus exposition of the counters, as /metrics would serve it (no process metrics). */
  metrics(): Promise<string>;
  close(graceMs?: number): Promise<void>;
}

/**
 * Every apply replaces the whole config, so a test's listener is removed (and drained for
 * listenerGraceMs) when the next test applies its own: keep the grace short unless a test is about it.
 */
export function createPlane(
  listenerGraceMs = 200,
  options: Pick<DataPlaneOptions, 'idleBufferSweepMs'> = {},
): TestPlane {
  const stats = new StatsRegistry();
  // As the CLI reads it: test/dataplane/tcp/net-path.test.ts runs the TCP tests again with it false.
  const tcpFastPath = process.env.CANARY_L4_TCP_FAST_PATH !== 'false';
  const dataplane = new DataPlane({ log: silentLog, stats, listenerGraceMs, tcpFastPath, ...options });
  const endpoint = metricsEndpoint(async () => '', dataplane);
  return {
    dataplane,
    stats,
    apply: (raw) => dataplane.apply(validateConfig(raw, 'test config')),
    listener: (name) => stats.listener(name),
    backend: (listener, backend) => stats.backend(listener, backend),
    metrics: async () => {
      let text = '';
      for await (const chunk of endpoint.render()) text += chunk;
      return text;
    },
    close: (graceMs = 0) => dataplane.shutdown(graceMs),
  };
}

/**
 * Applies a config built around a fresh proxy port, retrying with another port when a parallel
 * test grabbed it between the probe and the bind. Resolves with the port.
 */
export async function applyOnFreePort(
  plane: TestPlane,
  build: (port: number) => unknown,
  host = '127.0.0.1',
  protocol: 'tcp' | 'udp' = 'tcp',
): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort(host, protocol);
    try {
      await plane.apply(build(port));
      return port;
    } catch (err) {
      if (attempt >= 5 || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    }
  }
}

/** A value of one sample in a Prometheus exposition, or undefined when there is no such sample. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const sampleLabels = new Map<string, string>();
    for (const pair of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) sampleLabels.set(pair[1]!, pair[2]!);
    if (Object.entries(labels).every(([key, value]) => sampleLabels.get(key) === value)) return Number(match[3]);
  }
  return undefined;
}
