// The loopback registry: no /24 is handed to two modules, every owner exists, and no module under test/
// writes an address of 127.0.0.0/8 outside 127.0.0.x itself (it takes one from its range instead), so
// two files running side by side can never bind the same address by accident.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { LOOPBACK_OWNERS, loopbackRange, ownerPath } from './loopback-ranges.ts';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const REGISTRY = 'test/support/net/loopback-ranges.ts';
/** A written address or range of 127.0.0.0/8 past 127.0.0.x, also as a regular expression writes it. */
const WRITTEN_LOOPBACK = /\b127\\?\.0\\?\.[1-9]\d*\b/;

function modulesUnder(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : modulesUnder(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('loopback ranges', () => {
  it('hands no /24 to two modules', () => {
    const ownerOf = new Map<number, string>();
    for (const [owner, octets] of Object.entries(LOOPBACK_OWNERS)) {
      for (const octet of octets) {
        assert.ok(Number.isInteger(octet) && octet >= 1 && octet <= 255, `${owner}: ${octet} is no third octet`);
        const other = ownerOf.get(octet);
        assert.equal(other, undefined, `127.0.${octet}.0/24 is handed to both ${other} and ${owner}`);
        ownerOf.set(octet, owner);
      }
    }
  });

  it('names only modules that exist', () => {
    for (const owner of Object.keys(LOOPBACK_OWNERS)) assert.ok(existsSync(join(ROOT, owner)), `${owner} is gone`);
  });

  it('is the only place under test/ that writes a loopback address past 127.0.0.x', () => {
    const writers = modulesUnder('test')
      .filter((module) => module !== REGISTRY)
      .flatMap((module) =>
        readFileSync(join(ROOT, module), 'utf8')
          .split('\n')
          .flatMap((line, index) => (WRITTEN_LOOPBACK.test(line) ? [`${module}:${index + 1}: ${line.trim()}`] : [])),
      );
    assert.deepEqual(writers, [], 'take these from loopbackRange(import.meta.url) instead');
  });

  it("gives a module its own ranges in the table's order, and refuses one the table does not name", () => {
    const owned = new URL(`../../../${'test/control/controller/reapply.test.ts'}`, import.meta.url).href;
    const [services, pods] = LOOPBACK_OWNERS['test/control/controller/reapply.test.ts']!;
    assert.equal(ownerPath(owned), 'test/control/controller/reapply.test.ts');
    assert.deepEqual(
      [loopbackRange(owned).cidr, loopbackRange(owned, 1).ip(250)],
      [`127.0.${services}.0/24`, `127.0.${pods}.250`],
    );
    assert.match(loopbackRange(owned).ip(7), loopbackRange(owned).addressPattern);
    assert.doesNotMatch(loopbackRange(owned, 1).ip(7), loopbackRange(owned).addressPattern);
    assert.throws(
      () => loopbackRange(owned, 2),
      /test\/control\/controller\/reapply\.test\.ts owns no loopback range number 3: give it a free \/24 in test\/support\/net\/loopback-ranges\.ts/,
    );
    assert.throws(() => loopbackRange(import.meta.url), /loopback-ranges\.test\.ts owns no loopback range number 1/);
  });
});
