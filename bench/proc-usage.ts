// CPU and memory of a proxy, from /proc: utime+stime deltas and VmRSS, summed over its process
// tree so nginx workers, HAProxy and canary-l4 workers all count.
import { readFileSync, readdirSync } from 'node:fs';

/** USER_HZ: the unit of utime/stime, 100 on every mainstream Linux build. */
const CLOCK_TICKS_PER_SECOND = 100;

/** pid and its descendants: nginx/HAProxy/cluster workers count towards the proxy. */
function processTree(rootPid: number): number[] {
  const childrenOf = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = readStat(Number(entry));
    if (stat === undefined) continue;
    const siblings = childrenOf.get(stat.ppid) ?? [];
    siblings.push(Number(entry));
    childrenOf.set(stat.ppid, siblings);
  }
  const tree: number[] = [];
  const pending = [rootPid];
  for (let pid = pending.pop(); pid !== undefined; pid = pending.pop()) {
    tree.push(pid);
    pending.push(...(childrenOf.get(pid) ?? []));
  }
  return tree;
}

function readStat(pid: number): { ppid: number; cpuTicks: number } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may contain spaces and parentheses; the fields after the last ')' are fixed.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    // After the name: state(3) ppid(4) ... utime(14) stime(15), so indices shift by 3.
    return { ppid: Number(fields[1]), cpuTicks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return undefined;
  }
}

function readRssKiB(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match?.[1] === undefined ? 0 : Number(match[1]);
  } catch {
    return 0;
  }
}

export function treeRssKiB(rootPid: number): number {
  return processTree(rootPid).reduce((sum, pid) => sum + readRssKiB(pid), 0);
}

function treeCpuTicks(rootPid: number): number {
  return processTree(rootPid).reduce((sum, pid) => sum + (readStat(pid)?.cpuTicks ?? 0), 0);
}

export interface ResourceUsage {
  /** 100 = one core busy for the whole workload. */
  readonly cpuPercent: number;
  readonly peakRssKiB: number;
}

/** Samples CPU (utime+stime delta) and peak RSS of a process tree while `work` runs. */
export async function measureWhile<T>(
  rootPid: number | undefined,
  work: () => Promise<T>,
): Promise<{ result: T; usage: ResourceUsage | undefined }> {
  if (rootPid === undefined) return { result: await work(), usage: undefined };
  const startTicks = treeCpuTicks(rootPid);
  const startedAt = performance.now();
  let peakRssKiB = treeRssKiB(rootPid);
  const sampler = setInterval(() => {
    peakRssKiB = Math.max(peakRssKiB, treeRssKiB(rootPid));
  }, 250);
  try {
    const result = await work();
    const seconds = (performance.now() - startedAt) / 1_000;
    const cpuSeconds = (treeCpuTicks(rootPid) - startTicks) / CLOCK_TICKS_PER_SECOND;
    peakRssKiB = Math.max(peakRssKiB, treeRssKiB(rootPid));
    return { result, usage: { cpuPercent: (100 * cpuSeconds) / seconds, peakRssKiB } };
  } finally {
    clearInterval(sampler);
  }
}
