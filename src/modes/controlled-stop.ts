// How `gateway`, a mode that runs a control loop beside the data plane, stops (`proxy` does the same
// in its own words): the loop and its Lease get a bounded time to stop, then the data plane drains
// regardless, so a hung API server cannot keep a SIGTERM from ending the process. Asked twice, it is
// the same stop.
import { setTimeout as delay } from 'node:timers/promises';
import type { Runtime } from '../runtime/runtime.ts';

/** On SIGTERM the control loop gets this long to stop before the drain goes ahead regardless. */
export const CONTROLLER_STOP_MS = 5_000;

export function controlledStop(
  runtime: Runtime,
  stopLoop: () => Promise<unknown>,
  drainMs: number,
): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () =>
    (stopping ??= (async () => {
      const stopped = await Promise.race([
        stopLoop().then(() => true),
        delay(CONTROLLER_STOP_MS, false, { ref: false }),
      ]);
      if (!stopped)
        runtime.log.warn({ waitedMs: CONTROLLER_STOP_MS }, 'the control loop did not stop in time; draining anyway');
      await runtime.stop(drainMs);
    })());
}
