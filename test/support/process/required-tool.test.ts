// requireTool: a missing tool skips the suite on a developer's machine and fails it in CI; a tool
// that is there runs it either way. "Missing" is a PATH of one empty directory.
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { requireTool } from './required-tool.ts';

describe('requireTool', () => {
  let emptyDir: string;
  before(async () => (emptyDir = await mkdtemp(join(tmpdir(), 'no-tools-'))));
  after(() => rm(emptyDir, { recursive: true, force: true }));

  it('without CI, a tool missing from PATH skips, saying which', async () => {
    assert.deepEqual(await requireTool('python3', { PATH: emptyDir }), { skip: 'python3 is not on PATH' });
    assert.deepEqual(await requireTool('kubectl', { PATH: emptyDir, CI: '' }), { skip: 'kubectl is not on PATH' });
  });

  it('with CI set, a tool missing from PATH fails', async () => {
    await assert.rejects(
      requireTool('kubectl', { PATH: emptyDir, CI: '1' }),
      /kubectl is not on PATH, and CI runs every suite that needs it/,
    );
  });

  it('a tool on PATH runs, with CI or without', async (t) => {
    const present = await requireTool('python3');
    if (present.skip !== false) return t.skip(present.skip);
    assert.deepEqual(await requireTool('python3', { ...process.env, CI: '1' }), { skip: false });
  });
});
