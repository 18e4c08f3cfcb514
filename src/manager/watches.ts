// Which reconciler an event on a cached object wakes, and with which key (controller-runtime's event
// handlers): a release or a Gateway its own; what the manager keeps, its owner's (by label); a
// GatewayClass itself and every Gateway of it.

import type { KubernetesObject } from '@kubernetes/client-node';
import { LABEL_RELEASE } from '../api/names.ts';
import type { Gateway } from '../api/gateway/types.ts';
import { LABEL_GATEWAY, LABEL_GATEWAY_NAMESPACE } from './gateway-proxies/names.ts';
import { namespacedKey } from './pass.ts';
import type { Watched } from './sources.ts';

/** The manager's reconcilers, one per kind it keeps proxies for (or writes the status of). */
export type ReconciledKind = 'release' | 'gateway' | 'gatewayClass';

export interface Request {
  readonly kind: ReconciledKind;
  readonly key: string;
}

/** The requests an event on `object` (of the watched `kind`) makes; `gateways` lists the cached Gateways. */
export function requestsOf(kind: Watched, object: KubernetesObject, gateways: () => KubernetesObject[]): Request[] {
  const namespace = object.metadata?.namespace ?? '';
  const name = object.metadata?.name ?? '';
  const labels = object.metadata?.labels ?? {};
  switch (kind) {
    case 'release':
      return [{ kind: 'release', key: namespacedKey(namespace, name) }];
    case 'gateway':
      return [{ kind: 'gateway', key: namespacedKey(namespace, name) }];
    case 'gatewayClass':
      return [
        { kind: 'gatewayClass', key: name },
        ...gateways()
          .filter((gateway) => (gateway as Gateway).spec?.gatewayClassName === name)
          .map(
            (gateway): Request => ({
              kind: 'gateway',
              key: namespacedKey(gateway.metadata?.namespace ?? '', gateway.metadata?.name ?? ''),
            }),
          ),
      ];
    default: {
      const gateway = labels[LABEL_GATEWAY];
      if (gateway !== undefined)
        return [{ kind: 'gateway', key: namespacedKey(labels[LABEL_GATEWAY_NAMESPACE] ?? namespace, gateway) }];
      return [{ kind: 'release', key: namespacedKey(namespace, labels[LABEL_RELEASE] ?? '') }];
    }
  }
}
