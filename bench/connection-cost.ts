// What a proxy's memory grows by per client: RSS of a fresh proxy idle, with 5 000 idle TCP
// connections open through it (each has carried one HTTP request and its answer, so both sides are
// set up and their buffers have been used), and with 1 000 UDP sessions (one DNS query from each
// of 1 000 client sockets, answered). Each figure is the process tree's RSS once settled; the
// per-connection cost is the growth over the idle figure. HAProxy proxies no plain UDP: no UDP row.
import { connect, type Socket } from 'node:net';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { setTimeout as sleep } from 'node:timers/promises';
import { dnsQuery } from './dns-server.ts';
import { treeRssKiB } from './proc-usage.ts';
import type { RunningProxy } from './proxies.ts';
import type { Workload } from './workloads.ts';

export const IDLE_TCP_CONNECTIONS = 5_000;
export const UDP_SESSIONS = 1_000;
const OPEN_BATCH = 250;
const OPEN_TIMEOUT_MS = 10_000;
/** Lazy compiles, the first GCs and the kernel's socket accounting behind. */
const SETTLE_MS = 3_000;
const KIB_PER_MIB = 1024;
const REQUEST = 'GET / HTTP/1.1\r\nHost: bench\r\n\r\n';

/** A connection through the proxy that has carried one request and its answer, then stays open. */
function openIdle(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port }, () => socket.write(REQUEST));
    const timer = setTimeout(() => fail(new Error(`no answer within ${OPEN_TIMEOUT_MS} ms`)), OPEN_TIMEOUT_MS);
    const fail = (error: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    };
    socket.once('error', fail);
    socket.once('data', () => {
      clearTimeout(timer);
      socket.removeListener('error', fail);
      socket.on('error', () => {});
      resolve(socket);
    });
  });
}

/** A UDP session through the proxy: one query from a socket of its own, answered. */
function openSession(port: number): Promise<UdpSocket> {
  return new Promise((resolve, reject) => {
    const socket = createSocket('udp4');
    const timer = setTimeout(() => {
      socket.close();
      reject(new Error(`no UDP answer within ${OPEN_TIMEOUT_MS} ms`));
    }, OPEN_TIMEOUT_MS);
    socket.once('message', () => {
      clearTimeout(timer);
      resolve(socket);
    });
    socket.on('error', () => {});
    socket.send(dnsQuery(), port, '127.0.0.1');
  });
}

async function openAll<T>(count: number, open: () => Promise<T>, opened: T[]): Promise<void> {
  for (let done = 0; done < count; done += OPEN_BATCH) {
    opened.push(...(await Promise.all(Array.from({ length: Math.min(OPEN_BATCH, count - done) }, open))));
  }
}

async function settledMiB(pid: number): Promise<number> {
  await sleep(SETTLE_MS);
  return treeRssKiB(pid) / KIB_PER_MIB;
}

async function measure(proxy: RunningProxy): Promise<Record<string, number>> {
  const pid = proxy.pid;
  if (pid === undefined) throw new Error('no process to measure');
  const idle = await settledMiB(pid);
  const values: Record<string, number> = { idleMiB: idle };
  const sockets: Socket[] = [];
  try {
    await openAll(IDLE_TCP_CONNECTIONS, () => openIdle(proxy.ports.http), sockets);
    values.idleTcpMiB = await settledMiB(pid);
    values.perTcpKiB = ((values.idleTcpMiB - idle) * KIB_PER_MIB) / IDLE_TCP_CONNECTIONS;
  } finally {
    for (const socket of sockets) socket.destroy();
  }
  if (proxy.ports.dns === undefined) return values;
  const baseline = await settledMiB(pid);
  const sessions: UdpSocket[] = [];
  try {
    await openAll(UDP_SESSIONS, () => openSession(proxy.ports.dns!), sessions);
    values.udpSessionsMiB = await settledMiB(pid);
    values.perUdpSessionKiB = ((values.udpSessionsMiB - baseline) * KIB_PER_MIB) / UDP_SESSIONS;
  } finally {
    for (const socket of sessions) socket.close();
  }
  return values;
}

export const connectionCost: Workload = {
  name: 'connection-cost',
  group: 'footprint',
  title: `proxy memory per client (RSS of the process tree, a fresh proxy): ${IDLE_TCP_CONNECTIONS.toLocaleString('en-US')} idle TCP connections, ${UDP_SESSIONS.toLocaleString('en-US')} UDP sessions`,
  metrics: [
    { key: 'idleMiB', label: 'idle', unit: 'MiB', lowerIsBetter: true },
    {
      key: 'idleTcpMiB',
      label: `${IDLE_TCP_CONNECTIONS.toLocaleString('en-US')} idle TCP connections`,
      unit: 'MiB',
      lowerIsBetter: true,
    },
    { key: 'perTcpKiB', label: 'per TCP connection', unit: 'KiB', lowerIsBetter: true },
    {
      key: 'udpSessionsMiB',
      label: `${UDP_SESSIONS.toLocaleString('en-US')} UDP sessions (after the TCP ones closed)`,
      unit: 'MiB',
      lowerIsBetter: true,
    },
    { key: 'perUdpSessionKiB', label: 'per UDP session', unit: 'KiB', lowerIsBetter: true },
  ],
  recordsUsage: false,
  freshProxy: true,
  appliesTo: (proxy) => proxy !== 'direct',
  run: (proxy) => measure(proxy),
};
