// The spec of a CanaryRelease as the API defines it, read field by field: what each field may hold,
// and the one-line problem (naming the field and the fix) when it holds something else. Checks that
// need the cluster (does the Service exist, has it that port) are the controller's, not these.

import { readConnectionPolicies, readPortMirror } from '../config/validate.ts';
import type { CanaryPortSpec, PortProtocol, SpecProtocol } from './spec-types.ts';

/** The protocols a spec port may name. */
export const SPEC_PROTOCOLS: readonly string[] = ['TCP', 'UDP', 'HTTP', 'HTTPS'] satisfies SpecProtocol[];

/** A spec port's protocol as served: HTTP and HTTPS are proxied as TCP. */
export function normalizeProtocol(protocol: SpecProtocol | undefined): PortProtocol {
  return protocol === 'UDP' ? 'UDP' : 'TCP';
}

/**
 * The problems of one entry of spec.services[].ports, at `where`; its protocol as served, or
 * undefined when the protocol itself is refused (nothing else of the entry is read then).
 */
export function checkPortSpec(port: CanaryPortSpec, where: string, problems: string[]): PortProtocol | undefined {
  if (port.protocol !== undefined && !SPEC_PROTOCOLS.includes(port.protocol)) {
    problems.push(
      `${where}.protocol: ${JSON.stringify(port.protocol)} is not supported; write TCP or UDP (upper case), or HTTP or HTTPS (proxied as TCP)`,
    );
    return undefined;
  }
  const weight = port.config?.weight ?? 0;
  if (!Number.isInteger(weight) || weight < 0 || weight > 100)
    problems.push(`${where}.config.weight: must be an integer 0–100, got ${weight}`);
  readConnectionPolicies(port.config ?? {}, (key) => `${where}.config.${key}`, problems);
  readPortMirror(port.config?.mirror, `${where}.config.mirror`, problems);
  return normalizeProtocol(port.protocol);
}
