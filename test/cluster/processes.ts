/**
 * The cluster's component processes (the control plane's, and kube-proxy on each real node): each
 * started from the built binaries, its output in `<dir>/logs/<name>.log` (the last 64 KiB kept),
 * optionally inside a network namespace (`ip netns exec`, which execs the binary in place: the
 * process signalled is the component), and stopped in reverse order: SIGTERM, then SIGKILL after 10 s.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Binaries, Component } from './build.ts';

const STOP_GRACE_MS = 10_000;

export interface StartOptions {
  /** The name of its log and in `tail`/`exited`; the component's own by default. */
  readonly name?: string;
  /** A network namespace to run it in. */
  readonly netns?: string;
}

interface Started {
  readonly name: string;
  readonly child: ChildProcess;
  tail: string;
  exit: string | undefined;
}

/** Whether a process of that pid exists (EPERM: it does, another user's). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export class Processes {
  readonly #binaries: Binaries;
  readonly #logs: string;
  readonly #started: Started[] = [];
  readonly #killOnExit = () => {
    for (const { child } of this.#started) child.kill('SIGKILL');
  };

  constructor(binaries: Binaries, dir: string) {
    this.#binaries = binaries;
    this.#logs = join(dir, 'logs');
    process.once('exit', this.#killOnExit);
  }

  start(component: Component, args: string[], options: StartOptions = {}): void {
    const name = options.name ?? component;
    const binary = this.#binaries.path(component);
    const child =
      options.netns === undefined
        ? spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] })
        : spawn('ip', ['netns', 'exec', options.netns, binary, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const file = createWriteStream(join(this.#logs, `${name}.log`));
    const entry: Started = { name, child, tail: '', exit: undefined };
    const keep = (chunk: Buffer) => {
      file.write(chunk);
      entry.tail = (entry.tail + chunk.toString('utf8')).slice(-65_536);
    };
    child.stdout!.on('data', keep);
    child.stderr!.on('data', keep);
    child.once('exit', (code, signal) => {
      entry.exit = signal ?? `exit ${code}`;
      file.end();
    });
    this.#started.push(entry);
  }

  async freeze(name: string, ms: number): Promise<void> {
    const entry = this.#started.find((item) => item.name === name);
    if (entry === undefined || entry.exit !== undefined) throw new Error(`${name} is not running`);
    entry.child.kill('SIGSTOP');
    try {
      await sleep(ms);
    } finally {
      entry.child.kill('SIGCONT');
    }
  }

  exited(name: string): string | undefined {
    return this.#started.find((entry) => entry.name === name)?.exit;
  }

  tail(name: string, bytes = 8192): string {
    return (this.#started.find((entry) => entry.name === name)?.tail ?? '').slice(-bytes);
  }

  async stopAll(): Promise<void> {
    for (const entry of [...this.#started].reverse()) {
      if (entry.exit !== undefined) continue;
      const exited = new Promise((resolve) => entry.child.once('exit', resolve));
      entry.child.kill('SIGTERM');
      const timer = setTimeout(() => entry.child.kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    }
    process.off('exit', this.#killOnExit);
  }
}

/**
 * SIGKILLs what a killed run of the cluster in `dir` left running: every process whose arguments
 * name a path in `dir` (etcd's data dir, the components' kubeconfig and certificates, kube-proxy's
 * config), as a SIGKILLed parent leaves its children.
 */
export async function killLeftoversOf(dir: string): Promise<void> {
  const killed: number[] = [];
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // exited meanwhile
    }
    if (!args.some((arg) => arg.startsWith(`${dir}/`) || arg.includes(`=${dir}/`))) continue;
    try {
      process.kill(pid, 'SIGKILL');
      killed.push(pid);
    } catch {
      // exited meanwhile
    }
  }
  // Gone before the new ones start: etcd's data dir is locked until the old etcd is.
  const deadline = Date.now() + STOP_GRACE_MS;
  while (killed.some((pid) => existsSync(`/proc/${pid}`)) && Date.now() < deadline) await sleep(50);
}
