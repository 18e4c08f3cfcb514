/**
 * Gateway API's CRDs as the tests install them: the files of the Go module sigs.k8s.io/gateway-api at
 * the pinned version, read from the Go module cache at run time (never copied into this repository),
 * and their install as a user does it, `kubectl apply --server-side` then a wait until they are served.
 *
 * ```ts
 * const files = await gatewayApiCrdFiles('standard'); // absolute paths in $GOMODCACHE
 * await installGatewayApi(api.kubeconfigPath); // the fake or a real control plane
 * ```
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

/** The Gateway API release canary-l4 implements (its TCPRoute and UDPRoute are v1 from v1.6). */
export const GATEWAY_API_VERSION = 'v1.6.3';
export const GATEWAY_API_MODULE = 'sigs.k8s.io/gateway-api';

/**
 * `standard`: the GA kinds (GatewayClass, Gateway, ReferenceGrant, TCPRoute, UDPRoute… at v1);
 * `experimental`: the same and the alpha ones, with the routes' v1alpha2 served beside v1.
 */
export type GatewayApiChannel = 'standard' | 'experimental';

const execFileAsync = promisify(execFile);
let moduleDir: Promise<string> | undefined;

/**
 * The module's directory in the Go module cache, downloaded into it first when missing (`go mod
 * download` checks it against the checksum database). Asked once per process; `env` (PATH, GOMODCACHE,
 * GOFLAGS) is the process's own unless a test of this helper gives another, which is asked every time.
 */
export function gatewayApiModuleDir(env?: NodeJS.ProcessEnv): Promise<string> {
  if (env !== undefined) return downloadedModuleDir(env);
  moduleDir ??= downloadedModuleDir(process.env);
  return moduleDir;
}

async function downloadedModuleDir(env: NodeJS.ProcessEnv): Promise<string> {
  const module = `${GATEWAY_API_MODULE}@${GATEWAY_API_VERSION}`;
  // Outside any go.mod: the download must not depend on (or edit) a module the cwd happens to be in.
  const run = execFileAsync('go', ['mod', 'download', '-json', module], { cwd: tmpdir(), env, timeout: 300_000 });
  let stdout: string;
  try {
    ({ stdout } = await run);
  } catch (err) {
    const failed = err as NodeJS.ErrnoException & { stdout?: string };
    if (failed.code === 'ENOENT')
      throw new Error(`the Gateway API CRDs are read from ${module} in the Go module cache: install Go (go on PATH)`);
    // go prints a failed download's reason as the JSON's Error field, on stdout.
    const reason = parsedError(failed.stdout) ?? failed.message.split('\n')[0];
    throw new Error(`go mod download ${module} failed: ${reason}`);
  }
  const { Dir } = JSON.parse(stdout) as { Dir?: string };
  if (Dir === undefined) throw new Error(`go mod download ${module} printed no Dir: ${stdout.trim()}`);
  return Dir;
}

function parsedError(stdout: string | undefined): string | undefined {
  try {
    return (JSON.parse(stdout ?? '') as { Error?: string }).Error;
  } catch {
    return undefined;
  }
}

/**
 * Absolute paths of a channel's install files, sorted: every CRD of `config/crd/<channel>/`, and
 * its `gateway.networking.k8s.io_vap_safeupgrades.yaml`, the ValidatingAdmissionPolicy and binding
 * that refuse a downgrade or an experimental CRD over a standard one. That policy is kept: it is part
 * of what a user installs, the real apiserver enforces it, and the fake stores it (without enforcing,
 * as it enforces no admission: its README). The kustomization is not a manifest and is left out.
 */
export async function gatewayApiCrdFiles(channel: GatewayApiChannel): Promise<string[]> {
  const dir = join(await gatewayApiModuleDir(), 'config', 'crd', channel);
  const names = await readdir(dir);
  return names
    .filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml')
    .sort()
    .map((name) => join(dir, name));
}

/** How long the CRDs may take to be served after the apply. */
const SERVED_WITHIN_MS = 60_000;

/**
 * Install a channel's files as a user does: `kubectl apply --server-side` (a client-side apply
 * writes the whole object into the last-applied annotation: the experimental HTTPRoute CRD's 292 KiB
 * are past the annotations' 256 KiB limit, the standard one's 237 KiB just within), then wait until every CRD is Established and its objects can
 * be listed (a real apiserver answers 429 "storage is (re)initializing" for a moment after). Returns
 * the CRDs' names. kubectl gets a discovery cache of its own, so that none from before the CRDs hides them.
 */
export async function installGatewayApi(
  kubeconfigPath: string,
  channel: GatewayApiChannel = 'standard',
): Promise<string[]> {
  const files = await gatewayApiCrdFiles(channel);
  const cacheDir = await mkdtemp(join(tmpdir(), 'gateway-api-install-'));
  const kubectl = (...args: string[]) =>
    execFileAsync('kubectl', ['--kubeconfig', kubeconfigPath, '--cache-dir', cacheDir, ...args], {
      timeout: SERVED_WITHIN_MS,
    }).then(
      ({ stdout }) => stdout,
      (err: Error & { stderr?: string }) => {
        throw new Error(`kubectl ${args.slice(0, 2).join(' ')}: ${err.stderr?.trim() || err.message}`);
      },
    );
  try {
    return await applyAndWait(kubectl, files);
  } finally {
    await rm(cacheDir, { recursive: true, force: true });
  }
}

async function applyAndWait(kubectl: (...args: string[]) => Promise<string>, files: string[]): Promise<string[]> {
  const applied = await kubectl(
    'apply',
    '--server-side',
    '--field-manager=gateway-api-install',
    '-o',
    'name',
    ...files.flatMap((file) => ['-f', file]),
  );
  const crds = applied
    .split('\n')
    .filter((line) => line.startsWith('customresourcedefinition.apiextensions.k8s.io/'))
    .map((line) => line.slice(line.indexOf('/') + 1));
  if (crds.length === 0) throw new Error(`kubectl apply of ${files.length} Gateway API files applied no CRD`);
  await kubectl('wait', '--for=condition=Established', `--timeout=${SERVED_WITHIN_MS / 1000}s`, ...crds.map(crd));
  const deadline = Date.now() + SERVED_WITHIN_MS;
  for (;;) {
    try {
      await kubectl('get', crds.join(','), '--all-namespaces', '-o', 'name');
      return crds;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

const crd = (name: string) => `customresourcedefinition.apiextensions.k8s.io/${name}`;
