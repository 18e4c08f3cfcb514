// afterDelivery: a SIGHUP a child handles leaves it alive once delivered; one it does not handle
// (the default action) leaves it gone, and neither needs a sleep to tell.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { afterDelivery } from './signal-delivery.ts';

/** A node child that says `ready` once its own code runs (with a SIGHUP handler if `handles`). */
async function child(handles: boolean) {
  const code = `${handles ? "process.on('SIGHUP', () => {});" : ''} setInterval(() => {}, 1000); console.log('ready');`;
  const started = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  await once(started.stdout, 'data');
  return started;
}

describe('afterDelivery', () => {
  it('a handled SIGHUP: alive once delivered', async () => {
    const handling = await child(true);
    try {
      handling.kill('SIGHUP');
      assert.equal(await afterDelivery(handling.pid!, 'SIGHUP'), 'alive');
    } finally {
      handling.kill('SIGKILL');
    }
  });

  it('an unhandled SIGHUP: gone once delivered', async () => {
    const plain = await child(false);
    const exited = once(plain, 'exit');
    plain.kill('SIGHUP');
    assert.equal(await afterDelivery(plain.pid!, 'SIGHUP'), 'gone');
    assert.deepEqual(await exited, [null, 'SIGHUP']);
  });
});
