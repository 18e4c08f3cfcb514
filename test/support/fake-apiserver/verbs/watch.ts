/**
 * Watch streams: newline-delimited JSON events over a chunked 200 response whose headers are
 * flushed at once (client-node's `Watch` resolves on headers). Replays history after the given
 * resourceVersion, or sends synthetic ADDED events when there is none; answers an RV below the
 * compaction floor with a 410 Expired ERROR event; sends BOOKMARKs when asked; closes after
 * `timeoutSeconds` or a randomized server timeout. A watch list (`sendInitialEvents=true`, as
 * client-go's reflectors and kubectl 1.37's `rollout status` open them) gets the current objects as
 * ADDED events, then a BOOKMARK annotated `k8s.io/initial-events-end: "true"`, then the changes.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FakeApi, Target } from './api.ts';
import { errors } from '../wire/errors.ts';
import type { KObject } from '../wire/json.ts';
import { apiVersionOf, typeKey } from '../resources/registry.ts';
import type { StoreEvent } from './store.ts';

export interface WatchParams {
  resourceVersion?: string;
  labelSelector?: string;
  fieldSelector?: string;
  timeoutSeconds?: number;
  allowWatchBookmarks?: boolean;
  /** A watch list: the current state first, ended by the initial-events-end bookmark. */
  sendInitialEvents?: boolean;
}

export interface WatchSettings {
  /** Server-side timeout range in seconds when the client gives no timeoutSeconds. */
  timeoutRange: [number, number];
  bookmarkIntervalMs: number;
}

interface ActiveWatch {
  key: string;
  close(abrupt: boolean): void;
}

export class WatchHub {
  readonly #api: FakeApi;
  readonly #settings: WatchSettings;
  readonly #active = new Set<ActiveWatch>();

  constructor(api: FakeApi, settings: WatchSettings) {
    this.#api = api;
    this.#settings = settings;
  }

  get count(): number {
    return this.#active.size;
  }

  /** End every open stream: cleanly (client re-watches from its RV) or by resetting the socket. */
  dropAll(abrupt = false): number {
    const n = this.#active.size;
    for (const w of [...this.#active]) w.close(abrupt);
    return n;
  }

  dropType(key: string): void {
    for (const w of [...this.#active]) if (w.key === key) w.close(false);
  }

  /** Validate parameters (may throw an ApiError before any byte is sent), then stream. */
  serve(
    t: Target,
    params: WatchParams,
    req: IncomingMessage,
    res: ServerResponse,
    render?: (object: KObject, first: boolean) => KObject,
  ): void {
    const api = this.#api;
    const key = typeKey(t.rt.group, t.rt.plural);
    const match = api.matcher(t.rt, params.labelSelector, params.fieldSelector);
    const nsFilter = t.rt.namespaced && t.namespace ? t.namespace : undefined;
    const inScope = (o: KObject) => nsFilter === undefined || o.metadata?.namespace === nsFilter;
    const rvParam = params.resourceVersion;
    let fromRv: number | undefined;
    if (rvParam !== undefined && rvParam !== '' && rvParam !== '0') {
      if (!/^\d+$/.test(rvParam)) throw errors.badRequest(`invalid resource version: "${rvParam}"`);
      fromRv = Number(rvParam);
    }

    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-cache, private',
      'Transfer-Encoding': 'chunked',
    });
    res.flushHeaders();
    res.socket?.setNoDelay(true);

    let closed = false;
    let objectsSent = 0;
    const send = (type: string, object: KObject) => {
      if (closed) return;
      const shown =
        render !== undefined && type !== 'BOOKMARK' && type !== 'ERROR' ? render(object, objectsSent++ === 0) : object;
      res.write(`${JSON.stringify({ type, object: shown })}\n`);
    };
    const bookmark = (annotations?: Record<string, string>) =>
      send('BOOKMARK', {
        kind: t.rt.kind,
        apiVersion: apiVersionOf(t.rt.group, t.version),
        metadata: { resourceVersion: String(api.store.resourceVersion), ...(annotations ? { annotations } : {}) },
      });

    const timers: NodeJS.Timeout[] = [];
    let unsubscribe: () => void = () => {};
    const watch: ActiveWatch = {
      key,
      close: (abrupt) => {
        if (closed) return;
        closed = true;
        for (const tm of timers) clearTimeout(tm);
        unsubscribe();
        this.#active.delete(watch);
        if (abrupt) res.socket?.destroy();
        else res.end();
      },
    };
    this.#active.add(watch);
    req.on('close', () => watch.close(false));
    res.on('close', () => watch.close(false));

    if (fromRv !== undefined && fromRv < api.store.compactionFloor) {
      send(
        'ERROR',
        errors
          .expired(`too old resource version: ${fromRv} (${api.store.compactionFloor})`)
          .toStatus() as unknown as KObject,
      );
      watch.close(false);
      return;
    }

    const deliver = (ev: StoreEvent) => {
      if (ev.key !== key) return;
      const now = inScope(ev.object) && match(ev.object);
      const before = ev.prev !== undefined && inScope(ev.prev) && match(ev.prev);
      if (ev.type === 'ADDED') {
        if (now) send('ADDED', api.present(t, ev.object));
      } else if (ev.type === 'DELETED') {
        if (now || before) send('DELETED', api.present(t, ev.object));
      } else if (now && before) send('MODIFIED', api.present(t, ev.object));
      else if (now) send('ADDED', api.present(t, ev.object));
      else if (before) {
        // Stopped matching the selector: the previous state, stamped with the event's RV.
        const prev = ev.prev!;
        send('DELETED', api.present(t, { ...prev, metadata: { ...prev.metadata, resourceVersion: String(ev.rv) } }));
      }
    };

    if (fromRv === undefined || params.sendInitialEvents) {
      for (const o of api.store.list(key, nsFilter)) if (match(o)) send('ADDED', api.present(t, o));
      if (params.sendInitialEvents) bookmark({ 'k8s.io/initial-events-end': 'true' });
    } else {
      for (const ev of api.store.since(fromRv, key)) deliver(ev);
    }
    unsubscribe = api.store.subscribe(deliver);

    const [min, max] = this.#settings.timeoutRange;
    const timeoutMs =
      params.timeoutSeconds !== undefined && params.timeoutSeconds > 0
        ? params.timeoutSeconds * 1000
        : (min + Math.random() * Math.max(0, max - min)) * 1000;
    timers.push(
      setTimeout(() => {
        if (params.allowWatchBookmarks) bookmark();
        watch.close(false);
      }, timeoutMs),
    );
    if (params.allowWatchBookmarks) {
      const interval = setInterval(bookmark, this.#settings.bookmarkIntervalMs);
      timers.push(interval);
    }
  }
}
