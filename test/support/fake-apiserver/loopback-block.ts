// A loopback block of its own for `npm run fake-apiserver`, so that two people (or two walkthroughs)
// on one host never share a Service or pod address: the fake claims a free 127.N.0.0/16 by creating a
// lock file for it in the temp folder, holding its pid. A lock whose process is gone is taken over;
// the lock goes when the fake exits. The tests choose their ranges themselves and take no block.

import { closeSync, mkdirSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The blocks the fake may claim: clear of 127.0.x (the tests', 127.0.0.1's) and 127.96 (npm run cluster's). */
const FIRST = 101;
const LAST = 199;

export interface LoopbackBlock {
  /** `127.N.0.0/16`. */
  readonly block: string;
  readonly serviceCidr: string;
  readonly podCidr: string;
  /** An address of the block no Service or pod takes: for what the user runs (a proxy's --listen-address). */
  readonly hostAddress: string;
  /** Removes the lock (idempotent). */
  release(): void;
}

const LOCKS = join(tmpdir(), 'canary-l4-fake-apiserver');

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Claims the first free block, or throws when all are taken. */
export function claimLoopbackBlock(): LoopbackBlock {
  mkdirSync(LOCKS, { recursive: true, mode: 0o1777 });
  for (let n = FIRST; n <= LAST; n++) {
    const lock = join(LOCKS, `127.${n}.lock`);
    if (!take(lock)) continue;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      rmSync(lock, { force: true });
    };
    process.once('exit', release);
    return {
      block: `127.${n}.0.0/16`,
      serviceCidr: `127.${n}.10.0/24`,
      podCidr: `127.${n}.200.0/24`,
      hostAddress: `127.${n}.0.1`,
      release,
    };
  }
  throw new Error(
    `every loopback block 127.${FIRST}-${LAST}.0.0/16 is taken by a running fake-apiserver (locks in ${LOCKS}); give --service-cidr and --pod-cidr`,
  );
}

/** Creates the lock (or takes over a stale one): whether this process holds it now. */
function take(lock: string): boolean {
  if (create(lock)) return true;
  const stale = readLock(lock);
  const holder = Number(stale);
  if (Number.isInteger(holder) && holder > 0 && alive(holder)) return false;
  // Its fake is gone. One taker at a time (mkdir is atomic), or two could each remove the other's new lock.
  const takeover = `${lock}.takeover`;
  try {
    mkdirSync(takeover);
  } catch {
    return false;
  }
  try {
    // Taken over by another since it was read: theirs now.
    if (readLock(lock) !== stale) return false;
    rmSync(lock, { force: true });
    return create(lock);
  } finally {
    rmSync(takeover, { recursive: true, force: true });
  }
}

function create(lock: string): boolean {
  try {
    const fd = openSync(lock, 'wx', 0o644);
    writeSync(fd, String(process.pid));
    closeSync(fd);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

function readLock(lock: string): string {
  try {
    return readFileSync(lock, 'utf8').trim();
  } catch {
    return '';
  }
}
