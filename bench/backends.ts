// The backends every proxy splits 90/10 between, all on loopback.
//
// Bulk TCP: both backend entries are the SAME iperf3 server. An iperf3 test is one control
// connection plus N data connections that must all reach the server that issued the test's cookie;
// with two iperf3 servers, a 90/10 split would send some data connections of a test to the wrong
// server and the test would fail. The split itself still runs through the proxy's balancer.
//
// UDP: two sockperf servers (C, one recvfrom/sendto loop each); DNS: knotd on two ports.
import { fileURLToPath } from 'node:url';
import { startChild, waitFor, tcpPortOpen, type Child } from './processes.ts';
import { PROJECT_NODE, PROJECT_ROOT } from './paths.ts';
import { startKnot } from './dns-server.ts';

export interface BackendPorts {
  readonly iperf3: number;
  readonly httpA: number;
  readonly httpB: number;
  readonly udpA: number;
  readonly udpB: number;
  readonly dnsA: number;
  readonly dnsB: number;
}

export const BACKEND_PORTS: BackendPorts = {
  iperf3: 15201,
  httpA: 15081,
  httpB: 15082,
  udpA: 15091,
  udpB: 15092,
  dnsA: 15353,
  dnsB: 15354,
};

const script = (name: string): string => fileURLToPath(new URL(name, import.meta.url));

export async function startBackends(scratch: string): Promise<Child[]> {
  const ports = BACKEND_PORTS;
  const iperf3 = startChild('iperf3 server', 'iperf3', [
    '--server',
    '--forceflush',
    '--idle-timeout',
    '30',
    '--bind',
    '127.0.0.1',
    '--port',
    String(ports.iperf3),
  ]);
  const http = [
    startChild('http backend a', PROJECT_NODE, [script('http-backend.ts'), String(ports.httpA), 'a'], PROJECT_ROOT),
    startChild('http backend b', PROJECT_NODE, [script('http-backend.ts'), String(ports.httpB), 'b'], PROJECT_ROOT),
  ];
  const udp = [
    startChild('sockperf server a', 'sockperf', ['server', '-i', '127.0.0.1', '-p', String(ports.udpA)]),
    startChild('sockperf server b', 'sockperf', ['server', '-i', '127.0.0.1', '-p', String(ports.udpB)]),
  ];
  // A probe connection would count as a (broken) iperf3 test, so wait for its banner instead.
  await waitFor('iperf3 server', async () => iperf3.outputTail().includes('Server listening'), iperf3, 10_000);
  await waitFor('http backend a', () => tcpPortOpen(ports.httpA), http[0], 10_000);
  await waitFor('http backend b', () => tcpPortOpen(ports.httpB), http[1], 10_000);
  for (const server of udp)
    await waitFor(server.name, async () => server.outputTail().includes('to block on socket'), server, 10_000);
  const knot = await startKnot(scratch, [ports.dnsA, ports.dnsB]);
  return [iperf3, ...http, ...udp, knot];
}
