// A listener's `listen`: a port, "port", "host:port" or "[ipv6]:port" read into a ListenAddress,
// and the one way logs and errors show one. Pure; problems recorded as fields.ts does.

import { isIPv4, isIPv6 } from 'node:net';
import { describe } from './fields.ts';
import { isDnsName } from './hosts.ts';
import type { ListenAddress } from './types.ts';

const LISTEN_EXPECTED = 'a port 1-65535, "port", "host:port" or "[ipv6]:port"';
// Port 0 (a system-chosen port) is refused: the data plane keys listeners by address, and a
// reload could not keep such a listener. So port 0 marks an invalid value, left out of the clash check.
/** What an invalid or missing `listen` reads as. */
export const UNBOUND: ListenAddress = Object.freeze({ host: undefined, port: 0 });

/** A listener's `listen`; UNBOUND, with the problem recorded, when it is not one. */
export function readListen(value: unknown, path: string, problems: string[]): ListenAddress {
  if (value === undefined) {
    problems.push(`${path}: is required (${LISTEN_EXPECTED})`);
    return UNBOUND;
  }
  const address = parseListenAddress(value);
  if (address !== undefined) return address;
  const bracketHint =
    typeof value === 'string' && /:.*:/.test(value) && !value.startsWith('[')
      ? ' (an IPv6 address goes in brackets, as in "[::1]:8080")'
      : '';
  problems.push(`${path}: must be ${LISTEN_EXPECTED}, got ${describe(value)}${bracketHint}`);
  return UNBOUND;
}

function parseListenAddress(value: unknown): ListenAddress | undefined {
  if (typeof value === 'number') return listenPort(undefined, value);
  if (typeof value !== 'string') return undefined;
  if (/^\d{1,5}$/.test(value)) return listenPort(undefined, Number(value));
  const bracketed = /^\[([^\]]+)\]:(\d{1,5})$/.exec(value);
  if (bracketed?.[1] !== undefined && isIPv6(bracketed[1])) return listenPort(bracketed[1], Number(bracketed[2]));
  const hostPort = /^([^:[\]]+):(\d{1,5})$/.exec(value);
  const host = hostPort?.[1];
  if (host === '*') return listenPort(undefined, Number(hostPort?.[2])); // nginx's spelling of "every address"
  if (host !== undefined && (isIPv4(host) || isDnsName(host))) return listenPort(host, Number(hostPort?.[2]));
  return undefined;
}

function listenPort(host: string | undefined, port: number): ListenAddress | undefined {
  return Number.isInteger(port) && port >= 1 && port <= 65_535 ? Object.freeze({ host, port }) : undefined;
}

/** `*:8080`, `127.0.0.1:8080`, `[::1]:8080`: how logs and errors show a listen address. */
export function formatListenAddress({ host, port }: ListenAddress): string {
  if (host === undefined) return `*:${port}`;
  return isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
}
