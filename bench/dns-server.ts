// The DNS backends: one knotd serving a small zone on two ports (backend a and b of the split).
// Knot is an authoritative server people run in production; one UDP worker keeps it from taking
// the cores the proxies need.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createSocket } from 'node:dgram';
import { join } from 'node:path';
import { startChild, waitFor, type Child } from './processes.ts';

export const DNS_ZONE = 'bench.test';
const NAMES = ['www', 'api', 'mail', 'ns'];

const zoneFile = (): string => `$ORIGIN ${DNS_ZONE}.
$TTL 3600
@ IN SOA ns.${DNS_ZONE}. admin.${DNS_ZONE}. 1 3600 600 86400 60
@ IN NS ns.${DNS_ZONE}.
${NAMES.map((name, i) => `${name} IN A 192.0.2.${10 + i}`).join('\n')}
`;

export function knotConfig(dir: string, ports: readonly number[]): string {
  return `server:
    rundir: "${dir}"
    listen: [ ${ports.map((port) => `127.0.0.1@${port}`).join(', ')} ]
    udp-workers: 1
    tcp-workers: 1
    background-workers: 1
database:
    storage: "${dir}"
log:
  - target: stderr
    any: warning
zone:
  - domain: ${DNS_ZONE}
    storage: "${dir}"
    file: "${DNS_ZONE}.zone"
`;
}

/** dnsperf's input: one query a line, repeated by dnsperf. */
export function writeQueryFile(dir: string): string {
  const file = join(dir, 'queries.txt');
  writeFileSync(file, `${NAMES.map((name) => `${name}.${DNS_ZONE} A`).join('\n')}\n${DNS_ZONE} SOA\n`);
  return file;
}

/** A query for www.<zone> A, as bytes. */
export function dnsQuery(): Buffer {
  const header = Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
  const labels = ['www', ...DNS_ZONE.split('.')].map((label) =>
    Buffer.concat([Buffer.from([label.length]), Buffer.from(label)]),
  );
  return Buffer.concat([header, ...labels, Buffer.from([0, 0, 1, 0, 1])]);
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    const finish = (ok: boolean): void => {
      clearTimeout(timer);
      socket.close();
      resolve(ok);
    };
    const timer = setTimeout(() => finish(false), 200);
    socket.on('message', (reply) => finish(reply.readUInt16BE(0) === 0x1234));
    socket.on('error', () => finish(false));
    socket.send(dnsQuery(), port, '127.0.0.1');
  });
}

export async function startKnot(scratch: string, ports: readonly number[]): Promise<Child> {
  const dir = join(scratch, 'knot');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${DNS_ZONE}.zone`), zoneFile());
  const configFile = join(dir, 'knot.conf');
  writeFileSync(configFile, knotConfig(dir, ports));
  const knot = startChild('knotd', 'knotd', ['-c', configFile]);
  for (const port of ports) await waitFor(`knotd on port ${port}`, () => answers(port), knot, 10_000);
  return knot;
}
