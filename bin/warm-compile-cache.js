// Fills Node's compile cache (the directory in NODE_COMPILE_CACHE) with every module canary-l4 can
// load, so that later starts read them back compiled: where the sources run, no process then loads
// Node's type stripper (~20 MiB less RSS each); where the bundle runs (the image: dist/, no
// sources), every chunk is compiled already (~8 MiB less for the proxy). The image runs it at build
// time (deploy/Dockerfile); the bins fill their own cache as they go (launch.js).
// Usage: NODE_COMPILE_CACHE=<dir> node --max-semi-space-size=2 bin/warm-compile-cache.js
// (the same Node flags as the processes that will read the cache).

import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';

if (process.env.NODE_COMPILE_CACHE === undefined) {
  process.stderr.write('warm-compile-cache: set NODE_COMPILE_CACHE to the cache directory to fill\n');
  process.exit(2);
}

const SOURCES = new URL('../src/', import.meta.url);
const BUNDLE = new URL('../dist/', import.meta.url);
/** What runs: the sources where they are (a checkout), else the bundle alone (the image). */
const [root, layout] = existsSync(SOURCES)
  ? [
      SOURCES,
      {
        cli: 'cli/main.ts',
        plugin: 'plugin/main.ts',
        parseThread: 'config/parse-thread.ts',
        module: /\.ts$/,
        skip: /\.d\.ts$/,
      },
    ]
  : [
      BUNDLE,
      {
        cli: 'canary-l4.js',
        plugin: 'kubectl-canary_l4.js',
        parseThread: 'chunks/parse-thread.js',
        module: /\.js$/,
        skip: /^$/,
      },
    ];

/** Modules that run when imported (the entries, the parsing thread): each is started once the way it runs, with nothing to do. */
const modules = readdirSync(root, { recursive: true, encoding: 'utf8' })
  .filter((path) => layout.module.test(path) && !layout.skip.test(path))
  .filter((path) => ![layout.cli, layout.plugin, layout.parseThread].includes(path));
for (const path of modules) await import(new URL(path, root).href);

for (const entry of [layout.cli, layout.plugin]) {
  execFileSync(process.execPath, [...process.execArgv, fileURLToPath(new URL(entry, root)), '--help'], {
    stdio: 'ignore',
  });
}
await new Promise((resolve, reject) => {
  const thread = new Worker(new URL(layout.parseThread, root), {
    workerData: { text: 'listeners: []', source: 'warm-compile-cache' },
  });
  thread.on('message', () => {});
  thread.once('error', reject);
  thread.once('exit', resolve);
});
process.stdout.write(
  `warm-compile-cache: ${modules.length + 3} modules of canary-l4 (${root === BUNDLE ? 'the bundle' : 'the sources'}) and their dependencies compiled into ${process.env.NODE_COMPILE_CACHE}\n`,
);
// The cache is written as the process exits; hangups.ts holds SIGHUP, nothing else keeps it alive.
process.exit(0);
