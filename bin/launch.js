// The package's bins are this plain JavaScript, not the .ts entries themselves: an older Node
// refuses a .ts file before any of its code runs (ERR_UNKNOWN_FILE_EXTENSION), so the version is
// checked here, in syntax every Node since 14 reads, and only then is the TypeScript loaded.
//
// They run the bundle of `npm run build` (dist/, build/bundle.ts: only the code each command runs)
// when it is at least as new as every source and the lockfile, else the sources themselves: a
// checkout just installed runs what ships, one being edited runs the edits.
//
// The bins also turn on Node's compile cache: from the second start on, Node reads the stripped and
// compiled modules back instead of loading its type stripper, ~20 MiB less RSS for the life of
// the process (README, Memory of canary-l4's own processes).

import { lstatSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The Node.js major version the TypeScript sources need (type stripping, package.json engines). */
const NEEDED_MAJOR = 24;
/** The Node.js major version the project pins (the `node` dev dependency) and the image runs. */
const PINNED_MAJOR = 26;

/**
 * Runs `bundle` (a URL of its bundled .js), or `entry` (a URL of the .ts module) when the bundle is
 * missing or older than a source, on Node 24 or later; on an older Node, says so in one line and
 * exits 1.
 * @param {string} name the command, for the message
 * @param {URL} entry the TypeScript entry point
 * @param {URL} bundle the entry's bundle
 */
export async function launch(name, entry, bundle) {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < NEEDED_MAJOR) {
    process.stderr.write(
      `${name}: needs Node.js ${NEEDED_MAJOR} or later, but this is Node.js ${process.versions.node} (${process.execPath}); put Node ${PINNED_MAJOR} first on PATH (in the project: export PATH=$PWD/node_modules/.bin:$PATH)\n`,
    );
    process.exit(1);
  }
  await enablePrivateCompileCache(name);
  return import((isCurrent(bundle) ? bundle : entry).href);
}

/**
 * Whether `bundle` exists and no source is newer: the files under src/ and package-lock.json (a
 * dependency moved). Where there are no sources (an image ships the bundle alone), it is current.
 * @param {URL} bundle
 */
export function isCurrent(bundle) {
  const built = mtimeOf(bundle);
  if (built === undefined) return false;
  const sources = new URL('../src/', import.meta.url);
  if (mtimeOf(sources) === undefined) return true;
  const lockfile = mtimeOf(new URL('../package-lock.json', import.meta.url));
  if (lockfile !== undefined && lockfile > built) return false;
  for (const entry of readdirSync(sources, { recursive: true, withFileTypes: true })) {
    if (entry.isFile() && statSync(`${entry.parentPath}/${entry.name}`).mtimeMs > built) return false;
  }
  return true;
}

/** @param {URL} url @returns {number | undefined} */
function mtimeOf(url) {
  try {
    return statSync(url).mtimeMs;
  } catch {
    return undefined;
  }
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
    if (cluster.isPrimary)
      process.stderr.write(
        `${name}: not using the compile cache ${cache.dir}: ${cache.refusal}; Node runs what it reads back from there, so it must be this user's alone (mode 0700)\n`,
      );
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
    if (typeof process.getuid === 'function' && stat.uid !== process.getuid())
      return { dir, refusal: `it belongs to uid ${stat.uid}, not to this user (uid ${process.getuid()})` };
    if ((stat.mode & 0o077) !== 0)
      return { dir, refusal: `its group or others have access (mode 0${(stat.mode & 0o777).toString(8)})` };
    return { dir };
  } catch {
    return undefined;
  }
}
