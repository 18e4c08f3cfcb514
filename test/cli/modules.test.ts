// What each mode loads: `serve` and `demo` never load @kubernetes/client-node (its index alone is
// ~80 MiB of RSS, every generated model), and `proxy` never loads the YAML parser of config files
// (~5 MiB; it reads its release from the API), so a static import of either anywhere in their
// import graph fails here. The modules are traced by a load hook in the child (loaded-modules.ts).
// The same holds of the bundle that ships (build/bundle.ts, built here afresh): there a loaded chunk
// stands for the sources its metafile says it holds, so a source that should not ship in a command's
// chunks fails.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../support/net/free-ports.ts';
import { startFakeApiServer } from '../support/fake-apiserver/index.ts';
import { MAIN } from '../support/process/serve-child.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';

const addresses = loopbackRange(import.meta.url);

const HOOK = fileURLToPath(new URL('../support/process/loaded-modules.ts', import.meta.url));
const KUBERNETES_CLIENT = '/node_modules/@kubernetes/client-node/';
const CONFIG_FILE_PARSING = ['/node_modules/yaml/', '/src/config/load.ts'];

/**
 * Runs the CLI with the hook until `done` says so from its stdout (then SIGTERM), or until it
 * exits; resolves with the URLs of the modules it loaded.
 */
async function modulesLoadedBy(
  args: readonly string[],
  done: (stdout: string) => boolean = () => false,
  entry = MAIN,
): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'canary-l4-modules-'));
  try {
    const file = join(dir, 'modules.txt');
    writeFileSync(file, '');
    const child = spawn(process.execPath, ['--import', HOOK, entry, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LOADED_MODULES_FILE: file },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      if (done(stdout)) child.kill('SIGTERM');
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const [code] = await new Promise<[number | null]>((resolve) =>
      child.once('exit', (exitCode) => resolve([exitCode])),
    );
    clearTimeout(killer);
    assert.equal(code, 0, `canary-l4 ${args.join(' ')} exited ${code}: ${stderr}`);
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function assertNoKubernetesClient(modules: readonly string[]): void {
  // The trace itself works: the CLI's own flags parser was seen loading.
  assert.ok(
    modules.some((url) => url.includes('/node_modules/yargs/')),
    'the hook saw the modules load',
  );
  assert.deepEqual(
    modules.filter((url) => url.includes(KUBERNETES_CLIENT)),
    [],
  );
}

/** Where a command's modules come from: the sources, or a bundle whose chunks stand for the sources they hold. */
interface Entry {
  readonly main: () => string;
  readonly sources: (loaded: readonly string[]) => string[];
}

const SOURCES: Entry = { main: () => MAIN, sources: (loaded) => [...loaded] };

/** The bundle, built afresh into a directory of its own; each loaded chunk read as the source files its metafile lists (as file URLs). */
function bundleEntry(): Entry & { build(): Promise<void>; remove(): void } {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const dir = mkdtempSync(join(tmpdir(), 'canary-l4-bundle-'));
  let inputsOf = new Map<string, string[]>();
  return {
    main: () => join(dir, 'canary-l4.js'),
    sources: (loaded) =>
      loaded.flatMap((url) => (url.startsWith('file:') ? (inputsOf.get(fileURLToPath(url)) ?? [url]) : [url])),
    async build() {
      const child = spawn(process.execPath, [join(root, 'build', 'bundle.ts'), dir], {
        cwd: root,
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      const [code] = await new Promise<[number | null]>((done) => child.once('exit', (exitCode) => done([exitCode])));
      assert.equal(code, 0, 'npm run build');
      const meta = JSON.parse(readFileSync(join(dir, 'meta.json'), 'utf8')) as {
        outputs: Record<string, { inputs: Record<string, unknown> }>;
      };
      inputsOf = new Map(
        Object.entries(meta.outputs).map(([output, { inputs }]) => [
          resolve(root, output),
          Object.keys(inputs).map((input) => `file://${resolve(root, input)}`),
        ]),
      );
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

const bundle = bundleEntry();
for (const [what, entry] of [
  ['the sources', SOURCES],
  ['the bundle that ships', bundle],
] as const)
  describe(`modules loaded per mode, ${what}`, () => {
    if (entry === bundle) {
      before(() => bundle.build());
      after(() => bundle.remove());
    }
    const loadedBy = async (args: readonly string[], done?: (stdout: string) => boolean) =>
      entry.sources(await modulesLoadedBy(args, done, entry.main()));

    test('serve does not load @kubernetes/client-node', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'canary-l4-modules-config-'));
      try {
        const config = join(dir, 'lb.yaml');
        const [listen, backend] = [await freePort(), await freePort()];
        writeFileSync(
          config,
          JSON.stringify({
            listeners: [
              {
                name: 'web',
                listen: `127.0.0.1:${listen}`,
                backends: [{ name: 'a', host: '127.0.0.1', port: backend, weight: 1 }],
              },
            ],
          }),
        );
        const modules = await loadedBy(
          ['serve', '--config', config, '--admin-address', '127.0.0.1', '--admin-port', '0', '--drain-timeout', '0'],
          (stdout) => stdout.includes('"msg":"serving"'),
        );
        assertNoKubernetesClient(modules);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test('serve parses a config over 4 KiB on its parsing thread, and serves it', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'canary-l4-modules-config-'));
      try {
        const config = join(dir, 'lb.json');
        const listen = await freePort();
        const backends = Array.from({ length: 100 }, (_, i) => ({
          name: `backend-${i}`,
          host: '127.0.0.1',
          port: 20_000 + i,
          weight: 1,
        }));
        writeFileSync(
          config,
          JSON.stringify({ listeners: [{ name: 'web', listen: `127.0.0.1:${listen}`, backends }] }),
        );
        const modules = await loadedBy(
          ['serve', '--config', config, '--admin-address', '127.0.0.1', '--admin-port', '0', '--drain-timeout', '0'],
          (stdout) => stdout.includes('"msg":"serving"'),
        );
        assert.ok(
          modules.some((url) => url.endsWith('/src/config/parse-thread.ts')),
          'the parsing thread ran',
        );
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });

    test('demo does not load @kubernetes/client-node', async () => {
      const [tcp, udp] = [await freePort(), await freePort()];
      const modules = await loadedBy([
        'demo',
        '--exit',
        '--connections',
        '20',
        '--sessions',
        '5',
        '--tcp-port',
        String(tcp),
        '--udp-port',
        String(udp),
        '--admin-port',
        '0',
      ]);
      assertNoKubernetesClient(modules);
    });

    test('proxy loads neither the YAML parser nor the config-file loader', async () => {
      const api = await startFakeApiServer({ serviceCidr: addresses.cidr });
      try {
        const args = [
          'proxy',
          '--kubeconfig',
          api.kubeconfigPath,
          '-n',
          'default',
          '--canary-release',
          'web-v2',
          '--port-base',
          String(await freePort()),
          '--admin-address',
          '127.0.0.1',
          '--admin-port',
          '0',
          '--no-leader-elect',
          '--drain-timeout',
          '0',
        ];
        const modules = await loadedBy(args, (stdout) => stdout.includes('"msg":"proxy started"'));
        assert.ok(
          modules.some((url) => url.includes(KUBERNETES_CLIENT)),
          'the hook saw the proxy load its Kubernetes client',
        );
        assert.deepEqual(
          modules.filter((url) => CONFIG_FILE_PARSING.some((part) => url.includes(part))),
          [],
        );
      } finally {
        await api.stop();
      }
    });
  });
