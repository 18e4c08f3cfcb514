// `refuse: true` on a backend (its share refused, Gateway API's invalid backendRef): read from a
// file, its address left out or written as '' and 0, and the problems a user can make with it.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { loadConfigFile } from '../../src/config/load.ts';
import { validateConfig } from '../../src/config/validate.ts';
import { namedBackendHosts } from '../../src/config/warnings.ts';
import { ConfigError } from '../../src/errors.ts';

function validateProblems(raw: unknown): readonly string[] {
  try {
    validateConfig(raw, 'test');
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  assert.fail('expected a ConfigError');
}

const stable = { name: 'stable', host: '10.0.0.12', port: 80, weight: 80 };
const withBackends = (...backends: Record<string, unknown>[]) => ({
  listeners: [{ name: 'web', listen: 8080, backends }],
});

describe('refuse: true on a backend', () => {
  test('a config file with refuse: true loads; the refusing backend has no address', async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'canary-l4-refuse-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const file = join(dir, 'lb.yaml');
    await writeFile(
      file,
      [
        'listeners:',
        '  - name: web',
        '    listen: 8080',
        '    backends:',
        '      - { name: stable, host: 10.0.0.12, port: 80, weight: 80 }',
        '      - { name: missing, weight: 20, refuse: true }',
        '',
      ].join('\n'),
    );
    const config = await loadConfigFile(file);
    assert.deepEqual(config.listeners[0]!.backends, [
      stable,
      { name: 'missing', host: '', port: 0, weight: 20, refuse: true },
    ]);
    assert.deepEqual(
      namedBackendHosts(config),
      [],
      'no "does not resolve" warning for a backend that connects nowhere',
    );
  });

  test("host: '' and port: 0 are accepted with refuse: true, as a generated config writes them", () => {
    const config = validateConfig(
      withBackends(stable, { name: 'x', host: '', port: 0, weight: 20, refuse: true }),
      't',
    );
    assert.deepEqual(config.listeners[0]!.backends[1], { name: 'x', host: '', port: 0, weight: 20, refuse: true });
  });

  test('an address given with refuse: true is kept and still checked', () => {
    const config = validateConfig(withBackends({ ...stable, refuse: true }), 't');
    assert.deepEqual(config.listeners[0]!.backends[0], { ...stable, refuse: true });
    assert.deepEqual(validateProblems(withBackends({ name: 'x', host: 'a b', port: 70000, weight: 1, refuse: true })), [
      'listeners[0].backends[0].host: must be an IP address or a DNS name, got "a b"',
      'listeners[0].backends[0].port: must be an integer 1-65535, got 70000',
    ]);
  });

  test('refuse: false (or absent) still needs the address, and leaves no refuse key', () => {
    assert.deepEqual(validateProblems(withBackends({ name: 'x', host: '', port: 0, weight: 1, refuse: false })), [
      'listeners[0].backends[0].host: must be an IP address or a DNS name, got ""',
      'listeners[0].backends[0].port: must be an integer 1-65535, got 0',
    ]);
    assert.deepEqual(validateProblems(withBackends({ name: 'x', weight: 1 })), [
      'listeners[0].backends[0].host: is required (an IP address or a DNS name)',
      'listeners[0].backends[0].port: is required (an integer 1-65535)',
    ]);
    const config = validateConfig(withBackends({ ...stable, refuse: false }), 't');
    assert.equal('refuse' in config.listeners[0]!.backends[0]!, false);
  });

  test('refuse must be a boolean', () => {
    assert.deepEqual(validateProblems(withBackends(stable, { name: 'x', weight: 1, refuse: 'yes' })), [
      'listeners[0].backends[1].refuse: must be true or false, got "yes"',
      'listeners[0].backends[1].host: is required (an IP address or a DNS name)',
      'listeners[0].backends[1].port: is required (an integer 1-65535)',
    ]);
  });

  test('a refusing backend cannot be the mirror target', () => {
    const raw = withBackends(stable, { name: 'missing', weight: 0, refuse: true });
    (raw.listeners[0] as Record<string, unknown>).mirror = { to: 'missing', percent: 10 };
    assert.deepEqual(validateProblems(raw), [
      'listeners[0].mirror.to: names a backend with refuse: true, which has nowhere to send the copies; name a backend that serves, got "missing"',
    ]);
  });
});
