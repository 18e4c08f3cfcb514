/**
 * echo-basic's tcpserver (TCP_ECHO_SERVER=1), line for line: on TCP_PORT (3000), and with TLS on TLS_PORT
 * (8443) when TLS_SERVER_CERT and TLS_SERVER_PRIV_KEY name a readable key pair, each connection gets the
 * welcome line, then per line it reads: `PING` → `PONG`, `IS_TLS` → `true`/`false`, `TEST` → the JSON
 * assertions (the pod context, tcpport, tlsport, isTLS and, over TLS, the handshake's version, serverName,
 * negotiatedProtocol and cipherSuite; not `curves`, which Node does not expose on a server); anything else
 * is ignored. The field order and names are the Go struct's.
 */
import { readFileSync } from 'node:fs';
import { createServer as createTcpServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import { type PodContext, portFrom } from './context.ts';

export const WELCOME_MESSAGE = 'Gateway API Test TCP Server\n';

/** Go's tls.VersionName for what Node's getProtocol() says. */
const TLS_VERSION_NAMES: Record<string, string> = {
  TLSv1: 'TLS 1.0',
  'TLSv1.1': 'TLS 1.1',
  'TLSv1.2': 'TLS 1.2',
  'TLSv1.3': 'TLS 1.3',
};

export async function serveTcpEcho(env: NodeJS.ProcessEnv, context: PodContext, host: string): Promise<Server[]> {
  const tcpPort = portFrom(env, 'TCP_PORT', 3000);
  const tlsPort = portFrom(env, 'TLS_PORT', 8443);
  const base = { ...context, tcpport: String(tcpPort), tlsport: String(tlsPort) };
  const cert = env.TLS_SERVER_CERT ?? '';
  const key = env.TLS_SERVER_PRIV_KEY ?? '';
  const servers = [createTcpServer((socket) => handle(socket, base, false))];
  if (cert !== '' && key !== '') {
    const read = (path: string, what: string) => {
      try {
        return readFileSync(path);
      } catch (err) {
        throw new Error(`failed to read ${what} ${path}: ${(err as Error).message}`);
      }
    };
    const tls = createTlsServer(
      { cert: read(cert, 'certificate'), key: read(key, 'private key'), minVersion: 'TLSv1.2' },
      (socket) => handle(socket, base, true),
    );
    servers.push(tls);
  }
  await Promise.all(
    servers.map(
      (server, index) =>
        new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(index === 0 ? tcpPort : tlsPort, host, () => {
            console.log(
              `Starting server (tcp) protocol=${index === 0 ? 'tcp' : 'tls'} port=${index === 0 ? tcpPort : tlsPort}`,
            );
            resolve();
          });
        }),
    ),
  );
  return servers;
}

function handle(socket: Socket, base: Record<string, string>, isTLS: boolean): void {
  socket.on('error', () => socket.destroy());
  const assertions: Record<string, unknown> = { ...base, isTLS };
  if (isTLS) {
    const tls = socket as TLSSocket;
    const protocol = tls.alpnProtocol;
    assertions.tls = {
      version: TLS_VERSION_NAMES[tls.getProtocol() ?? ''] ?? tls.getProtocol(),
      serverName: (tls as TLSSocket & { servername?: string | false }).servername || '',
      ...(typeof protocol === 'string' && protocol !== '' ? { negotiatedProtocol: protocol } : {}),
      cipherSuite: tls.getCipher().standardName,
    };
  }
  const payload = JSON.stringify(assertions);
  socket.write(WELCOME_MESSAGE);
  let pending = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk;
    for (let end = pending.indexOf('\n'); end !== -1; end = pending.indexOf('\n')) {
      // bufio.Scanner's lines: without the newline and a trailing carriage return.
      const line = pending.slice(0, end).replace(/\r$/, '');
      pending = pending.slice(end + 1);
      if (line === 'TEST') socket.write(`${payload}\n`);
      else if (line === 'IS_TLS') socket.write(`${isTLS}\n`);
      else if (line === 'PING') socket.write('PONG\n');
    }
  });
  socket.on('end', () => socket.end());
}
