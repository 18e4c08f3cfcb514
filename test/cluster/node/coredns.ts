/**
 * The process the image `registry.k8s.io/coredns/coredns:<tag>` runs on the simulated node (images.ts), as
 * small as the conformance suite needs: its UDPRoute test sends one A query for foo.bar.com. through the
 * Gateway and wants an answer, which the base manifests' Corefile gives with the `whoami` plugin. Here every
 * query is answered as whoami answers (authoritative; an A or AAAA record of the asker's address, an SRV
 * record `_udp.<name>` of its port), on UDP port 53 of the pod's address (COREDNS_BIND). Not simulated: the
 * Corefile (`-conf` is not read, so its `forward . 8.8.8.8`, which needs the internet, answers nothing
 * differently), TCP, and every other plugin.
 */
import { createSocket } from 'node:dgram';
import { isIPv4 } from 'node:net';
import { fileURLToPath } from 'node:url';

const PORT = 53;
const TYPE_A = 1;
const TYPE_AAAA = 28;
const TYPE_SRV = 33;
const CLASS_IN = 1;
const NAME_AT_QUESTION = [0xc0, 0x0c];

/** The answer to `query` from `address:port`, or undefined for what is not a one-question query. */
export function whoami(query: Buffer, address: string, port: number): Buffer | undefined {
  if (query.length < 12 || (query[2]! & 0x80) !== 0 || query.readUInt16BE(4) !== 1) return undefined;
  let end = 12;
  while (end < query.length && query[end] !== 0) end += query[end]! + 1;
  end += 5; // the root label, QTYPE, QCLASS
  if (end > query.length) return undefined;
  const question = query.subarray(12, end);
  const v4 = isIPv4(address);
  const ip = v4 ? Buffer.from(address.split('.').map(Number)) : ipv6Bytes(address);
  const record = (type: number, rdata: Buffer, name: number[] = NAME_AT_QUESTION) => {
    const fixed = Buffer.alloc(10);
    fixed.writeUInt16BE(type, 0);
    fixed.writeUInt16BE(CLASS_IN, 2);
    fixed.writeUInt32BE(0, 4);
    fixed.writeUInt16BE(rdata.length, 8);
    return Buffer.concat([Buffer.from(name), fixed, rdata]);
  };
  const srv = Buffer.alloc(8);
  srv.writeUInt16BE(port, 4);
  srv.set(NAME_AT_QUESTION, 6);
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.readUInt16BE(0), 0);
  // QR, the query's opcode, AA, the query's RD; RCODE 0.
  header.writeUInt16BE(0x8000 | (query.readUInt16BE(2) & 0x7900) | 0x0400, 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(1, 6);
  header.writeUInt16BE(1, 10);
  return Buffer.concat([
    header,
    question,
    record(v4 ? TYPE_A : TYPE_AAAA, ip),
    record(TYPE_SRV, srv, [4, ...Buffer.from('_udp'), ...NAME_AT_QUESTION]),
  ]);
}

function ipv6Bytes(address: string): Buffer {
  const [head = '', tail = ''] = address.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const missing = 8 - groups(head).length - groups(tail).length;
  const all = [...groups(head), ...Array<string>(address.includes('::') ? missing : 0).fill('0'), ...groups(tail)];
  const bytes = Buffer.alloc(16);
  for (const [i, group] of all.entries()) bytes.writeUInt16BE(Number.parseInt(group, 16), i * 2);
  return bytes;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const host = process.env.COREDNS_BIND ?? '127.0.0.1';
  const socket = createSocket(host.includes(':') ? 'udp6' : 'udp4');
  socket.on('message', (query, sender) => {
    const answer = whoami(query, sender.address, sender.port);
    if (answer !== undefined) socket.send(answer, sender.port, sender.address);
  });
  socket.once('error', (err) => {
    console.error(`[ERROR] Restart failed: listen udp ${host}:${PORT}: ${err.message}`);
    process.exit(1);
  });
  socket.bind(PORT, host, () => console.log(`.:${PORT} on ${host} (whoami, simulated)`));
  process.once('SIGTERM', () => process.exit(0));
}
