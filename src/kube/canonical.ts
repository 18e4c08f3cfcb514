// One JSON text per value whatever the key order: the apiserver returns maps with sorted keys,
// so objects are compared (and digested) in this form. It also makes an object as client-node's
// typed lists give it (class instances, absent fields as undefined) equal to the same object as a
// watch event gives it (plain JSON).
import { createHash } from 'node:crypto';

export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) =>
    typeof item === 'object' && item !== null && !Array.isArray(item)
      ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : item,
  );
}

export function sameJson(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

/** sha256 of the value's canonical JSON, first 16 hex digits: what an annotation records of what was written. */
export function canonicalDigest(value: unknown): string {
  return createHash('sha256').update(canonicalJson(value)).digest('hex').slice(0, 16);
}
