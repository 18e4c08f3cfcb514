// Runs `canary-l4 serve` as a child process, as a user would: the project's Node
// (process.execPath is the Node running the tests), a config file in a temporary directory, the
// admin server on a free loopback port (learned from the "admin server listening" log line), and
// stdout/stderr collected for assertions.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const MAIN = fileURLToPath(new URL('../../../src/cli/main.ts', import.meta.url));

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface ServeChild {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly adminPort: number;
  /** Where the admin server answers (127.0.0.1 when it listens on every address). */
  readonly adminHost: string;
  readonly configPath: string;
  readonly exited: Promise<Exit>;
  readonly hasExited: boolean;
  stdout(): string;
  stderr(): string;
  /** The JSON log lines printed so far. */
  logs(): Record<string, unknown>[];
  /** Replaces the config file (JSON is YAML). */
  writeConfig(config: unknown): void;
  get(path: string): Promise<{ status: number; body: string }>;
  /** Kills the child (SIGKILL if it does not exit on SIGTERM within 3 s) and removes the temp dir. */
  stop(): Promise<void>;
}

export interface SpawnResult {
  readonly exit: Exit;
  readonly stdout: string;
  readonly stderr: string;
}

function tempConfig(config: unknown): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'canary-l4-test-'));
  const path = join(dir, 'lb.yaml');
  writeFileSync(path, typeof config === 'string' ? config : JSON.stringify(config, null, 2));
  return { dir, path };
}

export interface LaunchOptions {
  /** The open-file limit (`ulimit -n`) of the child. */
  readonly fdLimit?: number;
  /** Removed by stop(). */
  readonly ownDir?: string;
  readonly readyTimeoutMs?: number;
  /** --admin-address; 'default' passes none. Default 127.0.0.1. */
  readonly adminAddress?: string;
}

function spawnCli(
  args: readonly string[],
  fdLimit?: number,
): { child: ChildProcess; out: () => string; err: () => string; exited: Promise<Exit> } {
  const argv = [MAIN, ...args];
  const [command, commandArgs] =
    fdLimit === undefined
      ? [process.execPath, argv]
      : ['sh', ['-c', `ulimit -n ${fdLimit} && exec "$0" "$@"`, process.execPath, ...argv]];
  const child = spawn(command, commandArgs, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, CANARY_L4_ADMIN_PORT: undefined },
  });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return { child, out: () => out, err: () => err, exited };
}

/** Runs the CLI to completion (killed after timeoutMs); for commands expected to exit. */
export async function runCli(args: readonly string[], timeoutMs = 20_000): Promise<SpawnResult> {
  const { child, out, err, exited } = spawnCli(args);
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const exit = await exited;
  clearTimeout(timer);
  return { exit, stdout: out(), stderr: err() };
}

/** `serve --config <file>` for a config that is expected to fail at startup. */
export async function runServeExpectingExit(config: unknown, extraArgs: readonly string[] = []): Promise<SpawnResult> {
  const { dir, path } = tempConfig(config);
  try {
    return await runCli(['serve', '--config', path, '--admin-port', '0', '--admin-address', '127.0.0.1', ...extraArgs]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function parseLogs(text: string): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // a partial line still being written
    }
  }
  return lines;
}

/** Starts `serve` and waits until /readyz answers 200; rejects (with the child's stderr) if it exits first. */
export async function startServe(
  config: unknown,
  extraArgs: readonly string[] = [],
  options: LaunchOptions = {},
): Promise<ServeChild> {
  const { dir, path } = tempConfig(config);
  const serve = spawnServe(path, extraArgs, { ...options, ownDir: dir });
  await untilReady(serve, options.readyTimeoutMs);
  return serve;
}

/** Starts `serve --config configPath` without waiting for it (the config may be a FIFO the test has yet to feed). */
export function spawnServe(
  configPath: string,
  extraArgs: readonly string[] = [],
  { ownDir, fdLimit, adminAddress = '127.0.0.1' }: LaunchOptions = {},
): ServeChild {
  const addressFlag = adminAddress === 'default' ? [] : ['--admin-address', adminAddress];
  return spawnWithAdmin(['serve', '--config', configPath, '--admin-port', '0', ...addressFlag, ...extraArgs], {
    configPath,
    ownDir,
    fdLimit,
  });
}

/**
 * Starts any command with an admin server (`gateway`, `proxy`, …) without waiting for it; `args`
 * name the command and should pass `--admin-port 0` (untilReady learns the port from the log).
 */
export function spawnWithAdmin(
  args: readonly string[],
  {
    configPath = '',
    ownDir,
    fdLimit,
  }: { readonly configPath?: string; readonly ownDir?: string; readonly fdLimit?: number } = {},
): ServeChild {
  const { child, out, err, exited } = spawnCli(args, fdLimit);
  let hasExited = false;
  void exited.then(() => (hasExited = true));
  const serve: ServeChild = {
    child,
    pid: child.pid!,
    adminPort: 0,
    adminHost: '127.0.0.1',
    configPath,
    exited,
    get hasExited() {
      return hasExited;
    },
    stdout: out,
    stderr: err,
    logs: () => parseLogs(out()),
    writeConfig: (next) => writeFileSync(configPath, typeof next === 'string' ? next : JSON.stringify(next, null, 2)),
    get: async (urlPath) => {
      const response = await fetch(`http://${serve.adminHost}:${serve.adminPort}${urlPath}`, {
        signal: AbortSignal.timeout(5000),
      });
      return { status: response.status, body: await response.text() };
    },
    stop: async () => {
      if (!hasExited) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
        await exited;
        clearTimeout(timer);
      }
      if (ownDir !== undefined) rmSync(ownDir, { recursive: true, force: true });
    },
  };
  return serve;
}

/** Waits until /readyz answers 200 (learning the admin port from the log); stops the child on failure. */
export async function untilReady(serve: ServeChild, readyTimeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + readyTimeoutMs;
  try {
    for (;;) {
      if (serve.hasExited)
        throw new Error(
          `serve exited before it was ready: ${JSON.stringify(await serve.exited)}\n${serve.stderr()}${serve.stdout()}`,
        );
      if (Date.now() > deadline)
        throw new Error(`serve not ready within ${readyTimeoutMs} ms\n${serve.stderr()}${serve.stdout()}`);
      if (serve.adminPort === 0) {
        const line = serve.logs().find((entry) => typeof entry.adminPort === 'number');
        if (line !== undefined) {
          const learned = serve as { adminPort: number; adminHost: string };
          learned.adminPort = line.adminPort as number;
          if (typeof line.adminAddress === 'string' && line.adminAddress !== '*') learned.adminHost = line.adminAddress;
        }
      } else {
        const ready = await serve.get('/readyz').catch(() => undefined);
        if (ready?.status === 200) return;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } catch (error) {
    await serve.stop();
    throw error;
  }
}

/** VmRSS of a process in bytes, from /proc. */
export async function rssBytes(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (match === null) throw new Error(`no VmRSS in /proc/${pid}/status`);
  return Number(match[1]) * 1024;
}

/** `canary-l4 gateway` for one Gateway, its listeners and admin server on 127.0.0.1; resolves once it is ready. */
export async function startGateway(
  namespace: string,
  gateway: string,
  kubeconfig: string,
  readyTimeoutMs = 30_000,
): Promise<ServeChild> {
  const child = spawnWithAdmin([
    'gateway',
    '-n',
    namespace,
    '--gateway',
    gateway,
    '--kubeconfig',
    kubeconfig,
    '--listen-address',
    '127.0.0.1',
    '--admin-port',
    '0',
    '--admin-address',
    '127.0.0.1',
  ]);
  await untilReady(child, readyTimeoutMs);
  return child;
}
