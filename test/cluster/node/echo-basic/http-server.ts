/**
 * echo-basic's default mode, the HTTP echo the HTTP tests read (canary-l4's TCP and UDP tests only need these
 * pods to run): on HTTP_PORT (3000) HTTP/1.1, on H2C_PORT (3001) HTTP/2 over cleartext (prior knowledge), and
 * on HTTPS_PORT (8443) HTTPS when TLS_SERVER_CERT and TLS_SERVER_PRIVKEY name a readable key pair. `/health`
 * answers 200 OK, `/status/NNN` that status, anything else the image's JSON (indented by one space as
 * MarshalIndent writes it): path, host, method, proto, headers (canonical names, Host apart), httpPort and
 * the pod context, with `?delay=` and `X-Echo-Set-Header` honoured. Not simulated: `/retry/`, `/ws`, the TLS
 * assertions and client certificates (TLS_CLIENT_CACERTS).
 */
import { readFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { createServer as createH2cServer, type Http2ServerRequest } from 'node:http2';
import { createServer as createHttpsServer } from 'node:https';
import type { Server } from 'node:net';
import { type PodContext, portFrom } from './context.ts';

type Request = IncomingMessage | Http2ServerRequest;
/** What the echo writes, common to HTTP/1.1's and HTTP/2's compatibility responses. */
interface Response {
  writeHead(status: number): Response;
  end(body?: string): unknown;
  setHeader(name: string, value: string): unknown;
  getHeader(name: string): unknown;
}
type Listening = Server;

/** Go's textproto.CanonicalMIMEHeaderKey: each dash-separated word capitalised. */
export function canonicalHeader(name: string): string {
  return name
    .toLowerCase()
    .replace(/(^|-)([a-z])/g, (_all, dash: string, letter: string) => dash + letter.toUpperCase());
}

/** Go's time.ParseDuration for the units a test writes (`500ms`, `2s`, `1m`), in milliseconds. */
function parseDuration(text: string): number {
  const units: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((part) => part[0]).join('') !== text)
    throw new Error(`time: invalid duration "${text}"`);
  return parts.reduce((sum, part) => sum + Number(part[1]) * units[part[2]!]!, 0);
}

function echo(request: Request, response: Response, context: PodContext, httpPort: number): void {
  const url = new URL(request.url ?? '/', 'http://echo');
  const path = url.pathname.replaceAll('//', '/');
  const status = /^\/status\/(\d\d\d)$/.exec(request.url ?? '');
  if (path === '/health') return void response.writeHead(200).end('OK');
  if (path.startsWith('/status/')) return void response.writeHead(status === null ? 400 : Number(status[1])).end();
  const headers: Record<string, string[]> = {};
  const raw = request.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = canonicalHeader(raw[i]!);
    if (name === 'Host' || name.startsWith(':')) continue;
    (headers[name] ??= []).push(raw[i + 1]!);
  }
  const sorted = Object.fromEntries(Object.entries(headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  const body = JSON.stringify(
    {
      path: request.url,
      host: request.headers.host ?? (request as Http2ServerRequest).authority ?? '',
      method: request.method,
      proto: `HTTP/${request.httpVersion === '2.0' ? '2.0' : request.httpVersion}`,
      headers: sorted,
      httpPort: String(httpPort),
      ...context,
    },
    null,
    ' ',
  );
  const reply = () => {
    for (const list of headers['X-Echo-Set-Header'] ?? []) {
      for (const pair of list.split(',')) {
        const [name = '', value = ''] = pair.trim().split(/:(.*)/s);
        const previous = response.getHeader(name);
        response.setHeader(name, previous === undefined ? value : `${previous},${value.trim()}`);
      }
    }
    response.setHeader('Content-Type', 'application/json');
    response.setHeader('X-Content-Type-Options', 'nosniff');
    response.writeHead(200).end(body);
  };
  const delay = url.searchParams.get('delay');
  if (delay === null || delay === '') return reply();
  let ms: number;
  try {
    ms = parseDuration(delay);
  } catch (err) {
    response.setHeader('Content-Type', 'application/json');
    return void response.writeHead(500).end(JSON.stringify({ message: (err as Error).message }));
  }
  setTimeout(reply, ms).unref();
}

export async function serveHttpEcho(env: NodeJS.ProcessEnv, context: PodContext, host: string): Promise<Listening[]> {
  const httpPort = portFrom(env, 'HTTP_PORT', 3000);
  const h2cPort = portFrom(env, 'H2C_PORT', 3001);
  const httpsPort = portFrom(env, 'HTTPS_PORT', 8443);
  const handler = (request: Request, response: object) => echo(request, response as Response, context, httpPort);
  const servers: [Listening, number, string][] = [
    [createHttpServer(handler), httpPort, 'http'],
    [createH2cServer(handler), h2cPort, 'h2c'],
  ];
  const cert = env.TLS_SERVER_CERT ?? '';
  const key = env.TLS_SERVER_PRIVKEY ?? '';
  if (cert !== '' && key !== '')
    servers.push([
      createHttpsServer({ cert: readFileSync(cert), key: readFileSync(key) }, handler),
      httpsPort,
      'https',
    ]);
  await Promise.all(
    servers.map(
      ([server, port, what]) =>
        new Promise<void>((resolve, reject) => {
          server.once('error', reject);
          server.listen(port, host, () => {
            console.log(`Starting server, listening on port ${port} (${what})`);
            resolve();
          });
        }),
    ),
  );
  return servers.map(([server]) => server);
}

/**
 * GRPC_ECHO_SERVER=1: the image's gRPC echo service is not simulated here (no gRPC test runs on this node):
 * HTTP/2 on HTTP_PORT (3000), every call answered UNIMPLEMENTED with that said, so the pod runs and is Ready as
 * the image's would be, and a client that tries it reads why it fails.
 */
export async function serveGrpcUnimplemented(env: NodeJS.ProcessEnv, host: string): Promise<Listening> {
  const port = portFrom(env, 'HTTP_PORT', 3000);
  const server = createH2cServer((_request, response) => {
    response.writeHead(200, {
      'content-type': 'application/grpc',
      'grpc-status': '12',
      'grpc-message': 'the echo-basic gRPC server is not simulated on the canary-l4 test node',
    });
    response.end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  console.log(`gRPC echo not simulated: every call on port ${port} is answered UNIMPLEMENTED`);
  return server;
}
