// The package's bins (package.json `bin`) as npm installs them: on Node 24 they run the TypeScript
// entries; on an older Node they say in one line which Node they need (the .ts entries themselves
// would fail there with ERR_UNKNOWN_FILE_EXTENSION before any of their code ran).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';

const projectDir = fileURLToPath(new URL('../../', import.meta.url));
const bins = (JSON.parse(readFileSync(new URL('package.json', `file://${projectDir}`), 'utf8')) as { bin: Record<string, string> }).bin;

/** A preload that makes this Node report another version, as an older Node would. */
const pretendNode = (version: string) =>
  `data:text/javascript,Object.defineProperty(process,"versions",{value:{...process.versions,node:"${version}"}})`;

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: projectDir, timeout: 30_000 }, (err, stdout, stderr) => {
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
