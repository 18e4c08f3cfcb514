// The package's bins are this plain JavaScript, not the .ts entries themselves: an older Node
// refuses a .ts file before any of its code runs (ERR_UNKNOWN_FILE_EXTENSION), so the version is
// checked here, in syntax every Node since 14 reads, and only then is the TypeScript loaded.
//
// The bins also turn on Node's compile cache: from the second start on, Node reads the stripped and
// compiled modules back instead of loading its type stripper, ~20 MiB less RSS for the life of
// the process (README, Memory of canary-l4's own processes).

import { lstatSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The Node.js major version the TypeScript sources need (type stripping, package.json engines). */
const NEEDED_MAJOR = 24;

/**
 * Runs `entry` (a URL of a .ts module) on Node 24 or later; on an older Node, says so in one line
 * and exits 1.
 * @param {string} name the command, for the message
 * @param {URL} entry the TypeScript entry point
 */
export async function launch(name, entry) {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < NEEDED_MAJOR) {
    process.stderr.write(`${name}: needs Node.js ${NEEDED_MAJOR} or later, but this is Node.js ${process.versions.node} (${process.execPath}); put Node 24 first on PATH (in the project: export PATH=$PWD/node_modules/.bin:$PATH)\n`);
    process.exit(1);
  }
  await enablePrivateCompileCache(name);
  return import(entry.href);
}

/**
 * Turns on Node's compile cache in a directory only this user can write, unless the user chose
 * (NODE_COMPILE_CACHE, as the image does) or refused (NODE_DISABLE_COMPILE_CACHE) one. Node runs
 * what it reads back from there, hence private: not Node's default under the shared tmpdir. Where
 * no such directory can be had (no home, a read-only file system), it runs without: only memory
 * is at stake, never a failure. A directory that is there but not private is said, in one line.
 * @param {string} name the command, for the message
 */
async function enablePrivateCompileCache(name) {
  if (process.env.NODE_COMPILE_CACHE !== undefined || process.env.NODE_DISABLE_COMPILE_CACHE !== undefined) return;
  const cache = privateCacheDir();
  if (cache === undefined) return;
  if (cache.refusal !== undefined) {
    // Each worker of serve --workers runs this bin again: the primary has said it.
    const { default: cluster } = await import('node:cluster');
    if (cluster.isPrimary) process.stderr.write(`${name}: not using the compile cache ${cache.dir}: ${cache.refusal}; Node runs what it reads back from there, so it must be this user's alone (mode 0700)\n`);
    return;
  }
  const { enableCompileCache } = await import('node:module');
  enableCompileCache(cache.dir);
}

/**
 * `$XDG_CACHE_HOME/canary-l4/compile-cache` (default `~/.cache`), made 0700 when new; with why
 * it is not this user's alone when it is not; undefined when it cannot be made.
 * @returns {{ dir: string, refusal?: string } | undefined}
 */
function privateCacheDir() {
  try {
    const dir = join(process.env.XDG_CACHE_HOME || join(homedir(), '.cache'), 'canary-l4', 'compile-cache');
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const stat = lstatSync(dir);
    if (!stat.isDirectory()) return { dir, refusal: 'it is not a directory (a symbolic link is not followed)' };
    if (typeof process.getuid === 'function' && stat.uid !== process.getuid()) return { dir, refusal: `it belongs to uid ${stat.uid}, not to this user (uid ${process.getuid()})` };
    if ((stat.mode & 0o077) !== 0) return { dir, refusal: `its group or others have access (mode 0${(stat.mode & 0o777).toString(8)})` };
    return { dir };
  } catch {
    return undefined;
  }
}
