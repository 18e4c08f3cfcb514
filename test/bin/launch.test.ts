// The package's bins (package.json `bin`) as npm installs them: on Node 24 or later they run the bundle of
// `npm run build` while it is current, else the TypeScript entries; on an older Node they say in one
// line which Node they need (the .ts entries themselves would fail there with
// ERR_UNKNOWN_FILE_EXTENSION before any of their code ran).

import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { setTimeout } from 'node:timers/promises';
import { TYPE_STRIPPER_PROBE } from '../support/process/type-stripper-probe.ts';

const projectDir = fileURLToPath(new URL('../../', import.meta.url));
const packageJson = JSON.parse(readFileSync(new URL('package.json', `file://${projectDir}`), 'utf8')) as {
  bin: Record<string, string>;
  engines: { node: string };
  devDependencies: { node: string };
};
const bins = packageJson.bin;
/** The lowest Node major the package accepts (engines) and the one it pins (the `node` dev dependency). */
const [floorMajor, pinnedMajor] = [packageJson.engines.node, packageJson.devDependencies.node].map(
  (range) => /\d+/.exec(range)?.[0],
);

/** A preload that makes this Node report another version, as an older Node would. */
const pretendNode = (version: string) =>
  `data:text/javascript,Object.defineProperty(process,"versions",{value:{...process.versions,node:"${version}"}})`;

/** Runs this Node with `args`; `env` adds to (or, with undefined, removes from) this process's. */
function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const childEnv = Object.fromEntries(
    Object.entries({ ...process.env, ...env }).filter(([, value]) => value !== undefined),
  );
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: projectDir, timeout: 30_000, env: childEnv }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr });
    });
  });
}

describe('the package bins', { timeout: 60_000 }, () => {
  for (const [name, heading] of [
    ['canary-l4', 'canary-l4 <command>'],
    ['kubectl-canary_l4', 'kubectl canary-l4 <command>'],
  ] as const) {
    const bin = bins[name];

    it(`${name} runs on this Node (the pinned ${pinnedMajor}): the bundle while it is current, else its TypeScript entry`, async () => {
      assert.ok(bin !== undefined, `package.json has no bin ${name}`);
      const result = await run([bin, '--help']);
      assert.equal(result.code, 0, result.stderr);
      assert.match(result.stdout, new RegExp(`^${heading}`));
    });

    it(`${name} on Node 20 says in one line which Node it needs, exit 1`, async () => {
      const result = await run(['--import', pretendNode('20.11.1'), bin!, '--help']);
      assert.equal(result.code, 1);
      assert.equal(result.stdout, '');
      const lines = result.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, result.stderr);
      assert.match(
        lines[0]!,
        new RegExp(
          `^(kubectl )?canary-l4: needs Node\\.js ${floorMajor} or later, but this is Node\\.js 20\\.11\\.1 \\(.+\\); put Node ${pinnedMajor} first on PATH`,
        ),
      );
    });
  }
});

/** This project with its bins but no bundle (src, node_modules and package.json linked): its bins run the TypeScript sources. */
function projectWithoutBundle(): { readonly dir: string; bin(name: string): string } {
  const dir = mkdtempSync(join(tmpdir(), 'canary-l4-sources-only-'));
  mkdirSync(join(dir, 'bin'));
  for (const file of ['launch.js', ...Object.values(bins).map((bin) => bin.replace(/^bin\//, ''))])
    writeFileSync(join(dir, 'bin', file), readFileSync(join(projectDir, 'bin', file)));
  for (const linked of ['src', 'node_modules', 'package.json'])
    symlinkSync(join(projectDir, linked), join(dir, linked));
  return { dir, bin: (name) => join(dir, bins[name]!) };
}

describe("the bins' compile cache, running the sources (the bundle has no types to strip)", { timeout: 60_000 }, () => {
  const home = mkdtempSync(join(tmpdir(), 'canary-l4-cache-home-'));
  const sourcesOnly = projectWithoutBundle();
  after(() => {
    rmSync(home, { recursive: true, force: true });
    rmSync(sourcesOnly.dir, { recursive: true, force: true });
  });
  const cacheDir = (cacheHome: string) => join(cacheHome, 'canary-l4', 'compile-cache');
  /** A cache home whose compile cache is already there, with `mode`. */
  const cacheWithMode = (name: string, mode: number) => {
    const cacheHome = join(home, name);
    mkdirSync(cacheDir(cacheHome), { recursive: true });
    chmodSync(cacheDir(cacheHome), mode);
    return cacheHome;
  };
  const noCacheChosen = { NODE_COMPILE_CACHE: undefined, NODE_DISABLE_COMPILE_CACHE: undefined };
  /** The lines a bin wrote to stderr but the type stripper probe's. */
  const said = (stderr: string) =>
    stderr.split('\n').filter((line) => line !== '' && !line.startsWith('type stripper loaded: '));
  /** `canary-l4 --version` with no compile cache chosen: whether it loaded the type stripper, and what else it said. */
  const start = async (env: NodeJS.ProcessEnv) => {
    const result = await run(['--import', TYPE_STRIPPER_PROBE, sourcesOnly.bin('canary-l4'), '--version'], {
      ...noCacheChosen,
      ...env,
    });
    assert.equal(result.code, 0, result.stderr);
    return {
      stripperLoaded: /^type stripper loaded: (true|false)$/m.exec(result.stderr)?.[1],
      said: said(result.stderr),
    };
  };
  const refusal = (cacheHome: string, mode: string) =>
    `canary-l4: not using the compile cache ${cacheDir(cacheHome)}: its group or others have access (mode ${mode}); Node runs what it reads back from there, so it must be this user's alone (mode 0700)`;

  it('from the second start on, the type stripper is never loaded; the cache is private to the user', async () => {
    const cacheHome = join(home, 'private');
    assert.deepEqual(
      await start({ XDG_CACHE_HOME: cacheHome }),
      { stripperLoaded: 'true', said: [] },
      'the first start compiles',
    );
    assert.deepEqual(
      await start({ XDG_CACHE_HOME: cacheHome }),
      { stripperLoaded: 'false', said: [] },
      'the second reads the cache back',
    );
    assert.equal(statSync(cacheDir(cacheHome)).mode & 0o777, 0o700);
  });

  for (const [who, mode] of [
    ['others', 0o707],
    ['its group', 0o770],
    ['everyone', 0o777],
  ] as const) {
    it(`a cache directory ${who} may write (mode 0${mode.toString(8)}) is not used (Node runs what it reads from there), and that is said in one line`, async () => {
      const cacheHome = cacheWithMode(who, mode);
      const refused = { stripperLoaded: 'true', said: [refusal(cacheHome, `0${mode.toString(8)}`)] };
      assert.deepEqual(await start({ XDG_CACHE_HOME: cacheHome }), refused, 'the first start');
      assert.deepEqual(await start({ XDG_CACHE_HOME: cacheHome }), refused, 'the second: nothing was cached');
    });
  }

  it('serve --workers 2 says it once, not once per process (each worker runs the bin again)', async () => {
    const cacheHome = cacheWithMode('workers', 0o770);
    const config = join(home, 'lb.yaml');
    writeFileSync(config, 'listeners: []\n');
    const args = [
      bins['canary-l4']!,
      'serve',
      '--config',
      config,
      '--workers',
      '2',
      '--admin-port',
      '0',
      '--admin-address',
      '127.0.0.1',
      '--no-watch',
    ];
    const child = spawn(process.execPath, args, {
      cwd: projectDir,
      env: { ...process.env, ...noCacheChosen, CANARY_L4_ADMIN_PORT: undefined, XDG_CACHE_HOME: cacheHome },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = once(child, 'exit');
    try {
      // The primary says "serving" once both workers are ready, so each has started the bin by then.
      while (!stdout.includes('"msg":"serving"')) {
        assert.equal(child.exitCode, null, stderr);
        await setTimeout(50);
      }
    } finally {
      child.kill('SIGTERM');
    }
    await exited;
    assert.deepEqual(said(stderr), [refusal(cacheHome, '0770')]);
  });

  it('NODE_DISABLE_COMPILE_CACHE turns it off, and nothing is written', async () => {
    const cacheHome = join(home, 'disabled');
    await start({ XDG_CACHE_HOME: cacheHome, NODE_DISABLE_COMPILE_CACHE: '1' });
    assert.deepEqual(await start({ XDG_CACHE_HOME: cacheHome, NODE_DISABLE_COMPILE_CACHE: '1' }), {
      stripperLoaded: 'true',
      said: [],
    });
    assert.equal(existsSync(cacheHome), false);
  });

  it('where no cache directory can be made, it runs without one, silently', async () => {
    assert.deepEqual(await start({ XDG_CACHE_HOME: '/dev/null/cache' }), { stripperLoaded: 'true', said: [] });
  });
});

describe('the bins run the bundle only while it is current', { timeout: 30_000 }, () => {
  // A project of its own: the real launch.js, a bin, a source entry and a bundle that say which ran.
  const project = mkdtempSync(join(tmpdir(), 'canary-l4-launch-bundle-'));
  after(() => rmSync(project, { recursive: true, force: true }));
  for (const dir of ['bin', 'src/cli', 'dist']) mkdirSync(join(project, dir), { recursive: true });
  writeFileSync(join(project, 'bin', 'launch.js'), readFileSync(join(projectDir, 'bin', 'launch.js')));
  writeFileSync(
    join(project, 'bin', 'x.js'),
    "import { launch } from './launch.js';\nawait launch('x', new URL('../src/cli/main.ts', import.meta.url), new URL('../dist/x.js', import.meta.url));\n",
  );
  writeFileSync(join(project, 'src', 'cli', 'main.ts'), "console.log('sources');\n");
  writeFileSync(join(project, 'src', 'cli', 'other.ts'), 'export {};\n');
  writeFileSync(join(project, 'package-lock.json'), '{}\n');
  const bundle = join(project, 'dist', 'x.js');
  writeFileSync(bundle, "console.log('bundle');\n");
  const at = (seconds: number, ...files: string[]) => {
    for (const file of files) utimesSync(join(project, file), seconds, seconds);
  };
  const ran = async () => {
    const result = await run([join(project, 'bin', 'x.js')], { NODE_DISABLE_COMPILE_CACHE: '1' });
    assert.equal(result.code, 0, result.stderr);
    return result.stdout.trim();
  };

  it('a bundle newer than every source and the lockfile: the bundle', async () => {
    at(1_000, 'src/cli/main.ts', 'src/cli/other.ts', 'package-lock.json');
    at(2_000, 'dist/x.js');
    assert.equal(await ran(), 'bundle');
  });

  it('a source edited since the build: the sources', async () => {
    at(3_000, 'src/cli/other.ts');
    assert.equal(await ran(), 'sources');
    at(1_000, 'src/cli/other.ts');
  });

  it('a lockfile moved since the build (a dependency changed): the sources', async () => {
    at(3_000, 'package-lock.json');
    assert.equal(await ran(), 'sources');
    at(1_000, 'package-lock.json');
  });

  it('no bundle: the sources; no sources (an image ships the bundle alone): the bundle', async () => {
    rmSync(bundle);
    assert.equal(await ran(), 'sources');
    writeFileSync(bundle, "console.log('bundle');\n");
    rmSync(join(project, 'src'), { recursive: true });
    assert.equal(await ran(), 'bundle');
  });
});
