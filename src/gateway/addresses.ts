// Where a Gateway is reached, for its status.addresses: the Service in front of its pods (--service:
// its load balancer's ingress, else its cluster IPs), else the addresses given (--address), else the
// listen address when it is one address, else this host's first non-internal address.
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import type { V1Service } from '@kubernetes/client-node';
import type { GatewayAddress } from '../api/gateway/types.ts';

export function addressOf(value: string): GatewayAddress {
  return { type: isIP(value) === 0 ? 'Hostname' : 'IPAddress', value };
}

export function serviceAddresses(service: V1Service | undefined): GatewayAddress[] {
  if (service === undefined) return [];
  const ingress = (service.status?.loadBalancer?.ingress ?? []).flatMap((entry) =>
    entry.ip !== undefined ? [entry.ip] : entry.hostname !== undefined ? [entry.hostname] : [],
  );
  if (ingress.length > 0) return ingress.map(addressOf);
  const clusterIps =
    service.spec?.clusterIPs ?? (service.spec?.clusterIP === undefined ? [] : [service.spec.clusterIP]);
  return clusterIps.filter((ip) => ip !== '' && ip !== 'None').map(addressOf);
}

/** The addresses of a Gateway served from a host (no --service). */
export function hostAddresses(given: readonly string[], listenHost: string | undefined): GatewayAddress[] {
  if (given.length > 0) return given.map(addressOf);
  if (listenHost !== undefined && listenHost !== '0.0.0.0' && listenHost !== '::') return [addressOf(listenHost)];
  const external = Object.values(networkInterfaces())
    .flat()
    .find((entry) => entry !== undefined && !entry.internal && entry.family === 'IPv4');
  return [addressOf(external?.address ?? '127.0.0.1')];
}
