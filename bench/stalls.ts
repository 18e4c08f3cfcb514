// How long canary-l4 stands still while it serves a big config: a /metrics scrape, a reload that
// changes every weight, and a reload of a file that does not validate, at 1 000 and 10 000
// listeners. Two views of each event: the worst delay of the process's own event loop (prom-client's
// nodejs_eventloop_lag_max_seconds, which restarts at every collection, read just before and just
// after the event), and the worst round trip of a probe client sending keep-alive requests one after
// the other through one more listener (what traffic sees, CPU contention included). An idle window
// gives the floor of both. canary-l4 only: nginx and HAProxy reload in other processes.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BACKEND_PORTS } from './backends.ts';
import { PROJECT_NODE, PROJECT_ROOT } from './paths.ts';
import { httpOk, startChild, waitFor, type Child } from './processes.ts';
import type { MetricSpec, Workload } from './workloads.ts';

const SIZES = [1_000, 10_000] as const;
/** The big listeners' addresses: an address of their own, so they clash with no other port. */
const LISTEN_HOST = '127.0.5.1';
const FIRST_LISTEN_PORT = 20_000;
const PROBE_PORT = 18_600;
const ADMIN_PORT = 18_690;
/** 10 000 listeners take seconds to parse and bind. */
const READY_TIMEOUT_MS = 120_000;
const EVENT_TIMEOUT_MS = 120_000;
const IDLE_WINDOW_MS = 1_000;

type Weights = readonly [number, number];

function bigConfig(listeners: number, [stable, canary]: Weights, lastWeightOverride?: number): string {
  const backends = (a: number, b: number) => [
    { name: 'a', host: '127.0.0.1', port: BACKEND_PORTS.httpA, weight: a },
    { name: 'b', host: '127.0.0.1', port: BACKEND_PORTS.httpB, weight: b },
  ];
  const big = Array.from({ length: listeners }, (_, i) => ({
    name: `big-${i}`,
    listen: `${LISTEN_HOST}:${FIRST_LISTEN_PORT + i}`,
    backends: backends(i === listeners - 1 && lastWeightOverride !== undefined ? lastWeightOverride : stable, canary),
  }));
  const probe = { name: 'probe', listen: `127.0.0.1:${PROBE_PORT}`, backends: backends(90, 10) };
  return `${JSON.stringify({ listeners: [probe, ...big] }, null, 2)}\n`;
}

interface RoundTrip {
  readonly startedAt: number;
  readonly endedAt: number;
}

/** Keep-alive GETs one after the other through the probe listener, each round trip recorded. */
class Probe {
  readonly trips: RoundTrip[] = [];
  readonly #socket: Socket;
  #running = true;

  constructor(port: number) {
    this.#socket = connect({ host: '127.0.0.1', port, noDelay: true });
    this.#socket.on('error', () => (this.#running = false));
    this.#socket.once('connect', () => this.#next());
  }

  /** The worst round trip of those under way between `from` and `to` (waits for the last to end). */
  async worstBetween(from: number, to: number): Promise<number> {
    const deadline = Date.now() + EVENT_TIMEOUT_MS;
    while (this.#running && !this.trips.some((trip) => trip.startedAt > to) && Date.now() < deadline) await sleep(5);
    const during = this.trips.filter((trip) => trip.endedAt >= from && trip.startedAt <= to);
    return Math.max(0, ...during.map((trip) => trip.endedAt - trip.startedAt));
  }

  stop(): void {
    this.#running = false;
    this.#socket.destroy();
  }

  #next(): void {
    if (!this.#running) return;
    const startedAt = performance.now();
    let received = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const headerEnd = received.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(received.subarray(0, Math.max(0, headerEnd)).toString())?.[1];
      if (headerEnd === -1 || length === undefined || received.length < headerEnd + 4 + Number(length)) return;
      this.#socket.off('data', onData);
      this.trips.push({ startedAt, endedAt: performance.now() });
      this.#next();
    };
    this.#socket.on('data', onData);
    this.#socket.write('GET / HTTP/1.1\r\nHost: bench\r\n\r\n');
  }
}

/**
 * The process's worst event-loop delay since the previous call (prom-client restarts the measure
 * at every collection). The registry comes first in /metrics, so the rest is not waited for.
 */
async function eventLoopMaxMs(): Promise<number> {
  const abort = new AbortController();
  const response = await fetch(`http://127.0.0.1:${ADMIN_PORT}/metrics`, { signal: abort.signal });
  let text = '';
  try {
    for await (const chunk of response.body ?? []) {
      text += Buffer.from(chunk as Uint8Array).toString();
      const match = /^canary_l4_nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text);
      if (match !== null) return Number(match[1]) * 1_000;
    }
  } finally {
    abort.abort();
  }
  throw new Error('no canary_l4_nodejs_eventloop_lag_max_seconds in /metrics');
}

interface Stall {
  /** The process's own worst event-loop delay. */
  readonly loopMs: number;
  /** The probe's worst round trip. */
  readonly probeMs: number;
  readonly seconds: number;
}

/** Runs `event`; resolves with the worst stalls during it and how long it took. */
async function stallDuring(probe: Probe, event: () => Promise<void>): Promise<Stall> {
  await eventLoopMaxMs();
  const from = performance.now();
  await event();
  const to = performance.now();
  const loopMs = await eventLoopMaxMs();
  return { loopMs, probeMs: await probe.worstBetween(from, to), seconds: (to - from) / 1_000 };
}

function logLineCount(lines: string[], message: string): number {
  return lines.filter((line) => line.includes(`"msg":"${message}`)).length;
}

async function measureAt(listeners: number): Promise<Record<string, number>> {
  const dir = mkdtempSync(join(tmpdir(), 'canary-l4-bench-stalls-'));
  const configPath = join(dir, 'big.json');
  writeFileSync(configPath, bigConfig(listeners, [90, 10]));
  const child: Child = startChild(
    `canary-l4 with ${listeners} listeners`,
    PROJECT_NODE,
    [
      '--max-semi-space-size=2',
      'src/cli/main.ts',
      'serve',
      '--config',
      configPath,
      '--admin-address',
      '127.0.0.1',
      '--admin-port',
      String(ADMIN_PORT),
      '--no-watch',
      '--drain-timeout',
      '1',
    ],
    PROJECT_ROOT,
  );
  const lines: string[] = [];
  child.process.stdout?.on('data', (chunk: Buffer) => lines.push(...chunk.toString().split('\n')));
  let probe: Probe | undefined;
  try {
    await waitFor(
      `${listeners} listeners ready`,
      () => httpOk(`http://127.0.0.1:${ADMIN_PORT}/readyz`),
      child,
      READY_TIMEOUT_MS,
    );
    probe = new Probe(PROBE_PORT);
    const idle = await stallDuring(probe, () => sleep(IDLE_WINDOW_MS));

    let scrapeBytes = 0;
    const scrape = await stallDuring(probe, async () => {
      const response = await fetch(`http://127.0.0.1:${ADMIN_PORT}/metrics`);
      for await (const chunk of response.body ?? []) scrapeBytes += (chunk as Uint8Array).length;
    });

    const reloadWith = (text: string, done: string) => async () => {
      const before = logLineCount(lines, done);
      writeFileSync(configPath, text);
      child.process.kill('SIGHUP');
      await waitFor(
        `"${done}" after a reload`,
        async () => logLineCount(lines, done) > before,
        child,
        EVENT_TIMEOUT_MS,
      );
    };
    const reload = await stallDuring(probe, reloadWith(bigConfig(listeners, [80, 20]), 'config reloaded'));
    const invalid = await stallDuring(probe, reloadWith(bigConfig(listeners, [80, 20], 101), 'config reload refused'));
    return {
      idleLoopMs: idle.loopMs,
      idleProbeMs: idle.probeMs,
      scrapeLoopMs: scrape.loopMs,
      scrapeProbeMs: scrape.probeMs,
      scrapeSeconds: scrape.seconds,
      scrapeMiB: scrapeBytes / 1024 / 1024,
      reloadLoopMs: reload.loopMs,
      reloadProbeMs: reload.probeMs,
      reloadSeconds: reload.seconds,
      invalidReloadLoopMs: invalid.loopMs,
      invalidReloadProbeMs: invalid.probeMs,
      invalidReloadSeconds: invalid.seconds,
    };
  } finally {
    probe?.stop();
    await child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const sizeLabel = (listeners: number) => `${listeners.toLocaleString('en-US')} listeners`;
const PER_SIZE: readonly MetricSpec[] = [
  { key: 'idleLoopMs', label: 'idle: worst event-loop stall', unit: 'ms', lowerIsBetter: true },
  { key: 'idleProbeMs', label: 'idle: worst probe round trip', unit: 'ms', lowerIsBetter: true },
  { key: 'scrapeLoopMs', label: '/metrics scrape: worst event-loop stall', unit: 'ms', lowerIsBetter: true },
  { key: 'scrapeProbeMs', label: '/metrics scrape: worst probe round trip', unit: 'ms', lowerIsBetter: true },
  { key: 'scrapeSeconds', label: '/metrics scrape: took', unit: 's', lowerIsBetter: true },
  { key: 'scrapeMiB', label: '/metrics scrape: size', unit: 'MiB', lowerIsBetter: true },
  {
    key: 'reloadLoopMs',
    label: 'reload changing every weight: worst event-loop stall',
    unit: 'ms',
    lowerIsBetter: true,
  },
  {
    key: 'reloadProbeMs',
    label: 'reload changing every weight: worst probe round trip',
    unit: 'ms',
    lowerIsBetter: true,
  },
  { key: 'reloadSeconds', label: 'reload changing every weight: took', unit: 's', lowerIsBetter: true },
  {
    key: 'invalidReloadLoopMs',
    label: 'refused (invalid) reload: worst event-loop stall',
    unit: 'ms',
    lowerIsBetter: true,
  },
  {
    key: 'invalidReloadProbeMs',
    label: 'refused (invalid) reload: worst probe round trip',
    unit: 'ms',
    lowerIsBetter: true,
  },
  { key: 'invalidReloadSeconds', label: 'refused (invalid) reload: took', unit: 's', lowerIsBetter: true },
];

export const bigConfigStalls: Workload = {
  name: 'big-config-stalls',
  title: 'traffic stalls with a big config (canary-l4 alone, its own process)',
  metrics: SIZES.flatMap((size) =>
    PER_SIZE.map((metric) => ({
      ...metric,
      key: `${metric.key}@${size}`,
      label: `${sizeLabel(size)}: ${metric.label}`,
    })),
  ),
  recordsUsage: false,
  appliesTo: (proxy) => proxy === 'canary-l4',
  run: async () => {
    const values: Record<string, number> = {};
    for (const size of SIZES) {
      for (const [key, value] of Object.entries(await measureAt(size))) values[`${key}@${size}`] = value;
    }
    return values;
  },
};
