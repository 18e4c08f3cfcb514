/**
 * Builds the real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler), the
 * kube-proxy its real nodes run, and the kubectl of the same release that the kubectl suites and
 * .ci/run use, from the Go module in
 * `go/` (its go.mod and go.sum pin every module; nothing else is downloaded) into a cache directory
 * keyed by those versions and the Go toolchain:
 * `$XDG_CACHE_HOME/canary-l4/cluster/k8s-<v>-etcd-<v>-<go>-<go.sum hash>/`. A second call finds
 * the binaries there and builds nothing, and a cache made before a binary was added here gets only
 * that one built; two processes building at once build once (a lock directory).
 *
 * ```sh
 * node test/cluster/build.ts          # prints the directory, building first if needed
 * ```
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const MODULE_DIR = fileURLToPath(new URL('./go/', import.meta.url));
const LOCK_STALE_MS = 60 * 60_000;

/** The Go packages of the binaries, by the name each binary gets. */
const PACKAGES = {
  etcd: 'go.etcd.io/etcd/server/v3',
  'kube-apiserver': 'k8s.io/kubernetes/cmd/kube-apiserver',
  'kube-controller-manager': 'k8s.io/kubernetes/cmd/kube-controller-manager',
  'kube-scheduler': 'k8s.io/kubernetes/cmd/kube-scheduler',
  'kube-proxy': 'k8s.io/kubernetes/cmd/kube-proxy',
  kubectl: 'k8s.io/kubernetes/cmd/kubectl',
} as const;

export type Component = keyof typeof PACKAGES;

export interface Binaries {
  readonly dir: string;
  readonly kubernetesVersion: string;
  readonly etcdVersion: string;
  path(component: Component): string;
}

/** The versions go.mod pins. */
export function pinnedVersions(): { kubernetes: string; etcd: string } {
  const goMod = readFileSync(join(MODULE_DIR, 'go.mod'), 'utf8');
  const version = (module: string) => {
    const found = new RegExp(`^\\s*${module.replaceAll('.', '\\.')} (v\\S+)`, 'm').exec(goMod)?.[1];
    if (found === undefined) throw new Error(`test/cluster/go/go.mod: no version of ${module}`);
    return found;
  };
  return { kubernetes: version('k8s.io/kubernetes'), etcd: version('go.etcd.io/etcd/server/v3') };
}

function cacheRoot(): string {
  const base =
    process.env.XDG_CACHE_HOME !== undefined && process.env.XDG_CACHE_HOME !== ''
      ? process.env.XDG_CACHE_HOME
      : join(homedir(), '.cache');
  return join(base, 'canary-l4', 'cluster');
}

async function goVersion(): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)('go', ['env', 'GOVERSION'], { cwd: MODULE_DIR });
    return stdout.trim();
  } catch (err) {
    throw new Error(
      `building the control plane needs the Go toolchain (go on PATH): ${(err as Error).message.split('\n')[0]}`,
    );
  }
}

/** The binaries, built first if the cache has none for these versions. `log` gets a line per step. */
export async function ensureBinaries(log: (line: string) => void = () => {}): Promise<Binaries> {
  const versions = pinnedVersions();
  const go = await goVersion();
  const sum = createHash('sha256')
    .update(readFileSync(join(MODULE_DIR, 'go.mod')))
    .update(readFileSync(join(MODULE_DIR, 'go.sum')))
    .digest('hex')
    .slice(0, 12);
  const dir = join(cacheRoot(), `k8s-${versions.kubernetes}-etcd-${versions.etcd}-${go}-${sum}`);
  const binaries: Binaries = {
    dir,
    kubernetesVersion: versions.kubernetes,
    etcdVersion: versions.etcd,
    path: (component) => join(dir, component),
  };
  if (complete(dir)) return binaries;
  mkdirSync(cacheRoot(), { recursive: true });
  const lock = `${dir}.lock`;
  while (!tryLock(lock)) {
    log(`waiting for another build of the control plane (${lock})`);
    await sleep(5000);
    if (complete(dir)) return binaries;
  }
  try {
    const missing = (Object.keys(PACKAGES) as Component[]).filter((name) => !existsSync(join(dir, name)));
    if (missing.length === 0) return binaries;
    const started = Date.now();
    log(
      `building ${missing.join(', ')} (etcd ${versions.etcd}, Kubernetes ${versions.kubernetes}) with ${go} into ${dir}; ` +
        'a build of them all takes 10-20 minutes',
    );
    const staging = `${dir}.building`;
    rmSync(staging, { recursive: true, force: true });
    mkdirSync(staging, { recursive: true });
    await goBuild(staging, missing, versions, log);
    mkdirSync(dir, { recursive: true });
    // go build names a binary after its package's path (a major version's /vN left out): etcd's is `server`.
    for (const name of missing) renameSync(join(staging, name === 'etcd' ? 'server' : name), join(dir, name));
    rmSync(staging, { recursive: true, force: true });
    log(`built in ${Math.round((Date.now() - started) / 1000)} s`);
    return binaries;
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function complete(dir: string): boolean {
  return Object.keys(PACKAGES).every((name) => existsSync(join(dir, name)));
}

/** A lock directory (mkdir is atomic); one older than an hour is a build that died and is taken over. */
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

/** One `go build` of the components (the toolchain links them in parallel), stamped with their versions. */
async function goBuild(
  out: string,
  components: readonly Component[],
  versions: { kubernetes: string; etcd: string },
  log: (line: string) => void,
): Promise<void> {
  const [major, minor] = /^v(\d+)\.(\d+)/.exec(versions.kubernetes)!.slice(1);
  const buildDate = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  // kubectl version and the components' own skew checks read these; a plain `go build` leaves v0.0.0-master.
  const stamp = (pkg: string) => [
    `-X ${pkg}.gitVersion=${versions.kubernetes}`,
    `-X ${pkg}.gitMajor=${major}`,
    `-X ${pkg}.gitMinor=${minor}`,
    `-X ${pkg}.gitTreeState=clean`,
    `-X ${pkg}.buildDate=${buildDate}`,
  ];
  const ldflags = [
    '-s',
    '-w',
    ...stamp('k8s.io/component-base/version'),
    ...stamp('k8s.io/client-go/pkg/version'),
  ].join(' ');
  const args = [
    'build',
    '-trimpath',
    `-ldflags=${ldflags}`,
    '-o',
    `${out}/`,
    ...components.map((name) => PACKAGES[name]),
  ];
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
  if (code !== 0) throw new Error(`go ${args.slice(0, 3).join(' ')} … failed (exit ${code}):\n${output.slice(-4000)}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const binaries = await ensureBinaries((line) => console.error(`canary-l4 cluster: ${line}`));
  console.log(binaries.dir);
}
