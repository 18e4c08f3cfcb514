// The package's bins (package.json `bin`) as npm installs them: on Node 24 they run the TypeScript
// entries; on an older Node they say in one line which Node they need (the .ts entries themselves
// would fail there with ERR_UNKNOWN_FILE_EXTENSION before any of their code ran).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, it } from 'node:test';
import { TYPE_STRIPPER_PROBE } from '../support/type-stripper-probe.ts';

const projectDir = fileURLToPath(new URL('../../', import.meta.url));
const bins = (JSON.parse(readFileSync(new URL('package.json', `file://${projectDir}`), 'utf8')) as { bin: Record<string, string> }).bin;

/** A preload that makes this Node report another version, as an older Node would. */
const pretendNode = (version: string) =>
  `data:text/javascript,Object.defineProperty(process,"versions",{value:{...process.versions,node:"${version}"}})`;

/** Runs this Node with `args`; `env` adds to (or, with undefined, removes from) this process's. */
function run(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  const childEnv = Object.fromEntries(Object.entries({ ...process.env, ...env }).filter(([, value]) => value !== undefined));
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: projectDir, timeout: 30_000, env: childEnv }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, stdout, stderr });
    });
  });
}

describe('the package bins', { timeout: 60_000 }, () => {
  for (const [name, heading] of [['canary-l4', 'canary-l4 <command>'], ['kubectl-canary_l4', 'kubectl canary-l4 <command>']] as const) {
    const bin = bins[name];

    it(`${name} runs its TypeScript entry on this Node (24)`, async () => {
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
      assert.match(lines[0]!, /^(kubectl )?canary-l4: needs Node\.js 24 or later, but this is Node\.js 20\.11\.1 \(.+\); put Node 24 first on PATH/);
    });
  }
});

describe('the bins\' compile cache', { timeout: 60_000 }, () => {
  const home = mkdtempSync(join(tmpdir(), 'canary-l4-cache-home-'));
  after(() => rmSync(home, { recursive: true, force: true }));
  const cacheDir = (cacheHome: string) => join(cacheHome, 'canary-l4', 'compile-cache');
  /** `canary-l4 --version` with no compile cache chosen; says whether it loaded the type stripper. */
  const start = async (env: NodeJS.ProcessEnv) => {
    const result = await run(['--import', TYPE_STRIPPER_PROBE, bins['canary-l4']!, '--version'], { NODE_COMPILE_CACHE: undefined, NODE_DISABLE_COMPILE_CACHE: undefined, ...env });
    assert.equal(result.code, 0, result.stderr);
    return /^type stripper loaded: (true|false)$/m.exec(result.stderr)?.[1];
  };

  it('from the second start on, the type stripper is never loaded; the cache is private to the user', async () => {
    const cacheHome = join(home, 'private');
    assert.equal(await start({ XDG_CACHE_HOME: cacheHome }), 'true', 'the first start compiles');
    assert.equal(await start({ XDG_CACHE_HOME: cacheHome }), 'false', 'the second reads the cache back');
    assert.equal(statSync(cacheDir(cacheHome)).mode & 0o777, 0o700);
  });

  it('a cache directory others may write is not used (Node runs what it reads from there)', async () => {
    const cacheHome = join(home, 'shared');
    mkdirSync(cacheDir(cacheHome), { recursive: true });
    chmodSync(cacheDir(cacheHome), 0o777);
    await start({ XDG_CACHE_HOME: cacheHome });
    assert.equal(await start({ XDG_CACHE_HOME: cacheHome }), 'true');
  });

  it('NODE_DISABLE_COMPILE_CACHE turns it off, and nothing is written', async () => {
    const cacheHome = join(home, 'disabled');
    await start({ XDG_CACHE_HOME: cacheHome, NODE_DISABLE_COMPILE_CACHE: '1' });
    assert.equal(await start({ XDG_CACHE_HOME: cacheHome, NODE_DISABLE_COMPILE_CACHE: '1' }), 'true');
    assert.equal(existsSync(cacheHome), false);
  });

  it('where no cache directory can be made, it runs without one', async () => {
    assert.equal(await start({ XDG_CACHE_HOME: '/dev/null/cache' }), 'true');
  });
});
