// The clash check of a config's listeners: two listeners of one protocol on one port whose hosts
// can overlap would fail to bind, so the second is reported with the first it clashes with. Pure.

import { isIPv6 } from 'node:net';
import { describe } from './fields.ts';
import { formatListenAddress, UNBOUND } from './listen-address.ts';
import type { ListenerConfig } from './types.ts';

export function reportPortClashes(listeners: readonly (ListenerConfig | undefined)[], problems: string[]): void {
  listeners.forEach((listener, index) => {
    if (listener === undefined || listener.listen.port === UNBOUND.port) return; // already reported
    const earlierIndex = listeners.findIndex(
      (other, otherIndex) =>
        otherIndex < index &&
        other !== undefined &&
        other.protocol === listener.protocol &&
        other.listen.port === listener.listen.port &&
        hostsOverlap(other.listen.host, listener.listen.host),
    );
    const earlier = listeners[earlierIndex];
    if (earlier === undefined) return;
    problems.push(
      `listeners[${index}].listen: "${listener.name}" clashes with "${earlier.name}" (listeners[${earlierIndex}], ` +
        `${formatListenAddress(earlier.listen)}) on ${listener.protocol} port ${listener.listen.port}, ` +
        `got ${describe(formatListenAddress(listener.listen))}`,
    );
  });
}

/**
 * Whether two listen hosts can collide on one port. Every-address listeners take the port on every
 * address: undefined and "::" (dual-stack in Node) collide with anything, "0.0.0.0" with anything
 * but an IPv6 literal. Names are not resolved, so only equal names collide with each other.
 */
function hostsOverlap(a: string | undefined, b: string | undefined): boolean {
  if (a === undefined || b === undefined || a === '::' || b === '::') return true;
  if (a === '0.0.0.0') return !isIPv6(b);
  if (b === '0.0.0.0') return !isIPv6(a);
  return normalizeHost(a) === normalizeHost(b);
}

function normalizeHost(host: string): string {
  return host.toLowerCase().replace(/\.$/, '');
}
