// The data plane's counters in the Prometheus text format, rendered in slices. At 10 000 listeners
// a scrape is ~100 MB of text; prom-client builds it in one go and held traffic still for seconds,
// so these families are rendered here as a stream of chunks, yielding to the event loop between
// slices (see slicer.ts). Names are [A-Za-z0-9_.-] (config validation), so labels need no escaping.
import { METRIC_PREFIX } from '../defaults.ts';
import {
  DURATION_BUCKETS,
  type BackendStats,
  type DurationHistogram,
  type ListenerStats,
  type StatsRegistry,
} from '../dataplane/stats/stats.ts';
import type { BackendState } from '../dataplane/dataplane.ts';
import { Slicer } from '../util/slicer.ts';

/** What the families are read from: one data plane's, or the sum over `--workers` processes. */
export interface DataPlaneView {
  readonly stats: StatsRegistry;
  /** Weight and health of every backend of the running config. */
  backendStates(): Iterable<BackendState>;
  readonly descriptors: { readonly capacity: number; readonly inUse: number };
  /** Bytes of read buffers the open TCP connections hold. */
  readBufferBytes(): number;
  /** Every listener of the running config with its affinity setting. */
  listenerAffinities(): Iterable<readonly [listener: string, clientIP: boolean]>;
}

/** Chunks of about this many characters go to the response. */
const CHUNK_CHARS = 64 * 1024;
const BUCKET_BOUNDS = DURATION_BUCKETS.map(String);

interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  /** The family's sample lines, a listener's or a backend's at a time. */
  readonly lines: (view: DataPlaneView, name: string) => Iterable<string>;
}

const labelsOf = (listener: string, backend: string) => `listener="${listener}",backend="${backend}"`;

function* perListener(
  view: DataPlaneView,
  render: (listener: string, stats: ListenerStats) => string,
): Iterable<string> {
  for (const [listener, stats] of view.stats.listeners) yield render(listener, stats);
}

function* perBackend(view: DataPlaneView, render: (labels: string, stats: BackendStats) => string): Iterable<string> {
  for (const [listener, backends] of view.stats.backends)
    for (const [backend, stats] of backends) yield render(labelsOf(listener, backend), stats);
}

/** One sample per key of `record`, labelled `label="<key>"`. */
function byKey(name: string, labels: string, label: string, record: Readonly<Record<string, number>>): string {
  let lines = '';
  for (const key in record) lines += `${name}{${labels},${label}="${key}"} ${record[key]}\n`;
  return lines;
}

function histogram(name: string, labels: string, histogram: DurationHistogram): string {
  let lines = '';
  let cumulative = 0;
  for (let i = 0; i < BUCKET_BOUNDS.length; i++) {
    cumulative += histogram.counts[i]!;
    lines += `${name}_bucket{${labels},le="${BUCKET_BOUNDS[i]}"} ${cumulative}\n`;
  }
  return `${lines}${name}_bucket{${labels},le="+Inf"} ${histogram.count}\n${name}_sum{${labels}} ${histogram.sum}\n${name}_count{${labels}} ${histogram.count}\n`;
}

function* backendStateLines(
  view: DataPlaneView,
  name: string,
  value: (state: BackendState) => number,
): Iterable<string> {
  for (const state of view.backendStates())
    yield `${name}{${labelsOf(state.listener, state.backend)}} ${value(state)}\n`;
}

const single = (value: (view: DataPlaneView) => number) => (view: DataPlaneView, name: string) => [
  `${name} ${value(view)}\n`,
];

const FAMILIES: readonly Family[] = [
  {
    name: 'listener_connections_total',
    help: 'Client TCP connections accepted and UDP sessions opened, per listener.',
    type: 'counter',
    lines: (view, name) => perListener(view, (listener, s) => `${name}{listener="${listener}"} ${s.accepted}\n`),
  },
  {
    name: 'connections_refused_total',
    help: 'New connections refused, by reason (no_backend: all weights 0 or every backend failed; backend_refused: the share of a backend with refuse: true; fd_limit: the descriptor budget is spent; local_error: the system refused a socket).',
    type: 'counter',
    lines: (view, name) =>
      perListener(view, (listener, s) => byKey(name, `listener="${listener}"`, 'reason', s.refused)),
  },
  {
    name: 'backend_connections_total',
    help: 'TCP connections established (and UDP sessions opened) to each backend.',
    type: 'counter',
    lines: (view, name) => perBackend(view, (labels, s) => `${name}{${labels}} ${s.connections}\n`),
  },
  {
    name: 'backend_refused_total',
    help: 'New TCP connections refused and UDP flows dropped as the share of a backend with refuse: true.',
    type: 'counter',
    lines: (view, name) => perBackend(view, (labels, s) => `${name}{${labels}} ${s.refused}\n`),
  },
  {
    name: 'active_connections',
    help: 'Open TCP connections and live UDP sessions, per backend.',
    type: 'gauge',
    lines: (view, name) => perBackend(view, (labels, s) => `${name}{${labels}} ${s.active}\n`),
  },
  {
    name: 'bytes_total',
    help: 'Bytes proxied, per backend and direction.',
    type: 'counter',
    lines: (view, name) =>
      perBackend(view, (labels, s) =>
        byKey(name, labels, 'direction', { to_backend: s.bytesToBackend, to_client: s.bytesToClient }),
      ),
  },
  {
    name: 'connect_errors_total',
    help: 'Failed backend connects (TCP) or refused UDP sessions, by reason.',
    type: 'counter',
    lines: (view, name) => perBackend(view, (labels, s) => byKey(name, labels, 'reason', s.connectErrors)),
  },
  {
    name: 'backend_failures_total',
    help: "Established connections counted against the backend's health, by reason (reset before its first byte with failOnReset; no byte within firstByteTimeoutMs).",
    type: 'counter',
    lines: (view, name) => perBackend(view, (labels, s) => byKey(name, labels, 'reason', s.failures)),
  },
  {
    name: 'held_out_offers_total',
    help: "New connections and UDP flows the backend's weight offered it while passive health held it out (they went to the others), by how the take-out ended: failed_connect, failed_reset (it still failed: a recovery probe or its next attempt; by what had taken it out: failed connects or sends, resets before the first byte) or cleared (it came back).",
    type: 'counter',
    lines: (view, name) =>
      perBackend(view, (labels, s) =>
        byKey(name, labels, 'outcome', {
          failed_connect: s.heldOut.failed.connect,
          failed_reset: s.heldOut.failed.reset,
          cleared: s.heldOut.cleared,
        }),
      ),
  },
  {
    name: 'recovery_probes_total',
    help: "Connections of the proxy's own tried to a held-out backend (probeIntervalMs), by result: ok brought it back, failed kept it out.",
    type: 'counter',
    lines: (view, name) => perBackend(view, (labels, s) => byKey(name, labels, 'result', s.probes)),
  },
  {
    name: 'connect_duration_seconds',
    help: 'Time to connect to the backend.',
    type: 'histogram',
    lines: (view, name) => perBackend(view, (labels, s) => histogram(name, labels, s.connectDuration)),
  },
  {
    name: 'session_duration_seconds',
    help: 'Lifetime of proxied TCP connections and UDP sessions.',
    type: 'histogram',
    lines: (view, name) => perBackend(view, (labels, s) => histogram(name, labels, s.sessionDuration)),
  },
  {
    name: 'udp_datagrams_total',
    help: 'UDP datagrams proxied, per backend and direction.',
    type: 'counter',
    lines: (view, name) =>
      perBackend(view, (labels, s) =>
        byKey(name, labels, 'direction', { to_backend: s.datagramsToBackend, to_client: s.datagramsToClient }),
      ),
  },
  {
    name: 'udp_dropped_datagrams_total',
    help: 'UDP datagrams dropped, by reason (backend_refused: of a flow placed on a backend with refuse: true; fd_limit, local_error: no socket for a new session).',
    type: 'counter',
    lines: (view, name) =>
      perListener(view, (listener, s) => byKey(name, `listener="${listener}"`, 'reason', s.udpDropped)),
  },
  {
    name: 'connections_ended_total',
    help: 'Connections and UDP sessions the proxy ended gracefully, by reason (max_age: maxConnectionAgeMs; rebalance: rebalanceWindowMs after a weight change; drain: drainTimeoutMs after the backend left the config).',
    type: 'counter',
    lines: (view, name) => perBackend(view, (labels, s) => byKey(name, labels, 'reason', s.ended)),
  },
  {
    name: 'mirror_total',
    help: 'Mirroring to a backend (a dark canary), by outcome (mirrored: connections or flows also sent to it; compared: replies judged, equal or different; missing: a stable reply it never matched; dropped: mirror legs given up, failed or fallen behind).',
    type: 'counter',
    lines: (view, name) => perBackend(view, (labels, s) => byKey(name, labels, 'outcome', s.mirror)),
  },
  {
    name: 'client_affinity',
    help: '1 when the listener places clients by their address (affinity: clientIP), else 0.',
    type: 'gauge',
    lines: function* (view, name) {
      for (const [listener, clientIP] of view.listenerAffinities())
        yield `${name}{listener="${listener}"} ${clientIP ? 1 : 0}\n`;
    },
  },
  {
    name: 'backend_weight',
    help: 'Configured weight of each backend of the running config.',
    type: 'gauge',
    lines: (view, name) => backendStateLines(view, name, (state) => state.weight),
  },
  {
    name: 'backend_healthy',
    help: '1 unless passive health checks took the backend out of rotation.',
    type: 'gauge',
    lines: (view, name) => backendStateLines(view, name, (state) => (state.healthy ? 1 : 0)),
  },
  {
    name: 'descriptor_budget',
    help: 'File descriptors listeners, connections and UDP sessions may hold: the open-file limit less what the process and the admin server keep.',
    type: 'gauge',
    lines: single((view) => view.descriptors.capacity),
  },
  {
    name: 'descriptors_in_use',
    help: 'File descriptors held by listeners, connections and UDP sessions.',
    type: 'gauge',
    lines: single((view) => view.descriptors.inUse),
  },
  {
    name: 'read_buffer_bytes',
    help: 'Bytes of read buffers held by open TCP connections (let go of once a connection idles).',
    type: 'gauge',
    lines: single((view) => view.readBufferBytes()),
  },
];

/** The data plane's families, as chunks of text; the event loop runs between slices of the work. */
export async function* renderDataPlane(view: DataPlaneView): AsyncGenerator<string> {
  const slicer = new Slicer();
  let chunk = '';
  for (const family of FAMILIES) {
    const name = METRIC_PREFIX + family.name;
    chunk += `# HELP ${name} ${family.help}\n# TYPE ${name} ${family.type}\n`;
    for (const lines of family.lines(view, name)) {
      chunk += lines;
      if (chunk.length >= CHUNK_CHARS) {
        yield chunk;
        chunk = '';
      }
      if (slicer.due()) await slicer.pause();
    }
  }
  yield chunk;
}
