// docs/metrics.md against what the code registers (registered-families.ts): a family added without its
// entry, an entry whose family is gone, or a type that differs, fails here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { entriesOf, readPage } from './reference-page.ts';
import { registeredFamilies } from './registered-families.ts';

test('docs/metrics.md has an entry for every family registered, and none for another, with its type', async () => {
  const registered = new Map((await registeredFamilies()).map((family) => [family.name, family.type]));
  const documented = new Map(entriesOf(readPage('metrics.md')).map(({ heading, facts }) => [heading, facts.split(' · ')[0]]));
  assert.deepEqual([...registered.keys()].filter((name) => !documented.has(name)), [], 'registered, not in docs/metrics.md');
  assert.deepEqual([...documented.keys()].filter((name) => !registered.has(name)), [], 'in docs/metrics.md, not registered');
  for (const [name, type] of registered) assert.equal(documented.get(name), type, `${name}: the type docs/metrics.md gives`);
});
