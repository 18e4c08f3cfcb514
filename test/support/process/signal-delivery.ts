// Whether a signal sent to a process has been delivered, from Linux's /proc: a signal not yet
// delivered shows in the process's pending sets (SigPnd, ShdPnd). A check that a signal does NOT end
// a process waits on this instead of a sleep: once it is delivered, a default action (ending the
// process) has begun, and the process shows as exiting or gone.
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';

/** The kernel's PF_EXITING task flag (field 9 of /proc/<pid>/stat): the process has begun to exit. */
const PF_EXITING = 0x4;

/**
 * Resolves once `signal` is no longer pending for `pid`: `'alive'` if the process then still runs
 * (a handler took the signal), `'gone'` if it is exiting, a zombie, or reaped.
 */
export async function afterDelivery(pid: number, signal: NodeJS.Signals, timeoutMs = 5_000): Promise<'alive' | 'gone'> {
  const bit = 1n << BigInt(constants.signals[signal] - 1);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let status: string;
    let stat: string;
    try {
      status = readFileSync(`/proc/${pid}/status`, 'utf8');
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return 'gone';
    }
    const pendingIn = (set: string) => BigInt(`0x${new RegExp(`^${set}:\\s*([0-9a-f]+)`, 'm').exec(status)?.[1] ?? 0}`);
    const pending = ((pendingIn('SigPnd') | pendingIn('ShdPnd')) & bit) !== 0n;
    if (!pending) {
      // After the command (in parentheses, which may hold spaces): state is field 3, flags field 9.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const exiting = fields[0] === 'Z' || fields[0] === 'X' || (Number(fields[6]) & PF_EXITING) !== 0;
      return exiting ? 'gone' : 'alive';
    }
    if (Date.now() > deadline) throw new Error(`${signal} still pending for pid ${pid} after ${timeoutMs} ms`);
    await sleep(5);
  }
}
