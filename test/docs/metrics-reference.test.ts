// docs/metrics.md against what the code registers (registered-families.ts): a family added without its
// entry, an entry whose family is gone, or a type that differs, fails here.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { entriesOf, readPage } from './reference-page.ts';
import { registeredFamilies } from '../support/registered-families.ts';

test('docs/metrics.md has an entry for every family registered, and none for another, with its type', async () => {
  const registered = new Map((await registeredFamilies()).map((family) => [family.name, family.type]));
  // The facts line of an entry begins with the type: `counter · labels listener · connections`.
  const entries = entriesOf(readPage('metrics.md'));
  const documented = new Map(entries.map(({ heading, facts }) => [heading, facts.split(' · ')[0]]));
  const undocumented = [...registered.keys()].filter((name) => !documented.has(name));
  assert.deepEqual(undocumented, [], 'registered, not in docs/metrics.md');
  const unregistered = [...documented.keys()].filter((name) => !registered.has(name));
  assert.deepEqual(unregistered, [], 'in docs/metrics.md, not registered');
  for (const [name, type] of registered) assert.equal(documented.get(name), type, `${name}: its type on the page`);
});
