// The proxies under test, each on its own ports, all with the same 90/10 split over the same
// backends and the same worker count. `direct` is no proxy: the load generator talks to backend a.
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BACKEND_PORTS } from './backends.ts';
import { NGINX_STREAM_MODULE } from './install.ts';
import { CHILD_FD_LIMIT, startChild, waitFor, tcpPortOpen, httpOk, type Child } from './processes.ts';
import { PROJECT_ROOT } from './paths.ts';
import type { CanarySettings } from './image-settings.ts';

export const PROXY_NAMES = ['direct', 'nginx', 'haproxy', 'canary-l4', 'baseline'] as const;
export type ProxyName = (typeof PROXY_NAMES)[number];

/**
 * How canary-l4 runs: its Node flags and environment (as the image runs it unless told otherwise:
 * image-settings.ts), and for `baseline` the checkout it runs from. A lever is measured as canary-l4
 * against the baseline within the same repetitions (`--baseline DIR`, `--node-flags`, `--env`,
 * `--baseline-node-flags`, `--baseline-env`).
 */
export interface CanaryRuns {
  readonly settings: CanarySettings;
  readonly baselineRoot: string | undefined;
  readonly baselineSettings: CanarySettings;
}

/** What a checkout ships: its bundle (`npm run build`), or its sources where it has none (one from before the bundle, not built). */
export function canaryEntry(root: string): string {
  return existsSync(join(root, 'dist', 'canary-l4.js')) ? 'dist/canary-l4.js' : 'src/cli/main.ts';
}

/** canary-l4 started with `--no-metrics`: only for the metrics-cost workload. */
export const CANARY_NO_METRICS = 'canary-l4-no-metrics';
/** canary-l4 mirroring every UDP flow (udp, dns) to a weight-0 backend, compare: replies: only for the mirror-cost workload. */
export const CANARY_MIRROR = 'canary-l4-mirror';
export type CanaryVariant = typeof CANARY_NO_METRICS | typeof CANARY_MIRROR;
export type ProxyVariant = ProxyName | CanaryVariant;

export interface ListenPorts {
  readonly bulk: number;
  readonly http: number;
  /** undefined: this proxy does not do UDP (HAProxy: no plain UDP proxying). */
  readonly udp: number | undefined;
  /** UDP to the DNS servers; undefined as udp. */
  readonly dns: number | undefined;
}

export interface RunningProxy {
  readonly name: ProxyVariant;
  readonly ports: ListenPorts;
  /** Root of the proxy's process tree, for CPU and RSS; undefined for `direct`. */
  readonly pid: number | undefined;
  /** Its last output when the proxy has exited (crashed), else undefined. */
  exitReport(): string | undefined;
  stop(): Promise<void>;
}

interface Split {
  readonly name: 'bulk' | 'http' | 'udp' | 'dns';
  readonly protocol: 'tcp' | 'udp';
  readonly port: number;
  readonly backends: readonly { name: string; port: number; weight: number }[];
}

/** The one split every proxy gets; only the listen port differs. */
function splits(ports: ListenPorts): Split[] {
  const b = BACKEND_PORTS;
  const tcpAndUdp: Split[] = [
    {
      name: 'bulk',
      protocol: 'tcp',
      port: ports.bulk,
      backends: [
        { name: 'a', port: b.iperf3, weight: 90 },
        { name: 'b', port: b.iperf3, weight: 10 },
      ],
    },
    {
      name: 'http',
      protocol: 'tcp',
      port: ports.http,
      backends: [
        { name: 'a', port: b.httpA, weight: 90 },
        { name: 'b', port: b.httpB, weight: 10 },
      ],
    },
  ];
  if (ports.udp !== undefined) {
    tcpAndUdp.push({
      name: 'udp',
      protocol: 'udp',
      port: ports.udp,
      backends: [
        { name: 'a', port: b.udpA, weight: 90 },
        { name: 'b', port: b.udpB, weight: 10 },
      ],
    });
  }
  if (ports.dns !== undefined) {
    tcpAndUdp.push({
      name: 'dns',
      protocol: 'udp',
      port: ports.dns,
      backends: [
        { name: 'a', port: b.dnsA, weight: 90 },
        { name: 'b', port: b.dnsB, weight: 10 },
      ],
    });
  }
  return tcpAndUdp;
}

const portsFrom = (base: number, udp: boolean): ListenPorts => ({
  bulk: base + 1,
  http: base + 2,
  udp: udp ? base + 3 : undefined,
  dns: udp ? base + 4 : undefined,
});

// ---- config generators (pure) ----------------------------------------------------------------

/** nginx defaults otherwise (proxy_buffer_size 16k, tcp_nodelay on): nginx as people run it. */
export function nginxConfig(ports: ListenPorts, workers: number, dir: string): string {
  const blocks = splits(ports).map(
    (split) => `
  upstream ${split.name} {
${split.backends.map((backend) => `    server 127.0.0.1:${backend.port} weight=${backend.weight};`).join('\n')}
  }
  server {
    listen 127.0.0.1:${split.port}${split.protocol === 'udp' ? ' udp' : ''} reuseport;
    proxy_pass ${split.name};
  }`,
  );
  return `load_module ${NGINX_STREAM_MODULE};
worker_processes ${workers};
worker_rlimit_nofile ${CHILD_FD_LIMIT};
daemon off;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'error.log')} warn;
events { worker_connections ${CHILD_FD_LIMIT}; }
stream {${blocks.join('\n')}
}
`;
}

/** HAProxy refuses to start when 2 fds per connection do not fit in its fd limit. */
const HAPROXY_MAXCONN = Math.floor((CHILD_FD_LIMIT - 200) / 2);

export function haproxyConfig(ports: ListenPorts, workers: number): string {
  const sections = splits(ports)
    .filter((split) => split.protocol === 'tcp')
    .map(
      (split) => `
frontend ${split.name}
  bind 127.0.0.1:${split.port}
  default_backend ${split.name}

backend ${split.name}
  balance roundrobin
${split.backends.map((backend) => `  server ${backend.name} 127.0.0.1:${backend.port} weight ${backend.weight}`).join('\n')}
`,
    );
  return `global
  nbthread ${workers}
  maxconn ${HAPROXY_MAXCONN}

defaults
  mode tcp
  maxconn ${HAPROXY_MAXCONN}
  timeout connect 5s
  timeout client 10m
  timeout server 10m
${sections.join('')}`;
}

/**
 * The L4 config of design §3 (JSON is valid YAML). `mirrorUdp`: every UDP flow is also sent to a
 * weight-0 backend on backend b's port (the 90/10 split unchanged), its replies compared.
 */
export function canaryConfig(ports: ListenPorts, mirrorUdp = false): string {
  const listeners = splits(ports).map((split) => {
    const backends = split.backends.map((backend) => ({
      name: backend.name,
      host: '127.0.0.1',
      port: backend.port,
      weight: backend.weight,
    }));
    const listener = { name: split.name, protocol: split.protocol, listen: `127.0.0.1:${split.port}`, backends };
    if (!mirrorUdp || split.protocol !== 'udp') return listener;
    const mirrorPort = split.backends.at(-1)!.port;
    return {
      ...listener,
      backends: [...backends, { name: 'mirror', host: '127.0.0.1', port: mirrorPort, weight: 0 }],
      mirror: { to: 'mirror', percent: 100, compare: 'replies' },
    };
  });
  return `${JSON.stringify({ listeners }, null, 2)}\n`;
}

// ---- starting them --------------------------------------------------------------------------

const READY_TIMEOUT_MS = 15_000;

/** Waits until the proxy is ready; a proxy that never gets there is stopped, not left behind. */
const canaryPortBase = (name: 'canary-l4' | 'baseline' | CanaryVariant): number =>
  name === 'canary-l4' ? 18_000 : name === 'baseline' ? 19_500 : name === CANARY_MIRROR ? 19_200 : 19_000;

/** canary-l4's (metrics on) Prometheus endpoint. */
export const CANARY_METRICS_URL = `http://127.0.0.1:${canaryPortBase('canary-l4') + 90}/metrics`;

async function whenReady(
  name: ProxyVariant,
  ports: ListenPorts,
  child: Child,
  ready: () => Promise<void>,
): Promise<RunningProxy> {
  try {
    await ready();
  } catch (error) {
    await child.stop();
    throw error;
  }
  return {
    name,
    ports,
    pid: child.pid,
    exitReport: () => (child.exited() ? child.outputTail() : undefined),
    stop: () => child.stop(),
  };
}

async function waitForTcpListeners(ports: ListenPorts, child: Child): Promise<void> {
  await waitFor(`${child.name} bulk listener`, () => tcpPortOpen(ports.bulk), child, READY_TIMEOUT_MS);
  await waitFor(`${child.name} http listener`, () => tcpPortOpen(ports.http), child, READY_TIMEOUT_MS);
}

function workdir(root: string, name: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

export async function startProxy(
  name: ProxyVariant,
  workers: number,
  scratchRoot: string,
  runs: CanaryRuns,
): Promise<RunningProxy> {
  switch (name) {
    case 'direct':
      return {
        name,
        ports: {
          bulk: BACKEND_PORTS.iperf3,
          http: BACKEND_PORTS.httpA,
          udp: BACKEND_PORTS.udpA,
          dns: BACKEND_PORTS.dnsA,
        },
        pid: undefined,
        exitReport: () => undefined,
        stop: async () => {},
      };
    case 'nginx': {
      const ports = portsFrom(16_000, true);
      const dir = workdir(scratchRoot, name);
      const configFile = join(dir, 'nginx.conf');
      writeFileSync(configFile, nginxConfig(ports, workers, dir));
      const child = startChild(name, 'nginx', ['-c', configFile, '-p', dir, '-e', join(dir, 'error.log')]);
      return whenReady(name, ports, child, () => waitForTcpListeners(ports, child));
    }
    case 'haproxy': {
      const ports = portsFrom(17_000, false);
      const configFile = join(workdir(scratchRoot, name), 'haproxy.cfg');
      writeFileSync(configFile, haproxyConfig(ports, workers));
      const child = startChild(name, 'haproxy', ['-db', '-f', configFile]);
      return whenReady(name, ports, child, () => waitForTcpListeners(ports, child));
    }
    case 'canary-l4':
    case 'baseline':
    case CANARY_NO_METRICS:
    case CANARY_MIRROR: {
      const baseline = name === 'baseline';
      if (baseline && runs.baselineRoot === undefined)
        throw new Error('--baseline DIR names the checkout to compare with');
      const base = canaryPortBase(name);
      const ports = portsFrom(base, true);
      const adminPort = base + 90;
      const configFile = join(workdir(scratchRoot, name), 'canary-l4.json');
      writeFileSync(configFile, canaryConfig(ports, name === CANARY_MIRROR));
      const root = baseline ? runs.baselineRoot! : PROJECT_ROOT;
      const settings = baseline ? runs.baselineSettings : runs.settings;
      const args = [
        ...settings.nodeFlags,
        canaryEntry(root),
        'serve',
        '--config',
        configFile,
        '--admin-host',
        '127.0.0.1',
        '--admin-port',
        String(adminPort),
        '--log-level',
        'warn',
        // Open UDP sessions would otherwise hold a SIGTERM for the default 30 s drain.
        '--drain-timeout',
        '1',
        '--workers',
        String(workers),
      ];
      if (name === CANARY_NO_METRICS) args.push('--no-metrics');
      const child = startChild(name, settings.node.path, args, root, settings.env);
      return whenReady(name, ports, child, () =>
        waitFor(`${name} /readyz`, () => httpOk(`http://127.0.0.1:${adminPort}/readyz`), child, READY_TIMEOUT_MS),
      );
    }
  }
}
