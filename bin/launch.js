// The package's bins are this plain JavaScript, not the .ts entries themselves: an older Node
// refuses a .ts file before any of its code runs (ERR_UNKNOWN_FILE_EXTENSION), so the version is
// checked here, in syntax every Node since 14 reads, and only then is the TypeScript loaded.

/** The Node.js major version the TypeScript sources need (type stripping, package.json engines). */
const NEEDED_MAJOR = 24;

/**
 * Runs `entry` (a URL of a .ts module) on Node 24 or later; on an older Node, says so in one line
 * and exits 1.
 * @param {string} name the command, for the message
 * @param {URL} entry the TypeScript entry point
 */
export function launch(name, entry) {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < NEEDED_MAJOR) {
    process.stderr.write(`${name}: needs Node.js ${NEEDED_MAJOR} or later, but this is Node.js ${process.versions.node} (${process.execPath}); put Node 24 first on PATH (in the project: export PATH=$PWD/node_modules/.bin:$PATH)\n`);
    process.exit(1);
  }
  return import(entry.href);
}
