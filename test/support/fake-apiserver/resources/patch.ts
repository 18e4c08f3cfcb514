/**
 * Three of the patch formats kube-apiserver accepts for PATCH: JSON merge patch (RFC 7386), JSON
 * patch (RFC 6902) and strategic merge patch for built-in kinds (server-side apply: apply.ts).
 * Pure functions: they never mutate their inputs. Failures throw {@link PatchError}; `kind`
 * says whether the patch itself was malformed (400) or could not be applied (422).
 */
import { clone, deepEqual, isObject } from '../wire/json.ts';

export class PatchError extends Error {
  readonly kind: 'malformed' | 'failed';
  constructor(kind: 'malformed' | 'failed', message: string) {
    super(message);
    this.kind = kind;
  }
}

// ---------------------------------------------------------------- RFC 7386 JSON merge patch

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (Array.isArray(patch)) return pruneNulls(patch);
  if (!isObject(patch)) return clone(patch);
  const out: Record<string, unknown> = isObject(target) ? clone(target) : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/**
 * A value a merge patch puts in place as it is (an array), as kube-apiserver's merge patch
 * (evanphx/json-patch) puts it: without the keys its objects set to null, at any depth (null
 * elements of an array stay). So `{"ports":[{"port":80,"override":null}]}` stores `[{"port":80}]`.
 */
function pruneNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((item) => (item === null ? null : pruneNulls(item)));
  if (!isObject(value)) return clone(value);
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, item]) => item !== null)
      .map(([key, item]) => [key, pruneNulls(item)]),
  );
}

// ---------------------------------------------------------------- RFC 6902 JSON patch

export interface JsonPatchOp {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  from?: string;
  value?: unknown;
}

function parsePointer(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw new PatchError('malformed', `invalid JSON pointer "${pointer}"`);
  return pointer
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}

function arrayIndex(arr: unknown[], token: string, forAdd: boolean): number {
  if (token === '-' && forAdd) return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new PatchError('failed', `invalid array index "${token}"`);
  const i = Number(token);
  if (i > arr.length || (!forAdd && i === arr.length)) throw new PatchError('failed', `array index ${i} out of bounds`);
  return i;
}

/** Returns the parent container and last token for a pointer; throws if the parent is missing. */
function resolveParent(doc: unknown, tokens: string[], pointer: string): { parent: any; key: string } {
  let cur: any = doc;
  for (const t of tokens.slice(0, -1)) {
    if (Array.isArray(cur)) cur = cur[arrayIndex(cur, t, false)];
    else if (isObject(cur) && Object.hasOwn(cur, t)) cur = cur[t];
    else throw new PatchError('failed', `doc is missing path: "${pointer}"`);
  }
  if (!Array.isArray(cur) && !isObject(cur)) throw new PatchError('failed', `doc is missing path: "${pointer}"`);
  return { parent: cur, key: tokens[tokens.length - 1]! };
}

function getAt(doc: unknown, pointer: string): unknown {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return doc;
  const { parent, key } = resolveParent(doc, tokens, pointer);
  if (Array.isArray(parent)) return parent[arrayIndex(parent, key, false)];
  if (!Object.hasOwn(parent, key)) throw new PatchError('failed', `doc is missing path: "${pointer}"`);
  return parent[key];
}

function removeAt(doc: unknown, pointer: string): unknown {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) throw new PatchError('failed', 'cannot remove the document root');
  const { parent, key } = resolveParent(doc, tokens, pointer);
  if (Array.isArray(parent)) return parent.splice(arrayIndex(parent, key, false), 1)[0];
  if (!Object.hasOwn(parent, key))
    throw new PatchError('failed', `unable to remove nonexistent key: ${key}: missing value`);
  const v = parent[key];
  delete parent[key];
  return v;
}

function addAt(doc: unknown, pointer: string, value: unknown): unknown {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return clone(value);
  const { parent, key } = resolveParent(doc, tokens, pointer);
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, key, true), 0, clone(value));
  else parent[key] = clone(value);
  return doc;
}

export function jsonPatch(target: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops))
    throw new PatchError('malformed', 'json: cannot unmarshal object into Go value of type jsonpatch.Patch');
  let doc: unknown = clone(target);
  for (const raw of ops) {
    if (!isObject(raw) || typeof raw.op !== 'string' || typeof raw.path !== 'string')
      throw new PatchError('malformed', `invalid JSON patch operation: ${JSON.stringify(raw)}`);
    const op = raw as JsonPatchOp;
    switch (op.op) {
      case 'add':
        if (!('value' in raw)) throw new PatchError('malformed', `missing value for add at ${op.path}`);
        doc = addAt(doc, op.path, op.value);
        break;
      case 'remove':
        removeAt(doc, op.path);
        break;
      case 'replace': {
        if (!('value' in raw)) throw new PatchError('malformed', `missing value for replace at ${op.path}`);
        const tokens = parsePointer(op.path);
        if (tokens.length === 0) {
          doc = clone(op.value);
          break;
        }
        getAt(doc, op.path); // must exist
        removeAt(doc, op.path);
        doc = addAt(doc, op.path, op.value);
        break;
      }
      case 'move': {
        if (typeof op.from !== 'string') throw new PatchError('malformed', 'move needs "from"');
        const v = removeAt(doc, op.from);
        doc = addAt(doc, op.path, v);
        break;
      }
      case 'copy': {
        if (typeof op.from !== 'string') throw new PatchError('malformed', 'copy needs "from"');
        doc = addAt(doc, op.path, getAt(doc, op.from));
        break;
      }
      case 'test': {
        const actual = (() => {
          try {
            return getAt(doc, op.path);
          } catch {
            return undefined;
          }
        })();
        if (!deepEqual(actual, op.value))
          throw new PatchError('failed', `testing value ${op.path} failed: test failed`);
        break;
      }
      default:
        throw new PatchError('malformed', `Unexpected kind: ${String((raw as any).op)}`);
    }
  }
  return doc;
}

// ---------------------------------------------------------------- strategic merge patch

/**
 * Patch metadata for one list field, keyed by its dotted path from the object root with array
 * elements transparent (`spec.template.spec.containers.ports`). `mergeKey` lists merge by that key;
 * `set` primitive lists merge as a union; anything absent from the table is replaced wholesale.
 */
export interface ListMeta {
  mergeKey?: string;
  /** Server-side apply's keys (x-kubernetes-list-map-keys) when they are more than `mergeKey`. */
  listMapKeys?: string[];
  set?: boolean;
}
export type PatchMeta = Record<string, ListMeta>;

const DIRECTIVE = '$patch';
const SET_ORDER = '$setElementOrder/';
const DELETE_PRIMITIVE = '$deleteFromPrimitiveList/';
const RETAIN_KEYS = '$retainKeys';

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

/** Applies a strategic merge patch using `meta` for list semantics. */
export function strategicMergePatch(target: unknown, patch: unknown, meta: PatchMeta): unknown {
  if (!isObject(patch)) throw new PatchError('malformed', 'strategic merge patch must be a JSON object');
  const out = smpMap(isObject(target) ? clone(target) : {}, patch, meta, '');
  return out ?? {};
}

function smpMap(
  original: Record<string, any>,
  patch: Record<string, any>,
  meta: PatchMeta,
  path: string,
): Record<string, any> | undefined {
  const directive = patch[DIRECTIVE];
  if (directive === 'delete') return undefined;
  if (directive === 'replace') {
    const rest = clone(patch);
    delete rest[DIRECTIVE];
    return stripDirectives(rest);
  }
  if (directive !== undefined && directive !== 'merge')
    throw new PatchError('malformed', `Unknown patch type: ${String(directive)}`);
  const out = original;
  const orders: Array<[string, unknown[]]> = [];
  if (Array.isArray(patch[RETAIN_KEYS])) {
    const keep = new Set<string>(patch[RETAIN_KEYS] as string[]);
    for (const k of Object.keys(out)) if (!keep.has(k) && !(k in patch)) delete out[k];
  }
  for (const [k, v] of Object.entries(patch)) {
    if (k === DIRECTIVE || k === RETAIN_KEYS) continue;
    if (k.startsWith(SET_ORDER)) {
      if (!Array.isArray(v)) throw new PatchError('malformed', `${k} must be a list`);
      orders.push([k.slice(SET_ORDER.length), v]);
      continue;
    }
    if (k.startsWith(DELETE_PRIMITIVE)) {
      const field = k.slice(DELETE_PRIMITIVE.length);
      if (!Array.isArray(v)) throw new PatchError('malformed', `${k} must be a list`);
      if (Array.isArray(out[field]))
        out[field] = (out[field] as unknown[]).filter((x) => !v.some((d) => deepEqual(d, x)));
      continue;
    }
    const p = join(path, k);
    if (v === null) {
      delete out[k];
    } else if (isObject(v)) {
      const merged = smpMap(isObject(out[k]) ? out[k] : {}, v, meta, p);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    } else if (Array.isArray(v)) {
      const lm = meta[p];
      out[k] = lm ? smpList(Array.isArray(out[k]) ? out[k] : [], v, lm, meta, p) : stripDirectives(clone(v));
    } else {
      out[k] = v;
    }
  }
  for (const [field, order] of orders) {
    if (Array.isArray(out[field])) out[field] = applyOrder(out[field], order, meta[join(path, field)]);
  }
  return out;
}

function smpList(original: unknown[], patch: unknown[], lm: ListMeta, meta: PatchMeta, path: string): unknown[] {
  // `{"$patch": "replace"}` inside a list replaces the whole list with the other elements.
  if (patch.some((e) => isObject(e) && e[DIRECTIVE] === 'replace')) {
    return stripDirectives(clone(patch.filter((e) => !(isObject(e) && e[DIRECTIVE] === 'replace')))) as unknown[];
  }
  if (!lm.mergeKey) {
    // Primitive set-like list (finalizers): union, keeping the original order first.
    const out = clone(original);
    for (const e of patch) if (!out.some((x) => deepEqual(x, e))) out.push(clone(e));
    return out;
  }
  const key = lm.mergeKey;
  const out = clone(original) as Array<Record<string, any>>;
  for (const e of patch) {
    if (!isObject(e)) throw new PatchError('malformed', `list ${path} with merge key ${key} must contain objects`);
    if (!(key in e))
      throw new PatchError('failed', `map: ${JSON.stringify(e)} does not contain declared merge key: ${key}`);
    const idx = out.findIndex((x) => isObject(x) && deepEqual(x[key], e[key]));
    if (e[DIRECTIVE] === 'delete') {
      if (idx >= 0) out.splice(idx, 1);
      continue;
    }
    if (idx >= 0) {
      const merged = smpMap(out[idx]!, e, meta, path);
      if (merged === undefined) out.splice(idx, 1);
      else out[idx] = merged;
    } else {
      out.push(stripDirectives(clone(e)) as Record<string, any>);
    }
  }
  return out;
}

/**
 * `$setElementOrder`: elements named in `order` come in that order; elements only the server has
 * keep their place relative to the ordered ones (appended after, as the apiserver does when it
 * cannot place them).
 */
function applyOrder(list: unknown[], order: unknown[], lm: ListMeta | undefined): unknown[] {
  const keyOf = (e: unknown): unknown => (lm?.mergeKey && isObject(e) ? e[lm.mergeKey] : e);
  const orderKeys = order.map(keyOf);
  const ordered: unknown[] = [];
  for (const k of orderKeys) {
    const found = list.find((e) => deepEqual(keyOf(e), k));
    if (found !== undefined) ordered.push(found);
  }
  const rest = list.filter((e) => !orderKeys.some((k) => deepEqual(keyOf(e), k)));
  return [...ordered, ...rest];
}

function stripDirectives<T>(v: T): T {
  if (Array.isArray(v)) return v.map(stripDirectives) as T;
  if (isObject(v)) {
    const out: Record<string, any> = {};
    for (const [k, x] of Object.entries(v)) {
      if (k === DIRECTIVE || k === RETAIN_KEYS || k.startsWith(SET_ORDER) || k.startsWith(DELETE_PRIMITIVE)) continue;
      out[k] = stripDirectives(x);
    }
    return out as T;
  }
  return v;
}
