// The lint gate itself: `npm run lint`'s command, run over a copy of src/ and biome.jsonc, passes on the tree as
// it is, and fails naming the rule and the room on an upward import (across rooms and within one), and on code
// the formatter would change.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { appendFileSync, cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from 'node:test';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const LINT = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { lint: string } }).scripts
  .lint;

let copy = '';

/** Runs `npm run lint`'s command in the copy; resolves with its exit code and everything it printed. */
function lint(): Promise<{ code: number; output: string }> {
  const [command, ...args] = LINT.split(' ');
  return new Promise((resolve) => {
    execFile(join(copy, 'node_modules/.bin', command!), args, { cwd: copy }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : typeof err.code === 'number' ? err.code : 1, output: stdout + stderr });
    });
  });
}

/** Lints the copy with `text` appended to `file` (a path under src/), then puts the file back. */
async function lintWith(file: string, text: string): Promise<{ code: number; output: string }> {
  const path = join(copy, file);
  const original = readFileSync(path, 'utf8');
  appendFileSync(path, text);
  try {
    return await lint();
  } finally {
    writeFileSync(path, original);
  }
}

describe('npm run lint', () => {
  before(() => {
    copy = mkdtempSync(join(tmpdir(), 'canary-l4-lint-'));
    for (const entry of ['src', 'biome.jsonc', 'package.json', '.gitignore']) {
      cpSync(join(ROOT, entry), join(copy, entry), { recursive: true });
    }
    symlinkSync(join(ROOT, 'node_modules'), join(copy, 'node_modules'));
  });
  after(() => rmSync(copy, { recursive: true, force: true }));

  it('passes on the tree as it is', async () => {
    const { code, output } = await lint();
    assert.equal(code, 0, output);
  });

  it('fails on an upward import across rooms: the data plane importing kube/', async () => {
    const { code, output } = await lintWith('src/dataplane/tcp/pipe.ts', "import '../../kube/client.ts';\n");
    assert.notEqual(code, 0);
    assert.match(output, /src\/dataplane\/tcp\/pipe\.ts:\d+:\d+ lint\/style\/noRestrictedImports/);
    assert.match(output, /dataplane\/tcp\/ and udp\/ import only/);
  });

  it('fails on the data plane importing the Kubernetes client, even as a type', async () => {
    const { code, output } = await lintWith(
      'src/dataplane/choice/balancer.ts',
      "import type {} from '@kubernetes/client-node';\n",
    );
    assert.notEqual(code, 0);
    assert.match(output, /dataplane\/ knows nothing of Kubernetes/);
  });

  it('fails on an upward import within a room: control/service/ importing control/loop/', async () => {
    const { code, output } = await lintWith('src/control/service/ports.ts', "export {} from '../loop/apply.ts';\n");
    assert.notEqual(code, 0);
    assert.match(output, /control\/service\/ imports only/);
  });

  it('fails on code the formatter would change', async () => {
    const { code, output } = await lintWith('src/util/slicer.ts', 'export const  unformatted = {a:1}\n');
    assert.notEqual(code, 0);
    assert.match(output, /src\/util\/slicer\.ts format/);
  });
});
