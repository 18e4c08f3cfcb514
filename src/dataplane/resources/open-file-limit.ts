// RLIMIT_NOFILE, the most file descriptors this process may hold. Node has no call for it: Linux
// shows it in /proc/self/limits; elsewhere a shell started from here inherits it and says.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { DESCRIPTORS_KEPT_FOR_THE_PROCESS, MAX_DESCRIPTORS_RESERVED_PER_LISTENER } from '../../defaults.ts';
import { DescriptorBudget } from './descriptor-budget.ts';

/** The soft limit on open files; Infinity when unlimited or unknown. */
export function openFileLimit(): number {
  let text: string | undefined;
  try {
    text = /^Max open files\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
  } catch {
    text = spawnSync('sh', ['-c', 'ulimit -n'], { encoding: 'utf8' }).stdout?.trim();
  }
  const limit = Number(text);
  return Number.isInteger(limit) && limit > 0 ? limit : Infinity;
}

/**
 * The data plane's share of this process's descriptors: the limit less what the process keeps for
 * itself and `keptForAdmin` (the admin server's connections and listening socket).
 */
export function budgetForThisProcess(keptForAdmin: number, limit = openFileLimit()): DescriptorBudget {
  return new DescriptorBudget({
    capacity: Math.max(0, limit - DESCRIPTORS_KEPT_FOR_THE_PROCESS - keptForAdmin),
    maxReservePerListener: MAX_DESCRIPTORS_RESERVED_PER_LISTENER,
  });
}
