/**
 * Builds Gateway API's conformance suite as canary-l4 runs it (`go test -c` of go/, whose go.mod and go.sum pin
 * sigs.k8s.io/gateway-api/conformance) into a cache directory keyed by the suite's version, the Go toolchain and a
 * hash of go.mod, go.sum and the test's own source (a changed test is a different binary):
 * `$XDG_CACHE_HOME/canary-l4/conformance/gateway-api-<v>-<go>-<hash>/conformance.test`. A second call finds it and
 * builds nothing; two processes building at once build once (a lock directory), as test/cluster/build.ts does.
 *
 * ```sh
 * node test/conformance/build.ts      # prints the binary's path, building first if needed
 * ```
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

export const MODULE_DIR = fileURLToPath(new URL('./go/', import.meta.url));
const SUITE_MODULE = 'sigs.k8s.io/gateway-api/conformance';
const LOCK_STALE_MS = 30 * 60_000;

export interface SuiteBinary {
  readonly path: string;
  /** The suite's version go.mod pins, e.g. v1.6.3. */
  readonly gatewayApiVersion: string;
  /** Whether this call built it (false: it was in the cache). */
  readonly built: boolean;
  readonly buildSeconds: number;
}

/** The conformance suite's version that go.mod pins. */
export function pinnedSuiteVersion(): string {
  const goMod = readFileSync(join(MODULE_DIR, 'go.mod'), 'utf8');
  const found = new RegExp(`^\\s*${SUITE_MODULE.replaceAll('.', '\\.')} (v\\S+)`, 'm').exec(goMod)?.[1];
  if (found === undefined) throw new Error(`test/conformance/go/go.mod: no version of ${SUITE_MODULE}`);
  return found;
}

function cacheRoot(): string {
  const base =
    process.env.XDG_CACHE_HOME !== undefined && process.env.XDG_CACHE_HOME !== ''
      ? process.env.XDG_CACHE_HOME
      : join(homedir(), '.cache');
  return join(base, 'canary-l4', 'conformance');
}

async function goVersion(): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)('go', ['env', 'GOVERSION'], { cwd: MODULE_DIR });
    return stdout.trim();
  } catch (err) {
    throw new Error(
      `building the conformance suite needs the Go toolchain (go on PATH): ${(err as Error).message.split('\n')[0]}`,
    );
  }
}

/** go.mod, go.sum and every .go file of the module, in name order. */
function sourceHash(): string {
  const hash = createHash('sha256');
  const files = readdirSync(MODULE_DIR)
    .filter((name) => name === 'go.mod' || name === 'go.sum' || name.endsWith('.go'))
    .sort();
  for (const name of files)
    hash
      .update(name)
      .update('\0')
      .update(readFileSync(join(MODULE_DIR, name)));
  return hash.digest('hex').slice(0, 12);
}

/** The suite's test binary, built first if the cache has none for this source and toolchain. */
export async function ensureSuiteBinary(log: (line: string) => void = () => {}): Promise<SuiteBinary> {
  const gatewayApiVersion = pinnedSuiteVersion();
  const go = await goVersion();
  const dir = join(cacheRoot(), `gateway-api-${gatewayApiVersion}-${go}-${sourceHash()}`);
  const path = join(dir, 'conformance.test');
  const cached = { path, gatewayApiVersion, built: false, buildSeconds: 0 };
  if (existsSync(path)) return cached;
  mkdirSync(cacheRoot(), { recursive: true });
  const lock = `${dir}.lock`;
  while (!tryLock(lock)) {
    log(`waiting for another build of the conformance suite (${lock})`);
    await sleep(5000);
    if (existsSync(path)) return cached;
  }
  try {
    if (existsSync(path)) return cached;
    const started = Date.now();
    log(
      `building ${SUITE_MODULE} ${gatewayApiVersion} (go test -c) with ${go} into ${dir}; the first build takes minutes`,
    );
    const staging = `${dir}.building`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    await goTestCompile(join(staging, 'conformance.test'), log);
    renameSync(staging, dir);
    const buildSeconds = Math.round((Date.now() - started) / 1000);
    log(`built in ${buildSeconds} s`);
    return { path, gatewayApiVersion, built: true, buildSeconds };
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** A lock directory (mkdir is atomic); one older than half an hour is a build that died and is taken over. */
function tryLock(lock: string): boolean {
  try {
    mkdirSync(lock);
    return true;
  } catch {
    try {
      if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) rmSync(lock, { recursive: true, force: true });
    } catch {
      // gone meanwhile: the next try takes it
    }
    return false;
  }
}

async function goTestCompile(out: string, log: (line: string) => void): Promise<void> {
  const args = ['test', '-c', '-trimpath', '-o', out, '.'];
  const child = spawn('go', args, {
    cwd: MODULE_DIR,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, GOFLAGS: '-mod=readonly', CGO_ENABLED: '0' },
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
    for (const line of chunk.split('\n')) if (line.startsWith('go: downloading')) log(line);
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`go ${args.join(' ')} failed (exit ${code}):\n${output.slice(-4000)}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const binary = await ensureSuiteBinary((line) => console.error(`canary-l4 conformance: ${line}`));
  console.log(binary.path);
}
