// Waiting in tests: on a condition, polled (what an asynchronous controller, informer or socket has
// done by now), or for a fixed time where the time itself is what a test means (a hold, a pause).

/**
 * Polls `condition` every 20 ms until it returns a truthy value, and returns that value; fails after
 * `timeoutMs`, naming `what` it waited for (a function: said as it stands then, e.g. a child's output).
 */
export async function waitFor<T>(
  condition: () => T | Promise<T>,
  what: string | (() => string),
  timeoutMs = 5000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value) return value;
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'string' ? what : what()}`);
    await sleep(20);
  }
}

/** Resolves after `ms`. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
