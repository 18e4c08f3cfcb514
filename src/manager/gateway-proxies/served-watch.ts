// Whether the Gateway API is served, asked until it is. A cluster without its CRDs still has
// CanaryReleases to manage: the manager says once that Gateways are not watched, asks discovery
// again every `intervalMs` (the resync period), and starts its Gateway informers as soon as
// gateway.networking.k8s.io/v1 serves gateways and gatewayclasses: installing the CRDs later needs
// no restart. (Removing them later is not looked for: the informers then retry, and say so.)

import type { CustomObjectsApi } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { CallOptions } from '../../kube/client.ts';
import { describeError, isNotFound } from '../../kube/patch.ts';
import { GATEWAY_GROUP, GATEWAY_VERSION } from '../../api/gateway/names.ts';

export interface ServedWatchOptions {
  readonly custom: CustomObjectsApi;
  readonly call: CallOptions;
  readonly log: Logger;
  readonly intervalMs: number;
  /** Called once, when the API is first seen served. */
  readonly onServed: () => void;
}

export interface ServedWatch {
  stop(): void;
}

const NEEDED = ['gateways', 'gatewayclasses'];

export function watchWhenServed(options: ServedWatchOptions): ServedWatch {
  const { log } = options;
  const api = `${GATEWAY_GROUP}/${GATEWAY_VERSION}`;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let said: string | undefined;
  const say = (why: string, level: 'info' | 'warn') => {
    if (said === why) return;
    said = why;
    log[level]({ api, retryInMs: options.intervalMs }, why);
  };
  const look = async () => {
    timer = undefined;
    let served: readonly string[];
    try {
      const found = await options.custom.getAPIResources(
        { group: GATEWAY_GROUP, version: GATEWAY_VERSION },
        options.call,
      );
      served = (found.resources ?? []).map((resource) => resource.name);
    } catch (err) {
      if (stopped) return;
      if (isNotFound(err)) {
        say(
          `Gateways are not watched: the API does not serve ${api} (the Gateway API CRDs are not installed); looking again every resync`,
          'info',
        );
      } else say(`cannot tell whether ${api} is served (${describeError(err)}); asking again`, 'warn');
      timer = setTimeout(() => void look(), options.intervalMs);
      return;
    }
    if (stopped) return;
    const missing = NEEDED.filter((resource) => !served.includes(resource));
    if (missing.length > 0) {
      say(`Gateways are not watched: ${api} serves no ${missing.join(', ')}; looking again every resync`, 'info');
      timer = setTimeout(() => void look(), options.intervalMs);
      return;
    }
    log.info({ api }, `${api} is served: watching Gateways and GatewayClasses`);
    options.onServed();
  };
  void look();
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
