// docs/cli.md is what build/cli-reference.ts renders from the yargs definitions: a flag added, renamed
// or re-described without `npm run docs:cli` fails here.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { CLI_REFERENCE, anchor, renderCliReference } from '../../build/cli-reference.ts';

test('docs/cli.md is the reference the yargs definitions render (run npm run docs:cli)', () => {
  const written = readFileSync(CLI_REFERENCE, 'utf8');
  assert.equal(written, renderCliReference(), 'docs/cli.md is out of date: run npm run docs:cli');
});

test('every flag of every command has a heading of its own, so a link can name it', () => {
  const headings = renderCliReference()
    .split('\n')
    .filter((line) => line.startsWith('### '))
    .map((line) => anchor(line.slice(4)));
  const links = [
    'canary-l4-serve---config',
    'canary-l4-proxy---canary-release',
    'kubectl-canary-l4-plan---filename',
    'kubectl-canary-l4-set-weight-target',
  ];
  for (const expected of links) {
    assert.ok(headings.includes(expected), `no heading #${expected}`);
  }
  assert.equal(new Set(headings).size, headings.length, 'two headings share an anchor');
});
