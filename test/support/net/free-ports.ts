// Ports probed free instead of fixed numbers, so that test files running side by side (and anything
// else on the machine) never fight over one: a single port, or a contiguous block (a proxy's
// --port-base range), probed at random below the kernel's ephemeral range until every port in it binds.
import dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';

/**
 * A port that was free a moment ago, below the kernel's ephemeral range: a port bound to 0 comes from
 * that range, where the kernel may hand it to any outgoing connection before the test's server binds
 * it (kube-apiserver, started seconds after its port was chosen, once failed on it in CI).
 */
export async function freePort(host = '127.0.0.1', protocol: 'tcp' | 'udp' = 'tcp'): Promise<number> {
  return await freePortBlock(1, { host, udp: protocol === 'udp', tcp: protocol === 'tcp' });
}

/** Retries `attempt(port)` with fresh free ports while it fails with EADDRINUSE (a parallel test took the port). */
export async function withFreePort<T>(
  attempt: (port: number) => Promise<T>,
  host = '127.0.0.1',
  tries = 5,
): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await attempt(await freePort(host));
    } catch (err) {
      if (
        i >= tries ||
        !/EADDRINUSE/.test(String((err as Error).message) + String((err as NodeJS.ErrnoException).code))
      )
        throw err;
    }
  }
}

// Blocks come from below Linux's default ephemeral range (32768-60999), where the kernel picks no
// port for an outgoing connection or a bind to 0, so only another test's block can collide.
const BLOCK_LOW = 10_000;
const BLOCK_HIGH = 32_768;
const BLOCK_TRIES = 50;

/** Blocks this process handed out: one is not bound until its test starts, so a probe cannot see it. */
const handedOut: { readonly base: number; readonly count: number }[] = [];

/**
 * The first port of `count` contiguous ports that were all free a moment ago, for TCP (and UDP too
 * with `udp`) on every address (`host` 0.0.0.0, which clashes with a bind to any one address), and
 * overlapping no block handed out before in this process.
 */
export async function freePortBlock(
  count: number,
  options: { readonly udp?: boolean; readonly tcp?: boolean; readonly host?: string } = {},
): Promise<number> {
  const host = options.host ?? '0.0.0.0';
  const protocols = { tcp: options.tcp !== false, udp: options.udp === true };
  for (let tries = 0; tries < BLOCK_TRIES; tries++) {
    const base = BLOCK_LOW + Math.floor(Math.random() * (BLOCK_HIGH - BLOCK_LOW - count));
    if (handedOut.some((block) => base < block.base + block.count && block.base < base + count)) continue;
    if (!(await allBind(host, base, count, protocols))) continue;
    handedOut.push({ base, count });
    return base;
  }
  throw new Error(`no ${count} contiguous free ports between ${BLOCK_LOW} and ${BLOCK_HIGH} in ${BLOCK_TRIES} tries`);
}

/**
 * Whether every port of base..base+count-1 binds for each protocol asked; closes what it bound either
 * way. A port in use is a false, never a throw (events.once rejects on 'error': the search moves on).
 */
export async function allBind(
  host: string,
  base: number,
  count: number,
  protocols: { readonly tcp: boolean; readonly udp: boolean },
): Promise<boolean> {
  const opened: (() => Promise<void>)[] = [];
  try {
    for (let port = base; port < base + count; port++) {
      if (protocols.tcp) {
        const server = net.createServer();
        server.listen({ host, port, exclusive: true });
        if (!(await bound(server))) return false;
        opened.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
      }
      if (!protocols.udp) continue;
      const socket = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
      socket.bind({ address: host, port });
      if (!(await bound(socket))) {
        socket.close();
        return false;
      }
      opened.push(() => new Promise<void>((resolve) => socket.close(() => resolve())));
    }
    return true;
  } finally {
    await Promise.all(opened.map((close) => close()));
  }
}

/** 'listening' → true, 'error' → false (once() rejects with the error, which is the answer here). */
async function bound(socket: net.Server | dgram.Socket): Promise<boolean> {
  return await once(socket, 'listening').then(
    () => true,
    () => false,
  );
}
