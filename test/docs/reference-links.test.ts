// The links of the four reference pages to each other (and within a page) name headings that exist,
// as GitHub anchors them: a heading renamed without its links fails here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { anchorsOf, readPage } from './reference-page.ts';

const PAGES = ['cli.md', 'configuration.md', 'canaryrelease.md', 'metrics.md'];

test('every link between the reference pages names an existing heading', () => {
  const anchors = new Map(PAGES.map((name) => [name, anchorsOf(readPage(name))]));
  const broken = PAGES.flatMap((name) =>
    [...readPage(name).matchAll(/\]\(([a-z-]*\.md)?#([^)]+)\)/g)]
      .filter(([, target = name, fragment]) => anchors.has(target) && !anchors.get(target)!.has(fragment!))
      .map(([link]) => `${name}: ${link}`),
  );
  assert.deepEqual(broken, []);
});
