// The timings both control loops share (the proxy's and the manager's): one definition, so that
// the two cannot drift apart.

/** How long a pass waits for the caches to show the previous pass's own writes (own-writes.ts). */
export const OWN_WRITES_WAIT_MS = 2_000;
/** Recovery after an API outage must be prompt: a failing key is retried at least this often. */
export const WORK_MAX_BACKOFF_MS = 10_000;
