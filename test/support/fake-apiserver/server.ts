/**
 * The HTTP layer: node:http on 127.0.0.1, request parsing, routing of resource requests onto
 * {@link FakeApi} verbs and of non-resource requests onto discovery, Status error bodies, the
 * request log, and the connection-level faults (latency, refusing connections).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  FakeApi,
  PATCH_TYPES,
  type DeleteOptions,
  type FieldValidation,
  type Target,
  type WriteOptions,
} from './verbs/api.ts';
import { discovery } from './resources/discovery.ts';
import { openApi } from './resources/openapi.ts';
import { ApiError, errors } from './wire/errors.ts';
import { DeploymentSimulation, type DeploymentSimulationOptions } from './simulation/deployment-simulation.ts';
import { CONTROL_PREFIX, handleControl } from './faults/fault-routes.ts';
import { type FakeFaults, FaultState } from './faults/faults.ts';
import { Controllers } from './verbs/gc.ts';
import { isObject, type KObject } from './wire/json.ts';
import { parseRequestInfo, type RequestInfo } from './wire/request-info.ts';
import { includeObjectOf, toTable, wantsTable } from './resources/table.ts';
import { WatchHub, type WatchSettings } from './verbs/watch.ts';
import { parse as parseYaml } from 'yaml';

/** One served request, in RBAC vocabulary (used to derive least-privilege RBAC rules). */
export interface RequestRecord {
  verb: string;
  group: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  /** The bearer token, standing in for the user name (any token is accepted). */
  user: string;
  /** Set for non-resource requests (discovery, OpenAPI, /version). */
  nonResourceURL?: string;
  method: string;
  code: number;
}

export interface ServerOptions {
  serviceCidr: string;
  gc: boolean;
  watch: WatchSettings;
  /** The Deployment/ReplicaSet controllers and kubelet simulation; off when absent. */
  simulateDeployments?: DeploymentSimulationOptions;
}

const MAX_BODY = 16 * 1024 * 1024;

export class FakeServer {
  readonly api: FakeApi;
  readonly controllers: Controllers;
  readonly deployments: DeploymentSimulation | undefined;
  readonly watches: WatchHub;
  readonly faults = new FaultState();
  /** Fault injection, as `api.faults` offers it and `/_fake/faults` serves it. */
  readonly controls: FakeFaults;
  readonly requests: RequestRecord[] = [];
  /** Told of each request once it is answered (for a watch: once the stream starts). */
  readonly answered = new Set<(record: RequestRecord) => void>();
  readonly #http: Server;
  readonly #sockets = new Set<Socket>();
  #port = 0;
  #host = '127.0.0.1';
  #reopenTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(opts: ServerOptions) {
    this.api = new FakeApi({ serviceCidr: opts.serviceCidr });
    this.controllers = new Controllers(this.api, opts.gc);
    this.deployments = opts.simulateDeployments
      ? new DeploymentSimulation(this.api, opts.simulateDeployments)
      : undefined;
    this.watches = new WatchHub(this.api, opts.watch);
    this.api.onChange = () => this.controllers.schedule();
    this.api.onTypeRemoved = (key) => this.watches.dropType(key);
    this.controls = {
      failNext: (rule) => this.faults.failNext(rule),
      setLatency: (ms) => {
        this.faults.latencyMs = ms;
      },
      dropWatches: (o) => this.watches.dropAll(o?.abrupt ?? false),
      compact: () => this.api.store.compactTo(this.api.store.resourceVersion),
      refuseConnections: (ms) => this.refuseConnections(ms),
      reset: () => this.faults.clear(),
    };
    this.#http = createServer(
      (req, res) => void (req.url?.startsWith(CONTROL_PREFIX) ? this.#control(req, res) : this.#handle(req, res)),
    );
    this.#http.requestTimeout = 0; // watches are long-lived
    this.#http.keepAliveTimeout = 30_000;
    this.#http.on('connection', (s) => {
      this.#sockets.add(s);
      s.on('close', () => this.#sockets.delete(s));
    });
  }

  get port(): number {
    return this.#port;
  }

  async listen(port: number, host = '127.0.0.1'): Promise<void> {
    this.#host = host;
    await new Promise<void>((resolve, reject) => {
      const onError = (e: Error) => reject(e);
      this.#http.once('error', onError);
      this.#http.listen(port, host, () => {
        this.#http.off('error', onError);
        resolve();
      });
    });
    const addr = this.#http.address();
    if (addr && typeof addr === 'object') this.#port = addr.port;
  }

  #closeConnections(): void {
    this.watches.dropAll(true);
    for (const s of this.#sockets) s.destroy();
  }

  /** Close the listener (and every connection); reopen on the same port after `ms`. */
  refuseConnections(ms: number): Promise<void> {
    if (this.#reopenTimer) clearTimeout(this.#reopenTimer);
    this.#http.close();
    this.#closeConnections();
    return new Promise((resolve, reject) => {
      this.#reopenTimer = setTimeout(() => {
        this.#reopenTimer = undefined;
        if (this.#stopped) return resolve();
        this.listen(this.#port, this.#host).then(resolve, reject);
      }, ms);
    });
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#reopenTimer) clearTimeout(this.#reopenTimer);
    this.controllers.stop();
    this.deployments?.stop();
    const closed = new Promise<void>((resolve) => {
      if (!this.#http.listening) return resolve();
      this.#http.close(() => resolve());
    });
    this.#closeConnections();
    this.#http.closeAllConnections();
    await closed;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', `http://${req.headers.host ?? this.#host}`);
    const method = req.method ?? 'GET';
    const info = parseRequestInfo(method, url);
    const record: RequestRecord = {
      verb: info.verb,
      group: info.group,
      resource: info.resource ?? '',
      subresource: info.subresource,
      namespace: info.namespace,
      name: info.name,
      user: /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '',
      method,
      code: 0,
    };
    if (info.resource === undefined) record.nonResourceURL = url.pathname;
    this.requests.push(record);
    try {
      // Unref'd: a request still delayed when the server stops must not keep the process alive.
      if (this.faults.latencyMs > 0) await sleep(this.faults.latencyMs, undefined, { ref: false });
      const body = await readBody(req);
      if (info.resource === undefined) {
        record.code = this.#nonResource(method, url, req, res);
        return;
      }
      const injected = this.faults.take(info, record.user);
      if (injected) throw injected;
      record.code = this.#resource(info, url, req, res, body);
    } catch (e) {
      const err =
        e instanceof ApiError
          ? e
          : new ApiError(500, 'InternalError', `Internal error occurred: ${(e as Error).message}`);
      if (!(e instanceof ApiError)) console.error('fake-apiserver: internal error', e);
      record.code = err.code;
      if (res.headersSent) {
        res.end();
        return;
      }
      const headers: Record<string, string> = {};
      if (err.code === 429) headers['Retry-After'] = String(err.details?.retryAfterSeconds ?? 1);
      send(res, err.code, err.toStatus(), headers);
    } finally {
      for (const listener of this.answered) listener(record);
    }
  }

  /** `/_fake/...`: outside the API, so neither faulted, delayed nor logged. */
  async #control(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const url = new URL(req.url ?? '/', `http://${this.#host}`);
      const reply = handleControl(this.controls, req.method ?? 'GET', url.pathname, await readBody(req));
      send(res, reply.code, reply.body, reply.afterFlush ? { Connection: 'close' } : {}, reply.afterFlush);
    } catch (e) {
      const err =
        e instanceof ApiError
          ? e
          : new ApiError(500, 'InternalError', `Internal error occurred: ${(e as Error).message}`);
      send(res, err.code, err.toStatus());
    }
  }

  #nonResource(method: string, url: URL, req: IncomingMessage, res: ServerResponse): number {
    const p = url.pathname;
    if (method !== 'GET' && method !== 'HEAD') throw errors.methodNotAllowed();
    if (p === '/healthz' || p === '/livez' || p === '/readyz') {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=utf-8' });
      res.end('ok');
      return 200;
    }
    if (p.startsWith('/openapi/')) {
      const doc = openApi(this.api.registry, p, req.headers.accept);
      if (!doc) throw errors.noRoute();
      res.writeHead(200, { 'Content-Type': doc.contentType, 'Content-Length': doc.body.length });
      res.end(doc.body);
      return 200;
    }
    const doc = discovery(this.api.registry, p, req.headers.host ?? `${this.#host}:${this.#port}`);
    if (!doc) throw errors.noRoute();
    send(res, 200, doc);
    return 200;
  }

  #resource(info: RequestInfo, url: URL, req: IncomingMessage, res: ServerResponse, body: unknown): number {
    const q = url.searchParams;
    const rt = this.api.registry.lookup(info.group, info.version, info.resource!);
    if (!rt) throw errors.noRoute();
    const collectionVerb = info.verb === 'list' || info.verb === 'watch' || info.verb === 'deletecollection';
    if (rt.namespaced && !info.namespace && !(collectionVerb && !info.name)) throw errors.noRoute();
    if (!rt.namespaced && info.namespace) throw errors.noRoute();
    const scale = info.subresource === 'scale' && rt.scaleSubresource === true;
    if (info.subresource && !(info.subresource === 'status' && rt.statusSubresource) && !scale) throw errors.noRoute();
    if (info.subresource && !['get', 'update', 'patch'].includes(info.verb)) throw errors.methodNotAllowed();
    const t: Target = { rt, version: info.version, namespace: info.namespace };
    const dryRun = q.getAll('dryRun').includes('All');
    const warnings: string[] = [];
    const admission: WriteOptions = { dryRun, fieldValidation: fieldValidation(q), warnings };
    // Warn's findings ride on the answer as `Warning: 299 - "..."` headers, which kubectl prints.
    const answer = (code: number, body: unknown) =>
      send(res, code, body, warnings.length ? { Warning: warnings.map((w) => `299 - ${JSON.stringify(w)}`) } : {});
    // kubectl get asks for a Table (server-side printing); everyone else gets the objects.
    const table = wantsTable(req.headers.accept) && !info.subresource;
    const includeObject = includeObjectOf(q.get('includeObject'));
    switch (info.verb) {
      case 'get': {
        if (scale) return send(res, 200, this.api.getScale(t, info.name));
        const found = this.api.get(t, info.name);
        return send(
          res,
          200,
          table ? toTable(rt, [found], { resourceVersion: found.metadata.resourceVersion }, { includeObject }) : found,
        );
      }
      case 'list': {
        const found = this.api.list(t, {
          labelSelector: q.get('labelSelector') ?? undefined,
          fieldSelector: q.get('fieldSelector') ?? undefined,
          limit: q.has('limit') ? Number(q.get('limit')) : undefined,
          continue: q.get('continue') ?? undefined,
        });
        return send(res, 200, table ? toTable(rt, found.items, found.metadata, { includeObject }) : found);
      }
      case 'watch': {
        let fieldSelector = q.get('fieldSelector') ?? undefined;
        if (info.name) fieldSelector = [fieldSelector, `metadata.name=${info.name}`].filter(Boolean).join(',');
        this.watches.serve(
          t,
          {
            resourceVersion: q.get('resourceVersion') ?? undefined,
            labelSelector: q.get('labelSelector') ?? undefined,
            fieldSelector,
            timeoutSeconds: q.has('timeoutSeconds') ? Number(q.get('timeoutSeconds')) : undefined,
            allowWatchBookmarks: q.get('allowWatchBookmarks') === 'true' || q.get('allowWatchBookmarks') === '1',
            sendInitialEvents: q.get('sendInitialEvents') === 'true',
          },
          req,
          res,
          // kubectl get -w: each event's object is a one-row Table, column definitions in the first only.
          table
            ? (object, first) => toTable(rt, [object], object.metadata, { noHeaders: !first, includeObject })
            : undefined,
        );
        return 200;
      }
      case 'create':
        if (info.name) throw errors.methodNotAllowed();
        return answer(201, this.api.create(t, body, admission));
      case 'update':
        if (scale) {
          if (!isObject(body)) throw errors.badRequest('the body of the request was not a JSON object');
          return send(
            res,
            200,
            this.api.updateScale(t, info.name, () => body, { dryRun }),
          );
        }
        return answer(200, this.api.update(t, info.name, body, info.subresource, admission));
      case 'patch': {
        const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        if (contentType === PATCH_TYPES.apply && !scale) {
          const r = this.api.apply(t, info.name, body, info.subresource, {
            ...admission,
            fieldManager: q.get('fieldManager') ?? undefined,
          });
          return answer(r.code, r.body);
        }
        if (q.has('force'))
          throw errors.invalid('meta.k8s.io', 'PatchOptions', '', [
            {
              field: 'force',
              message: 'Forbidden: may not be specified for non-apply patch',
              reason: 'FieldValueForbidden',
            },
          ]);
        return answer(200, this.api.patch(t, info.name, contentType, body, info.subresource, admission));
      }
      case 'delete': {
        const r = this.api.delete(t, info.name, deleteOptions(q, body, dryRun));
        return send(res, r.code, r.body);
      }
      case 'deletecollection': {
        const list = this.api.list(t, {
          labelSelector: q.get('labelSelector') ?? undefined,
          fieldSelector: q.get('fieldSelector') ?? undefined,
        });
        const opts = deleteOptions(q, body, dryRun);
        for (const item of list.items as KObject[]) {
          try {
            this.api.delete({ ...t, namespace: item.metadata.namespace ?? '' }, item.metadata.name, opts);
          } catch (e) {
            if (!(e instanceof ApiError && e.code === 404)) throw e;
          }
        }
        return send(res, 200, list);
      }
      default:
        throw errors.methodNotAllowed();
    }
  }
}

function deleteOptions(query: URLSearchParams, body: unknown, dryRun: boolean): DeleteOptions {
  // kube-apiserver reads DeleteOptions from the body when there is one and from the query string
  // only when there is none: gracePeriodSeconds=0 in the query beside a body of preconditions is lost.
  const fromBody = isObject(body);
  const b: KObject = fromBody ? body : {};
  const q = fromBody ? new URLSearchParams() : query;
  let policy = q.get('propagationPolicy') ?? b.propagationPolicy;
  const orphan = q.get('orphanDependents') ?? b.orphanDependents;
  if (policy === undefined && (orphan === true || orphan === 'true')) policy = 'Orphan';
  const bodyDry = Array.isArray(b.dryRun) && b.dryRun.includes('All');
  // client-node sends it as a query parameter, kubectl (--grace-period) in the body.
  const grace = q.get('gracePeriodSeconds') ?? b.gracePeriodSeconds ?? undefined;
  const gracePeriodSeconds = grace === undefined ? undefined : Number(grace);
  if (gracePeriodSeconds !== undefined && !Number.isSafeInteger(gracePeriodSeconds))
    throw errors.badRequest(`invalid gracePeriodSeconds: ${JSON.stringify(grace)}`);
  return {
    propagationPolicy: policy,
    preconditions: isObject(b.preconditions) ? b.preconditions : undefined,
    dryRun: (!fromBody && dryRun) || bodyDry,
    gracePeriodSeconds,
  };
}

/** The `fieldValidation` query parameter (absent: Warn, the server's default); anything else is a 400. */
function fieldValidation(q: URLSearchParams): FieldValidation | undefined {
  const v = q.get('fieldValidation');
  if (v === null || v === '') return undefined;
  if (v === 'Strict' || v === 'Warn' || v === 'Ignore') return v;
  throw errors.badRequest(`fieldValidation parameter unsupported: ${v}`);
}

function send(
  res: ServerResponse,
  code: number,
  body: unknown,
  headers: Record<string, string | string[]> = {},
  flushed?: () => void,
): number {
  const data = JSON.stringify(body);
  res.writeHead(code, {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-cache, private',
    'Content-Length': Buffer.byteLength(data),
    ...headers,
  });
  res.end(data, flushed);
  return code;
}

async function readBody(req: IncomingMessage): Promise<unknown> {
  if (req.method === 'GET' || req.method === 'HEAD') {
    req.resume();
    return undefined;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw new ApiError(413, 'BadRequest', 'request entity too large');
    chunks.push(c as Buffer);
  }
  const raw = Buffer.concat(chunks);
  if (raw.length === 0) return undefined;
  const contentType = (req.headers['content-type'] ?? 'application/json').split(';')[0]!.trim().toLowerCase();
  // Protobuf and CBOR bodies (kubectl's typed clients, e.g. `kubectl create configmap`) are not decoded.
  if (contentType.includes('protobuf') || contentType.includes('cbor'))
    throw errors.unsupportedMediaType(contentType, [
      'application/json',
      'application/yaml',
      'application/merge-patch+json',
      'application/json-patch+json',
      'application/strategic-merge-patch+json',
    ]);
  const text = raw.toString('utf8').trim();
  if (text === '') return undefined;
  if (contentType === 'application/yaml' || contentType === 'application/apply-patch+yaml') {
    try {
      return parseYaml(text);
    } catch (e) {
      throw errors.badRequest(`the body of the request could not be decoded as YAML: ${(e as Error).message}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (e) {
    throw errors.badRequest(`the body of the request could not be decoded as JSON: ${(e as Error).message}`);
  }
}
