/**
 * The pod network of the simulated node: 198.18.0.0/16 (RFC 2544's benchmarking range, which no
 * real network routes), made local to this host by one route on the loopback device
 * (`ip route add local 198.18.0.0/16 dev lo`), so every address in it can be bound and reached here
 * and no packet leaves the host. Pods cannot live in 127.0.0.0/8 on a real API: kube-apiserver
 * refuses loopback addresses in EndpointSlices ("may not be in the loopback range"), so the real
 * EndpointSlice controller could not publish them.
 *
 * The route is shared: each process that needs it holds it (a file named by its pid), and the last
 * holder removes it, if a holder added it (a route the user added stays).
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { processAlive } from './processes.ts';

export const POD_NETWORK = '198.18.0.0/16';
/** The first two octets: a pod network `198.18.<n>` holds the pods of one test file. */
export const POD_NETWORK_PREFIX = '198.18';

const run = promisify(execFile);
const HOLDERS = join(tmpdir(), 'canary-l4-pod-network');
const ADDED_MARK = join(HOLDERS, 'route-added');

async function routeExists(): Promise<boolean> {
  const { stdout } = await run('ip', ['-4', 'route', 'show', 'table', 'local', POD_NETWORK]);
  return stdout.trim() !== '';
}

/** Makes the pod network local (adding the route if it is missing) and holds it until `release`. */
export async function holdPodNetwork(): Promise<{ release(): Promise<void> }> {
  mkdirSync(HOLDERS, { recursive: true });
  const mine = join(HOLDERS, String(process.pid));
  writeFileSync(mine, '');
  if (!(await routeExists())) {
    try {
      await run('ip', ['route', 'add', 'local', POD_NETWORK, 'dev', 'lo']);
      writeFileSync(ADDED_MARK, '');
    } catch (err) {
      if (!(await routeExists())) {
        rmSync(mine, { force: true });
        throw new Error(
          `the simulated pod network ${POD_NETWORK} needs a local route on lo, and adding it failed ` +
            `(${(err as Error).message.split('\n').at(-2) ?? err}): run as root, or add it once with ` +
            `'sudo ip route add local ${POD_NETWORK} dev lo'`,
        );
      }
    }
  }
  return {
    async release() {
      rmSync(mine, { force: true });
      const others = readdirSync(HOLDERS).filter((name) => /^\d+$/.test(name) && processAlive(Number(name)));
      if (others.length > 0 || !existsSync(ADDED_MARK)) return;
      rmSync(ADDED_MARK, { force: true });
      await run('ip', ['route', 'del', 'local', POD_NETWORK, 'dev', 'lo']).catch(() => undefined);
    },
  };
}
