// What in a valid config is most likely a mistake, for a warning once it is served: a listener
// whose every weight is 0 refuses every connection, and a backend named by a DNS name that does
// not resolve fails every connect. Pure: the resolving is the caller's.
import { isIP } from 'node:net';
import type { L4Config } from './types.ts';

export interface ConfigWarning {
  /** The path of the field, as in validation errors: `listeners[2].backends`. */
  readonly field: string;
  readonly listener: string;
}

/** Listeners whose backends all have weight 0. */
export function allZeroWeights(config: L4Config): ConfigWarning[] {
  return config.listeners.flatMap((listener, index) =>
    listener.backends.every((backend) => backend.weight === 0)
      ? [{ field: `listeners[${index}].backends`, listener: listener.name }]
      : [],
  );
}

/** Backends named by a DNS name rather than an address (a refusing one connects nowhere), with the path of their host field. */
export function namedBackendHosts(config: L4Config): (ConfigWarning & { readonly host: string })[] {
  return config.listeners.flatMap((listener, index) =>
    listener.backends.flatMap((backend, backendIndex) =>
      backend.refuse !== true && isIP(backend.host) === 0
        ? [{ field: `listeners[${index}].backends[${backendIndex}].host`, listener: listener.name, host: backend.host }]
        : [],
    ),
  );
}
