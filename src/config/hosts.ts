// The hosts a config may name: a backend's host (an IP address or a DNS name, never bracketed) and
// the DNS names a listen address may hold too. Pure; problems recorded as fields.ts does.

import { isIP } from 'node:net';
import { describe } from './fields.ts';

const HOST_EXPECTED = 'an IP address or a DNS name';

/** A backend's `host`; '' with the problem recorded when it is not one. */
export function readHost(value: unknown, path: string, problems: string[]): string {
  if (value === undefined) {
    problems.push(`${path}: is required (${HOST_EXPECTED})`);
    return '';
  }
  if (typeof value === 'string' && (isIP(value) !== 0 || isDnsName(value))) return value;
  const bracketHint =
    typeof value === 'string' && value.startsWith('[') ? ' (write an IPv6 address without brackets)' : '';
  problems.push(`${path}: must be ${HOST_EXPECTED}, got ${describe(value)}${bracketHint}`);
  return '';
}

const DNS_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;

/** Whether `name` is a DNS name (labels of letters, digits and hyphens; a trailing dot allowed). */
export function isDnsName(name: string): boolean {
  const labels = name.replace(/\.$/, '').split('.');
  const topLevel = labels.at(-1) ?? '';
  // An all-numeric last label is a mistyped IPv4 address ("10.0.0.256"), never a name.
  return name.length <= 253 && labels.every((label) => DNS_LABEL.test(label)) && !/^\d+$/.test(topLevel);
}
