// The log lines' way out (src/log.ts, LogDestination), as a process's reader sees it: what a process
// logs just before it exits reaches the reader, and a process whose reader has gone still exits (with
// pino's own destination it retried the write forever in its exit, and ignored SIGTERM from then on).

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, it } from 'node:test';
import { waitFor } from '../support/wait.ts';

const LOG = new URL('../../src/log.ts', import.meta.url).href;

/** A child that logs `lines` lines at info when it reads "go" on stdin, then calls process.exit(0). */
function logThenExit(lines: number) {
  const script = `
    import { createLogger } from ${JSON.stringify(LOG)};
    const log = createLogger('info');
    process.stdin.once('data', () => {
      for (let i = 0; i < ${lines}; i++) log.info({ i }, 'line');
      process.exit(0);
    });
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  // The child has exited and its stdout has ended: what it wrote is all read.
  const closed = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
  return { child, exited, closed };
}

describe('log lines', () => {
  it('what a process logs just before it exits reaches its reader, every line in order', async () => {
    const { child, closed } = logThenExit(2000);
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stdin.end('go\n');
    const [code] = await closed;
    assert.equal(code, 0);
    const numbers = out
      .trim()
      .split('\n')
      .map((line) => (JSON.parse(line) as { i: number }).i);
    assert.deepEqual(
      numbers,
      Array.from({ length: 2000 }, (_, i) => i),
    );
  });

  it('a process whose log reader has gone exits when it asks to, the lines dropped', async () => {
    const { child, exited } = logThenExit(50);
    let exit: [number | null, NodeJS.Signals | null] | undefined;
    void exited.then((value) => (exit = value));
    // The reader goes: every write from now on fails with EPIPE.
    child.stdout.destroy();
    child.stdin.end('go\n');
    try {
      await waitFor(() => exit !== undefined, 'the child to exit', 5_000);
    } finally {
      child.kill('SIGKILL');
    }
    assert.deepEqual(exit, [0, null]);
  });
});
