// The backends every proxy splits 90/10 between, all on loopback.
//
// Bulk TCP: both backend entries are the SAME iperf3 server. An iperf3 test is one control
// connection plus N data connections that must all reach the server that issued the test's cookie;
// with two iperf3 servers, a 90/10 split would send some data connections of a test to the wrong
// server and the test would fail. The split itself still runs through the proxy's balancer.
import { fileURLToPath } from 'node:url';
import { createSocket } from 'node:dgram';
import { startChild, waitFor, tcpPortOpen, type Child } from './processes.ts';
import { PROJECT_NODE, PROJECT_ROOT } from './paths.ts';

export interface BackendPorts {
  readonly iperf3: number;
  readonly httpA: number;
  readonly httpB: number;
  readonly udpA: number;
  readonly udpB: number;
}

export const BACKEND_PORTS: BackendPorts = { iperf3: 15201, httpA: 15081, httpB: 15082, udpA: 15091, udpB: 15092 };

const script = (name: string): string => fileURLToPath(new URL(name, import.meta.url));

function udpEchoes(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    const timer = setTimeout(() => finish(false), 200);
    const finish = (ok: boolean): void => {
      clearTimeout(timer);
      socket.close();
      resolve(ok);
    };
    socket.on('message', () => finish(true));
    socket.on('error', () => finish(false));
    socket.send('ping', port, '127.0.0.1');
  });
}

export async function startBackends(): Promise<Child[]> {
  const ports = BACKEND_PORTS;
  const iperf3 = startChild('iperf3 server', 'iperf3', ['--server', '--forceflush', '--idle-timeout', '30', '--bind', '127.0.0.1', '--port', String(ports.iperf3)]);
  const http = [
    startChild('http backend a', PROJECT_NODE, [script('http-backend.ts'), String(ports.httpA), 'a'], PROJECT_ROOT),
    startChild('http backend b', PROJECT_NODE, [script('http-backend.ts'), String(ports.httpB), 'b'], PROJECT_ROOT),
  ];
  const udp = [
    startChild('udp echo a', PROJECT_NODE, [script('udp-echo.ts'), String(ports.udpA)], PROJECT_ROOT),
    startChild('udp echo b', PROJECT_NODE, [script('udp-echo.ts'), String(ports.udpB)], PROJECT_ROOT),
  ];
  // A probe connection would count as a (broken) iperf3 test, so wait for its banner instead.
  await waitFor('iperf3 server', async () => iperf3.outputTail().includes('Server listening'), iperf3, 10_000);
  await waitFor('http backend a', () => tcpPortOpen(ports.httpA), http[0], 10_000);
  await waitFor('http backend b', () => tcpPortOpen(ports.httpB), http[1], 10_000);
  await waitFor('udp echo a', () => udpEchoes(ports.udpA), udp[0], 10_000);
  await waitFor('udp echo b', () => udpEchoes(ports.udpB), udp[1], 10_000);
  return [iperf3, ...http, ...udp];
}
