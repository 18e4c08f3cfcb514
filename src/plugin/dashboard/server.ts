// `kubectl canary-l4 dashboard`'s web server (node:http): one page, its scripts and style (page.ts,
// app-script.ts, charts-script.ts), the releases as JSON, their changes as server-sent events, a
// release's story (status.history, story.ts) and Events, and the actions as
// POSTs. It acts with the user's kubeconfig, so the cluster's RBAC is the dashboard's: a refused
// patch shows the API's answer. A POST needs the token the page got from the server and an Origin of
// this very server (no other site can promote a release); every request needs a Host naming it (no
// DNS rebinding); --read-only refuses every POST.

import { randomBytes, timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import { makeClients } from '../../kube/client.ts';
import { apiFailure, describeError } from '../../kube/patch.ts';
import { KIND } from '../../api/names.ts';
import type { CanaryRelease } from '../../api/release-types.ts';
import { abort, parseWeightTarget, pause, promote, resume, setWeight, type ActionResult } from '../actions.ts';
import { connectAs } from '../cluster.ts';
import { watchReleases } from './live.ts';
import { SCRIPT } from './app-script.ts';
import { CHARTS_SCRIPT } from './charts-script.ts';
import { pageHtml, STYLE } from './page.ts';
import { releaseStory } from './story.ts';
import { releaseDetail, type ActionName } from './view-model.ts';

export interface DashboardOptions {
  readonly kubeConfig: KubeConfig;
  /** undefined: every namespace. */
  readonly namespace: string | undefined;
  /** 0: one the OS picks. */
  readonly port: number;
  readonly address: string;
  readonly readOnly: boolean;
}

export interface Dashboard {
  readonly url: string;
  /** Resolves once the first list of the releases is in. */
  readonly synced: Promise<void>;
  close(): Promise<void>;
}

/** The header a POST carries the page's token in. */
export const TOKEN_HEADER = 'x-canary-l4-token';
const MAX_BODY_BYTES = 4096;
const HEARTBEAT_MS = 15_000;

class Refusal extends Error {
  readonly code: number;
  constructor(code: number, message: string) {
    super(message);
    this.code = code;
  }
}

/** What each action of the page writes: the CLI's own decisions (actions.ts). */
function decide(
  action: string,
  body: { target?: unknown; reason?: unknown },
): (release: CanaryRelease) => ActionResult {
  switch (action as ActionName) {
    case 'promote':
      return (release) => promote(release, false);
    case 'promote-full':
      return (release) => promote(release, true);
    case 'pause':
      return pause;
    case 'resume':
      return resume;
    case 'abort':
      return (release) =>
        abort(release, typeof body.reason === 'string' && body.reason !== '' ? body.reason : undefined);
    case 'set-weight': {
      const target = parseWeightTarget(typeof body.target === 'string' ? body.target : '');
      if (typeof target === 'string') throw new Refusal(400, target);
      return (release) => setWeight(release, target);
    }
    default:
      throw new Refusal(404, `no action ${action}: promote, promote-full, pause, resume, abort or set-weight`);
  }
}

async function readJson(request: IncomingMessage): Promise<Record<string, unknown>> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new Refusal(413, `a body of at most ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text === '') return {};
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // said below
  }
  throw new Refusal(400, 'the body is not a JSON object');
}

const sameToken = (given: string | string[] | undefined, token: Buffer) =>
  typeof given === 'string' && given.length === token.length && timingSafeEqual(Buffer.from(given), token);

export async function startDashboard(options: DashboardOptions): Promise<Dashboard> {
  const token = Buffer.from(randomBytes(24).toString('base64url'));
  const live = await watchReleases(options.kubeConfig, options.namespace);
  const { core } = makeClients(options.kubeConfig);
  const streams = new Set<ServerResponse>();
  /** The Host headers that name this server; bound to every address, any does. */
  let hosts: Set<string> | 'any' = new Set<string>();

  const snapshot = () => {
    const now = new Date();
    const releases = [...live.list()]
      .map((release) => releaseDetail(release, now))
      .sort((a, b) => a.key.localeCompare(b.key));
    return { namespace: options.namespace ?? null, readOnly: options.readOnly, releases };
  };
  const unsubscribe = live.subscribe(() => {
    const data = `event: releases\ndata: ${JSON.stringify(snapshot())}\n\n`;
    for (const stream of streams) stream.write(data);
  });
  const heartbeat = setInterval(() => {
    for (const stream of streams) stream.write(': heartbeat\n\n');
  }, HEARTBEAT_MS);
  heartbeat.unref();

  const send = (response: ServerResponse, code: number, type: string, body: string) => {
    response.writeHead(code, {
      'content-type': type,
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      // The page runs only its own script and style; no frame may hold it (no clickjacking of a button).
      'content-security-policy':
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    });
    response.end(body);
  };
  const json = (response: ServerResponse, code: number, body: unknown) =>
    send(response, code, 'application/json; charset=utf-8', JSON.stringify(body));

  const inScope = (namespace: string) => options.namespace === undefined || options.namespace === namespace;

  const act = async (request: IncomingMessage, namespace: string, name: string, action: string) => {
    if (options.readOnly) throw new Refusal(403, 'the dashboard is read-only (--read-only): it takes no action');
    const origin = request.headers.origin;
    if (origin !== `http://${request.headers.host}`)
      throw new Refusal(403, `a request from ${origin ?? 'no origin'} is not this dashboard's own: refused`);
    if (!sameToken(request.headers[TOKEN_HEADER], token))
      throw new Refusal(403, "the request lacks this dashboard's token: refused");
    if (!inScope(namespace)) throw new Refusal(404, `the dashboard shows namespace ${options.namespace} only`);
    const decision = decide(action, await readJson(request));
    const cluster = connectAs(options.kubeConfig, namespace);
    try {
      const decided = decision(await cluster.release(name));
      if (!decided.ok) throw new Refusal(409, decided.error);
      await cluster.patchRelease(name, decided.action.type, decided.action.patch);
      return { summary: `${KIND} ${namespace}/${name}: ${decided.action.summary}`, patch: decided.action };
    } catch (err) {
      if (err instanceof Refusal) throw err;
      // The API's own answer and code (a 403 of RBAC says who may not do what), not a generic error.
      const failure = apiFailure((err as Error).cause);
      throw new Refusal(failure?.code ?? 502, (err as Error).message);
    }
  };

  const events = async (namespace: string, name: string) => {
    if (!inScope(namespace)) throw new Refusal(404, `the dashboard shows namespace ${options.namespace} only`);
    try {
      const list = await core.listNamespacedEvent({
        namespace,
        fieldSelector: `involvedObject.kind=${KIND},involvedObject.name=${name}`,
      });
      return list.items
        .map((event) => ({
          type: event.type ?? '',
          reason: event.reason ?? '',
          message: event.message ?? '',
          count: event.count ?? 1,
          last: timestamp(event.lastTimestamp ?? event.eventTime ?? event.metadata.creationTimestamp),
        }))
        .sort((a, b) => b.last.localeCompare(a.last));
    } catch (err) {
      throw new Refusal(apiFailure(err)?.code ?? 502, `cannot list the Events of ${name}: ${describeError(err)}`);
    }
  };

  /** The release's story from the watch's cache (no API call): what status.history kept. */
  const story = (namespace: string, name: string) => {
    const release = live.list().find((item) => item.metadata.namespace === namespace && item.metadata.name === name);
    if (release === undefined) throw new Refusal(404, `no CanaryRelease ${namespace}/${name} here`);
    return releaseStory(release, new Date());
  };

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    if (hosts !== 'any' && !hosts.has(request.headers.host ?? ''))
      throw new Refusal(403, `Host ${request.headers.host ?? '(none)'} is not this dashboard's: refused`);
    const url = new URL(request.url ?? '/', `http://${request.headers.host}`);
    const parts = url.pathname
      .split('/')
      .filter((part) => part !== '')
      .map(decodeURIComponent);
    const method = request.method ?? 'GET';
    if (method === 'GET' && url.pathname === '/')
      return send(response, 200, 'text/html; charset=utf-8', pageHtml(token.toString(), options.readOnly));
    if (method === 'GET' && url.pathname === '/app.js')
      return send(response, 200, 'text/javascript; charset=utf-8', SCRIPT);
    if (method === 'GET' && url.pathname === '/charts.js')
      return send(response, 200, 'text/javascript; charset=utf-8', CHARTS_SCRIPT);
    if (method === 'GET' && url.pathname === '/app.css') return send(response, 200, 'text/css; charset=utf-8', STYLE);
    if (method === 'GET' && url.pathname === '/api/releases') return json(response, 200, snapshot());
    if (method === 'GET' && url.pathname === '/api/events') {
      response.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      });
      response.write(`event: releases\ndata: ${JSON.stringify(snapshot())}\n\n`);
      streams.add(response);
      request.on('close', () => streams.delete(response));
      return;
    }
    if (parts[0] === 'api' && parts[1] === 'releases' && parts.length === 5) {
      const [, , namespace = '', name = '', what = ''] = parts;
      if (method === 'GET' && what === 'events') return json(response, 200, await events(namespace, name));
      if (method === 'GET' && what === 'story') return json(response, 200, story(namespace, name));
      if (method === 'POST') return json(response, 200, await act(request, namespace, name, what));
    }
    throw new Refusal(method === 'GET' || method === 'POST' ? 404 : 405, `no ${method} ${url.pathname} here`);
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((err: unknown) => {
      const code = err instanceof Refusal ? err.code : 500;
      if (!response.headersSent) json(response, code, { error: (err as Error).message });
      else response.end();
    });
  });
  server.listen(options.port, options.address);
  try {
    await once(server, 'listening');
  } catch (err) {
    unsubscribe();
    clearInterval(heartbeat);
    await live.stop();
    throw new Error(`cannot serve on ${options.address}:${options.port}: ${(err as Error).message}`);
  }
  const { port } = server.address() as AddressInfo;
  const host = options.address.includes(':') ? `[${options.address}]` : options.address;
  hosts =
    options.address === '0.0.0.0' || options.address === '::'
      ? 'any'
      : new Set([`${host}:${port}`, ...(isLoopback(options.address) ? [`localhost:${port}`] : [])]);
  return {
    url: `http://${host}:${port}/`,
    synced: live.synced,
    async close() {
      unsubscribe();
      clearInterval(heartbeat);
      for (const stream of streams) stream.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await live.stop();
    },
  };
}

/** RFC 3339, as kubectl shows it (the client hands Dates). */
const timestamp = (at: Date | string | undefined) => (at instanceof Date ? at.toISOString() : (at ?? ''));

/** An address only this machine reaches. */
export const isLoopback = (address: string) =>
  address === '::1' || address === 'localhost' || address.startsWith('127.');
