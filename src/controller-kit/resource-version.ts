// When a cached object shows a write: the read-your-writes rule of both control loops.

/**
 * Whether an object cached at `cached` shows the write that returned `written`: the same
 * resourceVersion. resourceVersions are opaque by the API's contract: a different one, however
 * large, is not known to hold our write, so an overtaken write is waited for until the bound
 * (OWN_WRITES_WAIT_MS), as the proxy always did. (Taking a numerically later one as shown, as the
 * manager did, made the proxy act within the 2 s its releases had always left the kube-proxy and
 * readiness between a write and the next pass; a managed workload's takeover then reset
 * connections: test/control/workload/workloads.test.ts.)
 */
export function showsResourceVersion(cached: string | undefined, written: string | undefined): boolean {
  return cached !== undefined && cached !== '' && cached === written;
}
