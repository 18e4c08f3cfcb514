// When a cached object shows a write: the read-your-writes rule of both control loops.

const DECIMAL = /^\d+$/;

/**
 * Whether an object cached at `cached` shows the write that returned `written`: the same
 * resourceVersion, or a numerically later one. resourceVersions are opaque by contract but etcd
 * revisions in practice, so a later one means a write that overtook ours (someone else's, or our
 * own next one) is in the cache, and ours with it. Anything not a decimal integer compares equal only.
 */
export function showsResourceVersion(cached: string | undefined, written: string | undefined): boolean {
  if (cached === undefined || written === undefined || cached === '' || written === '') return false;
  if (cached === written) return true;
  return DECIMAL.test(cached) && DECIMAL.test(written) && BigInt(cached) > BigInt(written);
}
