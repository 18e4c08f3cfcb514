// Fills Node's compile cache (the directory in NODE_COMPILE_CACHE) with every module canary-l4 can
// load, so that no later start loads Node's type stripper: ~20 MiB less RSS per process. The image
// runs it at build time (deploy/Dockerfile); the bins fill their own cache as they go (launch.js).
// Usage: NODE_COMPILE_CACHE=<dir> node --max-semi-space-size=2 bin/warm-compile-cache.js
// (the same Node flags as the processes that will read the cache).

import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

const SOURCES = new URL('../src/', import.meta.url);
/** Modules that run when imported: each is started once the way it runs, with nothing to do. */
const CLI = 'cli/main.ts';
const PLUGIN = 'plugin/main.ts';
const PARSE_THREAD = 'config/parse-thread.ts';

if (process.env.NODE_COMPILE_CACHE === undefined) {
  process.stderr.write('warm-compile-cache: set NODE_COMPILE_CACHE to the cache directory to fill\n');
  process.exit(2);
}

const modules = readdirSync(SOURCES, { recursive: true, encoding: 'utf8' })
  .filter((path) => path.endsWith('.ts') && !path.endsWith('.d.ts'))
  .filter((path) => ![CLI, PLUGIN, PARSE_THREAD].includes(path));
for (const path of modules) await import(new URL(path, SOURCES).href);

for (const [entry, args] of [[CLI, ['--help']], [PLUGIN, ['--help']]]) {
  execFileSync(process.execPath, [...process.execArgv, fileURLToPath(new URL(entry, SOURCES)), ...args], { stdio: 'ignore' });
}
await new Promise((resolve, reject) => {
  const thread = new Worker(new URL(PARSE_THREAD, SOURCES), { workerData: { text: 'listeners: []', source: 'warm-compile-cache' } });
  thread.on('message', () => {});
  thread.once('error', reject);
  thread.once('exit', resolve);
});
process.stdout.write(`warm-compile-cache: ${modules.length + 3} modules of canary-l4 and their dependencies compiled into ${process.env.NODE_COMPILE_CACHE}\n`);
// The cache is written as the process exits; hangups.ts holds SIGHUP, nothing else keeps it alive.
process.exit(0);
