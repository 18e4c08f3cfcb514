// One JSON text per value whatever the key order: the apiserver returns maps with sorted keys,
// so objects are compared (and digested) in this form.

export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, item: unknown) => (typeof item === 'object' && item !== null && !Array.isArray(item)
    ? Object.fromEntries(Object.entries(item).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    : item));
}
