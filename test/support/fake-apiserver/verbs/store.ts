/**
 * The object store: one global resourceVersion counter, the current objects per resource type,
 * an event history for watch replay, and the compaction floor below which history is gone
 * (a watch from an older RV gets 410 Expired). Stored objects are never mutated after they are
 * committed, so events and list results can share them.
 */
import type { KObject } from '../wire/json.ts';

export type EventType = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreEvent {
  rv: number;
  type: EventType;
  /** `group/plural` of the object. */
  key: string;
  object: KObject;
  /** State before this event (MODIFIED/DELETED), used by selector-filtered watches. */
  prev: KObject | undefined;
}

export type Listener = (ev: StoreEvent) => void;

export interface ObjectRef {
  key: string;
  namespace: string;
  name: string;
}

/** Oldest events are compacted automatically beyond this many. */
const MAX_HISTORY = 50_000;

export class Store {
  #rv = 1;
  #floor = 1;
  #objects = new Map<string, Map<string, KObject>>();
  #byUid = new Map<string, ObjectRef>();
  #history: StoreEvent[] = [];
  #listeners = new Set<Listener>();

  get resourceVersion(): number {
    return this.#rv;
  }

  /** History is complete for every RV ≥ floor (events with rv > floor are retained). */
  get compactionFloor(): number {
    return this.#floor;
  }

  /** Allocate the next resourceVersion (written into the object by the caller before commit). */
  nextRv(): number {
    return this.#rv + 1;
  }

  get(key: string, namespace: string, name: string): KObject | undefined {
    return this.#objects.get(key)?.get(`${namespace}/${name}`);
  }

  list(key: string, namespace?: string): KObject[] {
    const m = this.#objects.get(key);
    if (!m) return [];
    const out: KObject[] = [];
    for (const o of m.values()) if (namespace === undefined || (o.metadata?.namespace ?? '') === namespace) out.push(o);
    return out;
  }

  byUid(uid: string): ObjectRef | undefined {
    return this.#byUid.get(uid);
  }

  /** Every stored object with its type key (for the garbage collector). */
  *entries(): Generator<[string, KObject]> {
    for (const [key, m] of this.#objects) for (const o of m.values()) yield [key, o];
  }

  /**
   * Commit a write: bumps the global RV, stamps it on the object, records history and notifies
   * watchers synchronously. For DELETED, `object` is the final state (stamped with the new RV).
   */
  commit(type: EventType, key: string, object: KObject): KObject {
    const rv = ++this.#rv;
    const obj = { ...object, metadata: { ...object.metadata, resourceVersion: String(rv) } };
    const ns = obj.metadata.namespace ?? '';
    const id = `${ns}/${obj.metadata.name}`;
    let m = this.#objects.get(key);
    if (!m) this.#objects.set(key, (m = new Map()));
    const prev = m.get(id);
    if (type === 'DELETED') {
      m.delete(id);
      if (obj.metadata.uid) this.#byUid.delete(obj.metadata.uid);
    } else {
      m.set(id, obj);
      if (obj.metadata.uid) this.#byUid.set(obj.metadata.uid, { key, namespace: ns, name: obj.metadata.name });
    }
    const ev: StoreEvent = { rv, type, key, object: obj, prev };
    this.#history.push(ev);
    if (this.#history.length > MAX_HISTORY) this.compactTo(this.#history[this.#history.length - MAX_HISTORY]!.rv);
    for (const l of [...this.#listeners]) l(ev);
    return obj;
  }

  /** Events with rv > `after` for type `key`; throws if `after` is below the compaction floor. */
  since(after: number, key: string): StoreEvent[] {
    return this.#history.filter((e) => e.rv > after && e.key === key);
  }

  /** Advance the compaction floor (never past the current RV). */
  compactTo(rv: number): void {
    this.#floor = Math.max(this.#floor, Math.min(rv, this.#rv));
    this.#history = this.#history.filter((e) => e.rv > this.#floor);
  }

  subscribe(l: Listener): () => void {
    this.#listeners.add(l);
    return () => this.#listeners.delete(l);
  }

  /** Drop every object of a type (CRD deletion); emits DELETED for each. */
  dropType(key: string): void {
    for (const o of this.list(key)) this.commit('DELETED', key, o);
    this.#objects.delete(key);
  }
}
