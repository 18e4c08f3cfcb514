// `npm run build` (and `prepare`, so `npm ci` runs it): the two commands bundled for what ships.
// esbuild, because it is one dependency with no plugins needed, takes the TypeScript as Node runs it
// (type stripping only), and tree-shakes ESM: of client-node's 68 API groups the 6 the proxy and the
// manager call stay, with the models (the serializer names them all): 1.3 MiB of its code in the
// bundle. Code splitting keeps each command's lazily imported parts in chunks of their own, so
// `serve` never maps client-node's code; minifying keeps every chunk ASCII (a non-ASCII comment
// makes V8 hold a whole chunk's source as two-byte text).
//
// Output: dist/canary-l4.js, dist/kubectl-canary_l4.js, their chunks, and dist/meta.json (which
// sources each chunk holds: the test of what each command loads reads it); `node build/bundle.ts
// DIR` writes them to DIR instead. They need no node_modules. The bins run the bundle when it is at
// least as new as every source (bin/launch.js), else the sources.
import { rmSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const outdir = resolve(process.argv[2] ?? resolve(root, 'dist'));

rmSync(outdir, { recursive: true, force: true });
const started = performance.now();
const result = await build({
  absWorkingDir: root,
  // The config's parsing thread (config/load.ts) is a chunk of its own, beside the code that starts it.
  entryPoints: {
    'canary-l4': 'src/cli/main.ts',
    'kubectl-canary_l4': 'src/plugin/main.ts',
    'chunks/parse-thread': 'src/config/parse-thread.ts',
  },
  define: { CANARY_L4_BUNDLED: 'true' },
  outdir,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node24',
  minify: true,
  charset: 'ascii',
  legalComments: 'none',
  chunkNames: 'chunks/[name]-[hash]',
  // The CommonJS dependencies (pino, prom-client) call require() for Node's own modules.
  banner: { js: "import{createRequire as __cr}from'node:module';const require=__cr(import.meta.url);" },
  metafile: true,
  logLevel: 'warning',
});
writeFileSync(resolve(outdir, 'meta.json'), JSON.stringify(result.metafile));
const outputs = Object.entries(result.metafile.outputs).filter(([file]) => file.endsWith('.js'));
const bytes = outputs.reduce((sum, [, output]) => sum + output.bytes, 0);
console.log(
  `canary-l4 build: ${outputs.length} files, ${(bytes / 1024 / 1024).toFixed(1)} MiB in ${outdir} (${Math.round(performance.now() - started)} ms)`,
);
