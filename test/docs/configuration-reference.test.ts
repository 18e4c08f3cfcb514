// docs/configuration.md against the config reader: every key it accepts (CONFIG_KEYS) has a heading,
// every field heading names a key it accepts, and each example config on the page validates.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parse } from 'yaml';
import { CONFIG_KEYS, validateConfig } from '../../src/config/validate.ts';
import { entriesOf, readPage } from './reference-page.ts';

/** Where each mapping of CONFIG_KEYS sits in a document, as the page's headings write it. */
const PATHS: Record<keyof typeof CONFIG_KEYS, string> = {
  root: '',
  listener: 'listeners[].',
  backend: 'listeners[].backends[].',
  udp: 'listeners[].udp.',
  mirror: 'listeners[].mirror.',
};

const page = readPage('configuration.md');

test('docs/configuration.md has a heading for every key the config reader accepts, and for no other', () => {
  const accepted = Object.entries(CONFIG_KEYS).flatMap(([mapping, keys]) => {
    const prefix = PATHS[mapping as keyof typeof CONFIG_KEYS];
    assert.ok(prefix !== undefined, `CONFIG_KEYS.${mapping}: say where it sits in PATHS`);
    return keys.map((key) => `${prefix}${key}`);
  });
  const fields = entriesOf(page)
    .map(({ heading }) => heading)
    .filter((heading) => heading.startsWith('listeners'));
  const undocumented = accepted.filter((path) => !fields.includes(path));
  assert.deepEqual(undocumented, [], 'accepted, with no heading in docs/configuration.md');
  const unknown = fields.filter((path) => !accepted.includes(path));
  assert.deepEqual(unknown, [], 'a heading of docs/configuration.md the reader does not accept');
});

test('every example config of docs/configuration.md validates', () => {
  const examples = [...page.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map(([, text]) => parse(text!) as unknown);
  assert.ok(examples.length >= 2);
  for (const example of examples) assert.doesNotThrow(() => validateConfig(example, 'docs/configuration.md'));
});
