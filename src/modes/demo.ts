// `demo` (what `npm start` runs): two small TCP backends and a UDP echo backend on loopback, a
// 90/10 split over them, a bounded burst of traffic, and the split it achieved.
import net from 'node:net';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { validateConfig } from '../config/validate.ts';
import { BindError, ConfigError } from '../errors.ts';
import type { Runtime } from '../runtime/runtime.ts';
import { formatTable } from '../util/text-table.ts';

export interface DemoOptions {
  readonly tcpPort: number;
  readonly udpPort: number;
  readonly tcpConnections: number;
  readonly udpSessions: number;
}

export interface DemoSplit {
  readonly listener: string;
  readonly protocol: 'tcp' | 'udp';
  readonly backend: string;
  readonly weight: number;
  readonly count: number;
  readonly total: number;
}

const BACKENDS = [
  { name: 'stable', weight: 90 },
  { name: 'canary', weight: 10 },
] as const;

/** Starts the backends and the listeners, drives the burst, and returns what each backend got. */
export async function runDemo(runtime: Runtime, options: DemoOptions): Promise<DemoSplit[]> {
  const tcpBackends = await Promise.all(BACKENDS.map(({ name }) => startNamedTcpBackend(name)));
  const udpBackends = await Promise.all(BACKENDS.map(({ name }) => startNamedUdpEcho(name)));
  const config = validateConfig(
    {
      listeners: [
        {
          name: 'demo-tcp',
          protocol: 'tcp',
          listen: `127.0.0.1:${options.tcpPort}`,
          backends: BACKENDS.map(({ name, weight }, i) => ({
            name,
            weight,
            host: '127.0.0.1',
            port: tcpBackends[i]!.port,
          })),
        },
        {
          name: 'demo-udp',
          protocol: 'udp',
          listen: `127.0.0.1:${options.udpPort}`,
          backends: BACKENDS.map(({ name, weight }, i) => ({
            name,
            weight,
            host: '127.0.0.1',
            port: udpBackends[i]!.port,
          })),
          udp: { responses: 1 },
        },
      ],
    },
    'demo config',
  );
  await runtime.applyConfig(config).catch((err: unknown) => {
    throw err instanceof BindError ? portClash(err, options) : err;
  });
  runtime.setReady(true);

  const tcpCounts = await countReplies(options.tcpConnections, 20, () => askTcp(options.tcpPort));
  const udpCounts = await countReplies(options.udpSessions, 20, () => askUdp(options.udpPort));
  return [
    ...splitRows('demo-tcp', 'tcp', tcpCounts, options.tcpConnections),
    ...splitRows('demo-udp', 'udp', udpCounts, options.udpSessions),
  ];
}

/** The flag that moves each of the demo's listeners. */
const PORT_FLAGS: Readonly<Record<string, '--tcp-port' | '--udp-port'>> = {
  'demo-tcp': '--tcp-port',
  'demo-udp': '--udp-port',
};

/** A listener that cannot bind, said as the flag that moves it (the user wrote no config to name). */
function portClash(err: BindError, options: DemoOptions): ConfigError {
  const flag = PORT_FLAGS[err.listener];
  if (flag === undefined) return new ConfigError('demo', [err.message], { cause: err });
  const port = flag === '--tcp-port' ? options.tcpPort : options.udpPort;
  return new ConfigError(`${flag} ${port}`, [`${err.message}; the demo's port moves with ${flag} PORT`], {
    cause: err,
  });
}

export function formatSplit(rows: readonly DemoSplit[]): string {
  const header = ['listener', 'protocol', 'backend', 'configured', 'achieved'];
  return formatTable(
    header,
    rows.map((r) => [
      r.listener,
      r.protocol,
      r.backend,
      `${r.weight}%`,
      `${((100 * r.count) / r.total).toFixed(1)}% (${r.count} of ${r.total})`,
    ]),
  );
}

function splitRows(listener: string, protocol: 'tcp' | 'udp', counts: Map<string, number>, total: number): DemoSplit[] {
  return BACKENDS.map(({ name, weight }) => ({
    listener,
    protocol,
    backend: name,
    weight,
    count: counts.get(name) ?? 0,
    total,
  }));
}

/** Runs `total` requests, `concurrency` at a time; counts the answers (each is a backend name). */
async function countReplies(
  total: number,
  concurrency: number,
  ask: () => Promise<string>,
): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let started = 0;
  const worker = async () => {
    while (started < total) {
      started++;
      const name = await ask().catch(() => 'no answer');
      counts.set(name, (counts.get(name) ?? 0) + 1);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return counts;
}

function askTcp(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let answer = '';
    socket.setEncoding('utf8');
    socket.setTimeout(2000, () => socket.destroy(new Error('timed out')));
    socket.on('data', (chunk: string) => (answer += chunk));
    socket.on('end', () => resolve(answer.trim()));
    socket.on('error', reject);
  });
}

function askUdp(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    // A fresh socket per question: a new source port is a new session, so each one is balanced.
    const socket = dgram.createSocket('udp4');
    const timer = setTimeout(() => finish(new Error('timed out')), 2000);
    const finish = (err: Error | null, answer?: string) => {
      clearTimeout(timer);
      socket.close();
      if (err) reject(err);
      else resolve(answer!);
    };
    socket.on('message', (msg) => finish(null, msg.toString('utf8').split(':')[0]!));
    socket.on('error', (err) => finish(err));
    socket.send('ping', port, '127.0.0.1');
  });
}

/** A TCP backend that answers every connection with its name and closes. */
async function startNamedTcpBackend(name: string): Promise<{ port: number }> {
  const server = net.createServer((socket) => socket.end(`${name}\n`));
  server.listen({ host: '127.0.0.1', port: 0 });
  await once(server, 'listening');
  server.unref();
  return { port: (server.address() as net.AddressInfo).port };
}

/** A UDP backend that echoes every datagram, prefixed with its name. */
async function startNamedUdpEcho(name: string): Promise<{ port: number }> {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (msg, rinfo) =>
    socket.send(Buffer.concat([Buffer.from(`${name}:`), msg]), rinfo.port, rinfo.address),
  );
  socket.bind({ address: '127.0.0.1', port: 0 });
  await once(socket, 'listening');
  socket.unref();
  return { port: socket.address().port };
}
