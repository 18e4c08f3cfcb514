// The admin HTTP server: /metrics for Prometheus, /healthz (the process answers), /readyz (the
// data plane serves its config and is not draining), /config (the running config as JSON).
import http from 'node:http';
import type { Logger } from 'pino';

export interface AdminSources {
  /** The Prometheus text exposition; undefined with --no-metrics. */
  readonly metrics: { metrics(): Promise<string>; readonly contentType: string } | undefined;
  readonly isReady: () => boolean;
  readonly config: () => unknown;
}

export interface AdminServer {
  readonly port: number;
  close(): Promise<void>;
}

export async function startAdminServer(host: string | undefined, port: number, sources: AdminSources, log: Logger): Promise<AdminServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, contentType: string, body: string) => {
      res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'text/plain', 'method not allowed\n');
    switch (path) {
      case '/metrics':
        if (sources.metrics === undefined) return send(404, 'text/plain', 'metrics are off (--no-metrics)\n');
        sources.metrics.metrics().then(
          (text) => send(200, sources.metrics!.contentType, text),
          (err: Error) => {
            log.error({ err }, 'metrics collection failed');
            send(500, 'text/plain', `metrics collection failed: ${err.message}\n`);
          },
        );
        return;
      case '/healthz':
        return send(200, 'text/plain', 'ok\n');
      case '/readyz':
        return sources.isReady() ? send(200, 'text/plain', 'ready\n') : send(503, 'text/plain', 'not ready\n');
      case '/config':
        return send(200, 'application/json', JSON.stringify(sources.config(), null, 2) + '\n');
      default:
        return send(404, 'text/plain', 'not found: try /metrics, /healthz, /readyz or /config\n');
    }
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new Error(`--admin-port ${port}: cannot listen (${err.code ?? err.message}); choose another port or 0 for any free one`)),
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
