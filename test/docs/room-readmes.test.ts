// docs/architecture.md says every folder of src/ has a README.md saying what it owns and what it may
// import: a folder added without one fails here, by name.
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function folders(dir: string): string[] {
  return [
    dir,
    ...readdirSync(join(ROOT, dir), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .flatMap((entry) => folders(`${dir}/${entry.name}`)),
  ];
}

it('every folder of src/ has a README.md', () => {
  assert.deepEqual(
    folders('src').filter((folder) => !existsSync(join(ROOT, folder, 'README.md'))),
    [],
    'write what the folder owns and what it may import in its README.md',
  );
});
