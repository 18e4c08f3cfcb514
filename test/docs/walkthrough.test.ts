// docs/walkthroughs.md's "Try it without a cluster", run as written by two people at once on one
// host: every shell block of the section (the "Only if" one aside) pasted into a shell of its own,
// both shells at the same time, in this checkout. Each must finish (its releases adopted and rolled
// back, each proxy exiting 0, every `kubectl wait` met) with a kubeconfig, files and logs under a
// directory of its own, its fake on a loopback block of its own and its proxies on that block's
// address, so neither sees nor binds anything of the other's.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { requireTool } from '../support/process/required-tool.ts';
import { readPage } from './reference-page.ts';

const CHECKOUT = fileURLToPath(new URL('../../', import.meta.url));
/** Both runs together: each takes ~3 minutes alone on a quiet machine, most of it the releases' own pauses. */
const BUDGET_MS = 9 * 60_000;

/** The section's shell blocks in order, but the one whose paragraph says to paste it "Only if" something went wrong. */
function walkthroughScript(page: string): string {
  const start = page.indexOf('## Try it without a cluster');
  const section = page.slice(start, page.indexOf('\n## ', start + 1));
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)]
    .filter((block) => {
      const before = section.slice(0, block.index).trimEnd();
      return !before.slice(before.lastIndexOf('\n\n') + 2).startsWith('Only if');
    })
    .map(([, code]) => code!)
    .join('');
}

/** The shells' process groups still running: stopped after the suite however it ends (a timeout cancels the test before its finally). */
const running = new Set<number>();
function stopAll(): void {
  for (const group of running) {
    try {
      process.kill(-group, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  running.clear();
}
process.once('exit', stopAll);

interface Run {
  readonly code: number | null;
  readonly output: string;
}

/** The script in a shell of its own (a process group, so that whatever it leaves is stopped too), as a user pastes it. */
async function runWalkthrough(script: string): Promise<Run> {
  const shell = spawn('bash', ['-c', `set -e\n${script}`], {
    cwd: CHECKOUT,
    detached: true,
    env: { ...process.env, KUBECONFIG: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(shell.pid!);
  let output = '';
  shell.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  shell.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const timer = setTimeout(() => process.kill(-shell.pid!, 'SIGKILL'), BUDGET_MS);
  try {
    const [code] = (await once(shell, 'exit')) as [number | null];
    return { code, output };
  } finally {
    clearTimeout(timer);
    // Whatever it started and left (a fake, a proxy, the clients), on any outcome.
    try {
      process.kill(-shell.pid!, 'SIGKILL');
    } catch {
      // none left
    }
    running.delete(shell.pid!);
  }
}

describe('docs/walkthroughs.md: Try it without a cluster, twice at once on one host', {
  ...(await requireTool('kubectl')),
  timeout: BUDGET_MS + 60_000,
}, () => {
  after(stopAll);
  // Its own timeout: npm test's --test-timeout (100 s) would apply to an it() without one.
  it('both runs finish, each on a loopback block, a directory and proxy addresses of its own', {
    timeout: BUDGET_MS + 30_000,
  }, async () => {
    const script = walkthroughScript(readPage('walkthroughs.md'));
    assert.doesNotMatch(script, /Only if|delete crel web-v2 --timeout/, 'the "Only if" block is not pasted');
    const waits = script.match(/^kubectl wait /gm)?.length ?? 0;
    const proxies = script.match(/^canary-l4 proxy /gm)?.length ?? 0;
    assert.ok(waits >= 5 && proxies === 3, `the section as expected: ${waits} waits, ${proxies} proxies`);
    const runs = await Promise.all([runWalkthrough(script), runWalkthrough(script)]);
    const blocks = runs.map((run, index) => {
      assert.equal(run.code, 0, `run ${index + 1} failed:\n${run.output.slice(-6000)}`);
      assert.equal(run.output.match(/condition met/g)?.length, waits, `run ${index + 1}: every wait met`);
      assert.equal(run.output.match(/^proxy exited: 0$/gm)?.length, proxies, `run ${index + 1}: each proxy exited 0`);
      assert.match(run.output, /^example\/web:3\.0$/m, `run ${index + 1}: the Service ends on web:3.0`);
      const block = /^loopback block (127\.\d+\.0\.0\/16), this fake's alone/m.exec(run.output)?.[1];
      assert.ok(block, `run ${index + 1} printed its loopback block`);
      return block;
    });
    assert.notEqual(blocks[0], blocks[1], 'two fakes on one host took two loopback blocks');
  });
});
