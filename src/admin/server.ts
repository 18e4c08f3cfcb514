// The admin HTTP server: /metrics for Prometheus, /healthz (the process answers), /readyz (the
// data plane serves its config and is not draining), /config (the running config as JSON).
// It holds at most ADMIN_MAX_CONNECTIONS connections, whose descriptors the data plane's budget
// leaves alone, and a client must send its request headers within seconds: a flood of half-sent
// requests can neither take the process's descriptors nor keep a slot for long.
import http from 'node:http';
import type { Logger } from 'pino';
import { ADMIN_MAX_CONNECTIONS } from '../defaults.ts';
import { ConfigError } from '../errors.ts';
import { ThrottledWarning } from '../log.ts';
import type { L4Config } from '../config/types.ts';
import { Slicer } from '../util/slicer.ts';
import type { MetricsEndpoint } from './metrics.ts';

/** A request's headers must be in by then (checked every second), the whole request soon after. */
const HEADERS_TIMEOUT_MS = 5_000;
const REQUEST_TIMEOUT_MS = 10_000;
/** A connection with no byte either way for this long is closed (a kept-alive one sooner). */
const IDLE_TIMEOUT_MS = 30_000;
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** Bodies go out in chunks of about this many characters. */
const CHUNK_CHARS = 64 * 1024;

export interface AdminSources {
  /** The Prometheus text exposition; undefined with --no-metrics. */
  readonly metrics: MetricsEndpoint | undefined;
  readonly isReady: () => boolean;
  /** The running config; undefined with --no-config-endpoint. */
  readonly config: (() => L4Config) | undefined;
  /** The per-backend counters as JSON (what a canary's analysis reads from every replica); undefined: none. */
  readonly stats?: () => unknown;
}

export interface AdminAddress {
  /** undefined: every address, IPv4 and IPv6. */
  readonly host: string | undefined;
  readonly port: number;
}

export interface AdminServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startAdminServer(
  { host, port }: AdminAddress,
  sources: AdminSources,
  log: Logger,
): Promise<AdminServer> {
  const server = http.createServer(
    {
      headersTimeout: HEADERS_TIMEOUT_MS,
      requestTimeout: REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: 1_000,
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    },
    (req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      const send = (status: number, contentType: string, body: string) => {
        res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
        res.end(body);
      };
      if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'text/plain', 'method not allowed\n');
      switch (path) {
        case '/metrics':
          if (sources.metrics === undefined) return send(404, 'text/plain', 'metrics are off (--no-metrics)\n');
          void streamBody(res, sources.metrics.contentType, sources.metrics.render(), req.method === 'HEAD', log);
          return;
        case '/healthz':
          return send(200, 'text/plain', 'ok\n');
        case '/readyz':
          return sources.isReady() ? send(200, 'text/plain', 'ready\n') : send(503, 'text/plain', 'not ready\n');
        case '/config':
          if (sources.config === undefined)
            return send(404, 'text/plain', 'the config endpoint is off (--no-config-endpoint)\n');
          void streamBody(res, 'application/json', configJson(sources.config()), req.method === 'HEAD', log);
          return;
        case '/stats':
          if (sources.stats === undefined) return send(404, 'text/plain', 'no per-backend counters here\n');
          return send(200, 'application/json', JSON.stringify(sources.stats()));
        default:
          return send(404, 'text/plain', 'not found: try /metrics, /healthz, /readyz, /config or /stats\n');
      }
    },
  );
  server.maxConnections = ADMIN_MAX_CONNECTIONS;
  server.setTimeout(IDLE_TIMEOUT_MS, (socket) => socket.destroy());
  const capReached = new ThrottledWarning(
    log,
    `admin server at its ${ADMIN_MAX_CONNECTIONS} connections: new ones are closed at once (a client that opens many and sends nothing is held ${HEADERS_TIMEOUT_MS / 1000} s at most)`,
  );
  server.on('drop', (dropped?: { remoteAddress?: string }) =>
    capReached.note(() => ({ remoteAddress: dropped?.remoteAddress })),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new ConfigError(
          `--admin-address ${host ?? '*'} --admin-port ${port}`,
          [
            `cannot listen (${err.code ?? err.message}); choose another port (0: any free one) or an address of this host`,
          ],
          { cause: err },
        ),
      ),
    );
    server.listen({ host, port }, resolve);
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address !== null ? address.port : port,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Writes a body as it is rendered, waiting for the client to take each chunk: a scrape of 100 MB
 * neither sits whole in memory nor outruns a slow reader.
 */
async function streamBody(
  res: http.ServerResponse,
  contentType: string,
  body: AsyncIterable<string>,
  headOnly: boolean,
  log: Logger,
): Promise<void> {
  const chunks = body[Symbol.asyncIterator]();
  try {
    // The first chunk before the headers: a failure there can still be a 500.
    const first = await chunks.next();
    res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' });
    if (headOnly) return void res.end();
    for (let chunk = first; !chunk.done && !res.destroyed; chunk = await chunks.next()) {
      if (!res.write(chunk.value)) await drainedOrClosed(res);
    }
    res.end();
  } catch (err) {
    log.error({ err, path: res.req.url }, 'admin endpoint failed');
    if (res.headersSent) res.destroy();
    else res.writeHead(500, { 'content-type': 'text/plain' }).end(`failed: ${(err as Error).message}\n`);
  } finally {
    await chunks.return?.();
  }
}

function drainedOrClosed(res: http.ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/** What JSON.stringify(config, null, 2) gives, rendered a listener at a time (7 MB at 10 000 listeners). */
async function* configJson(config: L4Config): AsyncGenerator<string> {
  const slicer = new Slicer();
  let chunk = '{\n  "listeners": [';
  for (let i = 0; i < config.listeners.length; i++) {
    chunk += `${i === 0 ? '' : ','}\n${JSON.stringify(config.listeners[i], null, 2).replace(/^/gm, '    ')}`;
    if (chunk.length >= CHUNK_CHARS) {
      yield chunk;
      chunk = '';
    }
    if (slicer.due()) await slicer.pause();
  }
  yield `${chunk}${config.listeners.length === 0 ? ']' : '\n  ]'}\n}\n`;
}
