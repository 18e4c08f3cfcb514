// Child processes of the harness: spawned with a raised fd limit, each in its own process group,
// all killed when the harness exits for any reason (also Ctrl-C).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

const WANTED_FD_LIMIT = 65_536;
const RAISE_HARD_FD_LIMIT = `ulimit -Hn ${WANTED_FD_LIMIT} 2>/dev/null`;

/** The fd limit children get: 65 536 where root may raise the hard limit, else the hard limit
 * (containers without CAP_SYS_RESOURCE). Config generators and the idle workload size to it. */
export const CHILD_FD_LIMIT =
  Number(spawnSync('sh', ['-c', `${RAISE_HARD_FD_LIMIT}; ulimit -Hn`], { encoding: 'utf8' }).stdout.trim()) || 1_024;
const OUTPUT_TAIL_CHARS = 2_000;

export interface Child {
  readonly name: string;
  readonly process: ChildProcess;
  readonly pid: number;
  /** Last output of the child, for error messages. */
  outputTail(): string;
  exited(): boolean;
  stop(): Promise<void>;
}

const liveChildren = new Set<Child>();

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}

export function killAllChildren(): void {
  for (const child of liveChildren) killGroup(child.pid, 'SIGKILL');
  liveChildren.clear();
}

let exitHooksInstalled = false;
function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  process.on('exit', killAllChildren);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(signal, () => {
      console.error(`\n${signal}: stopping every child process`);
      killAllChildren();
      process.exit(130);
    });
  }
}

/** Spawns `command args` via a shell that raises the fd limit first (root may raise the hard limit);
 * `env` is set over this process's environment (undefined removes a variable). */
export function startChild(
  name: string,
  command: string,
  args: readonly string[],
  cwd?: string,
  env: NodeJS.ProcessEnv = {},
): Child {
  installExitHooks();
  const raiseLimitThenExec = `${RAISE_HARD_FD_LIMIT}; ulimit -n ${CHILD_FD_LIMIT}; exec "$@"`;
  const proc = spawn('sh', ['-c', raiseLimitThenExec, 'sh', command, ...args], {
    cwd,
    env: { ...process.env, ...env },
    detached: true, // own process group: the whole tree (nginx workers too) dies with one kill
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (proc.pid === undefined) throw new Error(`could not spawn ${command}`);
  const pid = proc.pid;
  let tail = '';
  let hasExited = false;
  const keepTail = (chunk: Buffer): void => {
    tail = (tail + chunk.toString()).slice(-OUTPUT_TAIL_CHARS);
  };
  proc.stdout?.on('data', keepTail);
  proc.stderr?.on('data', keepTail);
  const exitPromise = new Promise<void>((resolve) => {
    proc.on('exit', (code, signal) => {
      hasExited = true;
      tail += `\n[exited: ${signal ?? `code ${code}`}]`;
      resolve();
    });
  });
  const child: Child = {
    name,
    process: proc,
    pid,
    outputTail: () => tail.trim(),
    exited: () => hasExited,
    async stop() {
      liveChildren.delete(child);
      if (hasExited) return;
      killGroup(pid, 'SIGTERM');
      const killed = await Promise.race([exitPromise.then(() => true), sleep(3_000).then(() => false)]);
      if (!killed) killGroup(pid, 'SIGKILL');
      await exitPromise;
    },
  };
  liveChildren.add(child);
  return child;
}

export interface Completed {
  readonly exitCode: number | null;
  readonly stdout: string;
  /** stdout and stderr interleaved, last part only: for error messages. */
  readonly outputTail: string;
}

/** Runs a command to completion, killed after timeoutMs so every workload stays bounded. */
export async function runBounded(command: string, args: readonly string[], timeoutMs: number): Promise<Completed> {
  const child = startChild(command, command, args);
  let stdout = '';
  child.process.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  const timer = setTimeout(() => killGroup(child.pid, 'SIGKILL'), timeoutMs);
  const exitCode = await new Promise<number | null>((resolve) => child.process.on('close', resolve));
  clearTimeout(timer);
  liveChildren.delete(child);
  return { exitCode, stdout, outputTail: child.outputTail() };
}

/** runBounded, and only the stdout of a successful run. */
export async function runToCompletion(command: string, args: readonly string[], timeoutMs: number): Promise<string> {
  const { exitCode, stdout, outputTail } = await runBounded(command, args, timeoutMs);
  if (exitCode !== 0)
    throw new Error(`${command} ${args.join(' ')} failed (${exitCode ?? 'killed'}): ${outputTail.slice(-500)}`);
  return stdout;
}

export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  child: Child | undefined,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child?.exited()) throw new Error(`${child.name} exited before ${what}: ${child.outputTail()}`);
    if (await check()) return;
    await sleep(100);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${child ? `: ${child.outputTail()}` : ''}`);
}

export function tcpPortOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

export async function httpOk(url: string): Promise<boolean> {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
    await response.arrayBuffer();
    return response.status === 200;
  } catch {
    return false;
  }
}
