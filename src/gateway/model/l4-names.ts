// The names a Gateway's listeners and backends take in the L4 config: they end up in metric labels,
// log lines and /stats, where the config allows 1-63 characters of A-Z a-z 0-9 _ . -. A Gateway
// listener name (up to 253 characters) or a backend's name.namespace.port that does not fit is cut,
// with a hash of the whole kept so two long names stay apart.
import { createHash } from 'node:crypto';

const MAX = 63;
const FITS = /^[A-Za-z0-9_.-]{1,63}$/;

function fitted(name: string): string {
  if (FITS.test(name)) return name;
  const hash = createHash('sha256').update(name).digest('hex').slice(0, 8);
  const kept = name.replace(/[^A-Za-z0-9_.-]/g, '-').slice(0, MAX - hash.length - 1);
  return `${kept}-${hash}`;
}

export function l4ListenerName(gatewayListener: string): string {
  return fitted(gatewayListener);
}

/** `service.namespace.port`: a Service's port, as /stats and the metrics show it. */
export function l4BackendName(service: string, namespace: string, port: number | undefined): string {
  return fitted(`${service}.${namespace}.${port ?? 0}`);
}
