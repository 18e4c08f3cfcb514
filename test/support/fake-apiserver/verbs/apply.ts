/**
 * Server-side apply, approximated without field ownership: the applied configuration is merged into
 * the live object as a strategic merge would (maps merge, lists with merge keys merge by key, other
 * lists and scalars are replaced), and whatever the same field manager applied last time but no
 * longer applies is removed: kubectl's three-way merge, with the previous configuration kept by the
 * server rather than in an annotation. Custom resources have no list metadata, so their lists are
 * replaced. Pure; never mutates its inputs.
 */
import { clone, isObject, type KObject } from '../wire/json.ts';
import { type ListMeta, PatchError, type PatchMeta } from '../resources/patch.ts';

type JsonMap = Record<string, any>;

/** List-map key fields the apiserver defaults before keys are compared (`ports[].protocol`). */
const KEY_DEFAULTS: Record<string, unknown> = { protocol: 'TCP' };

/**
 * The live object after `applied` by a manager whose last applied configuration was `previous`
 * (`undefined` for its first apply, or for a create).
 */
export function applyConfiguration(
  live: KObject,
  applied: KObject,
  previous: KObject | undefined,
  meta: PatchMeta,
): KObject {
  return mergeMap(live, applied, previous, meta, '');
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function mergeMap(
  live: JsonMap,
  applied: JsonMap,
  previous: JsonMap | undefined,
  meta: PatchMeta,
  path: string,
): JsonMap {
  const out = clone(live);
  for (const [k, v] of Object.entries(applied)) {
    if (v === null) delete out[k];
    else out[k] = mergeValue(out[k], v, previous?.[k], meta, join(path, k));
  }
  for (const [k, was] of Object.entries(previous ?? {})) {
    if (k in applied) continue;
    const left = withdraw(out[k], was, meta, join(path, k));
    if (left === undefined) delete out[k];
    else out[k] = left;
  }
  return out;
}

/** Lists merged element by element; every other list is atomic (replaced whole). */
function mergedList(meta: PatchMeta, path: string): ListMeta | undefined {
  const lm = meta[path];
  return lm?.set || lm?.mergeKey ? lm : undefined;
}

function mergeValue(live: unknown, applied: unknown, previous: unknown, meta: PatchMeta, path: string): unknown {
  if (isObject(applied))
    return mergeMap(isObject(live) ? live : {}, applied, isObject(previous) ? previous : undefined, meta, path);
  const lm = mergedList(meta, path);
  if (Array.isArray(applied) && lm) {
    const current = Array.isArray(live) ? live : [];
    const before = Array.isArray(previous) ? previous : [];
    return lm.set ? mergeSet(current, applied, before) : mergeKeyedList(current, applied, before, lm, meta, path);
  }
  return clone(applied);
}

/**
 * What is left of `live` once what `previous` set is taken out; `undefined` when nothing is. Scalars
 * and atomic lists go whole; maps and merged lists lose only the keys and elements `previous` had.
 */
function withdraw(live: unknown, previous: unknown, meta: PatchMeta, path: string): unknown {
  if (isObject(previous) && isObject(live)) {
    const left = mergeMap(live, {}, previous, meta, path);
    return Object.keys(left).length > 0 ? left : undefined;
  }
  if (Array.isArray(previous) && Array.isArray(live) && mergedList(meta, path)) {
    const left = mergeValue(live, [], previous, meta, path) as unknown[];
    return left.length > 0 ? left : undefined;
  }
  return undefined;
}

function mergeSet(live: unknown[], applied: unknown[], previous: unknown[]): unknown[] {
  const has = (list: unknown[], x: unknown) => list.some((y) => JSON.stringify(y) === JSON.stringify(x));
  const out = live.filter((x) => has(applied, x) || !has(previous, x));
  for (const x of applied) if (!has(out, x)) out.push(clone(x));
  return out;
}

function mergeKeyedList(
  live: unknown[],
  applied: unknown[],
  previous: unknown[],
  lm: ListMeta,
  meta: PatchMeta,
  path: string,
): unknown[] {
  const keys = lm.listMapKeys ?? [lm.mergeKey!];
  const id = (e: unknown) => JSON.stringify(keys.map((k) => (isObject(e) ? (e[k] ?? KEY_DEFAULTS[k]) : undefined)));
  for (const e of applied)
    if (!isObject(e) || keys.some((k) => e[k] === undefined && KEY_DEFAULTS[k] === undefined))
      throw new PatchError('failed', `${path}: every element must be an object with the key ${keys.join(', ')}`);
  const appliedIds = new Set(applied.map(id));
  const withdrawn = new Set(previous.map(id).filter((i) => !appliedIds.has(i)));
  const out = live.filter((e) => !withdrawn.has(id(e)));
  for (const a of applied as JsonMap[]) {
    const i = out.findIndex((e) => id(e) === id(a));
    const prev = previous.find((e) => id(e) === id(a));
    const merged = mergeMap(i >= 0 && isObject(out[i]) ? out[i] : {}, a, isObject(prev) ? prev : undefined, meta, path);
    if (i >= 0) out[i] = merged;
    else out.push(merged);
  }
  return out;
}
