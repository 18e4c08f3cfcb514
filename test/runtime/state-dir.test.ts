// `proxy --state-dir`: the saved config belongs to one CanaryRelease; the same directory holding
// another release's (of the same namespace or another) is ignored, and the reason names both.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { validateConfig } from '../../src/config/validate.ts';
import { loadServedConfig, saveServedConfig } from '../../src/runtime/state-dir.ts';

const config = validateConfig(
  {
    listeners: [
      {
        name: 'web-80-tcp',
        listen: '127.0.0.1:18080',
        backends: [{ name: 'forked', host: '127.0.0.1', port: 9376, weight: 100 }],
      },
    ],
  },
  'test',
);

describe('the served config in --state-dir', () => {
  const dir = mkdtempSync(join(tmpdir(), 'canary-l4-state-dir-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("is served again by its own release only; another release's is ignored, saying whose it is", async () => {
    await saveServedConfig(dir, { namespace: 'shop', release: 'web-v1' }, config);
    const own = await loadServedConfig(dir, { namespace: 'shop', release: 'web-v1' });
    assert.equal(own.kind, 'loaded');
    assert.deepEqual(own.kind === 'loaded' ? own.config.listeners.map((listener) => listener.name) : [], [
      'web-80-tcp',
    ]);
    const sameNamespace = await loadServedConfig(dir, { namespace: 'shop', release: 'web-v2' });
    assert.deepEqual(sameNamespace, {
      kind: 'ignored',
      problem: `${join(dir, 'served-config.json')} holds the config of CanaryRelease shop/web-v1, not shop/web-v2`,
    });
    assert.equal(
      (await loadServedConfig(dir, { namespace: 'other', release: 'web-v1' })).kind,
      'ignored',
      'the same name in another namespace is another release',
    );
  });
});
