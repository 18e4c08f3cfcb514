// What a reload logs it changed (config/changes.ts): listeners added, removed and changed by name, and
// each backend weight that moved, so that a reload's log line says what it did.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { configChanges } from '../../src/config/changes.ts';
import { validateConfig } from '../../src/config/validate.ts';

const listener = (name: string, port: number, weights: Record<string, number>, extra: object = {}) => ({
  name,
  listen: `127.0.0.1:${port}`,
  backends: Object.entries(weights).map(([backend, weight], i) => ({
    name: backend,
    host: '127.0.0.1',
    port: 9000 + i,
    weight,
  })),
  ...extra,
});
const config = (...listeners: object[]) => validateConfig({ listeners }, 'test');

test('a reload names the listeners added, removed and changed, and the weights that moved', () => {
  const before = config(
    listener('web', 8080, { stable: 90, canary: 10 }),
    listener('api', 8081, { stable: 100 }),
    listener('old', 8082, { stable: 100 }),
  );
  const after = config(
    listener('web', 8080, { stable: 80, canary: 20 }),
    listener('api', 8091, { stable: 100, canary: 0 }),
    listener('new', 8083, { stable: 100 }),
  );
  assert.deepEqual(configChanges(before, after), {
    added: ['new'],
    removed: ['old'],
    changed: ['api'],
    weights: ['web: stable 90→80, canary 10→20', 'api: canary new→0'],
  });
});

test('a reload that only moves weights changes no listener; one that changes nothing says nothing', () => {
  const before = config(listener('web', 8080, { stable: 90, canary: 10 }));
  const after = config(listener('web', 8080, { stable: 50, canary: 50 }));
  assert.deepEqual(configChanges(before, after), {
    added: [],
    removed: [],
    changed: [],
    weights: ['web: stable 90→50, canary 10→50'],
  });
  assert.deepEqual(configChanges(before, before), { added: [], removed: [], changed: [], weights: [] });
});

test('a backend dropped is said gone', () => {
  const before = config(listener('web', 8080, { stable: 90, canary: 10 }));
  const after = config(listener('web', 8080, { stable: 100 }));
  assert.deepEqual(configChanges(before, after).weights, ['web: stable 90→100, canary 10→gone']);
  assert.deepEqual(configChanges(before, after).changed, ['web'], 'a backend fewer is a changed listener');
});
