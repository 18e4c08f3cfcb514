// Mirroring a release's ports to their canary (a dark canary): each port's config.mirror, with the
// percent the step in force sets, becomes its listener's `mirror` to the canary backend. Pure.

import { readPortMirror } from '../../config/validate.ts';
import type { L4Config, ListenerConfig } from '../../config/types.ts';
import { normalizeProtocol } from '../../api/spec.ts';
import type { CanaryReleaseSpec } from '../../api/spec-types.ts';
import { listenerName } from './l4.ts';

/** The backend the mirror goes to: the canary copy (l4.ts names the backends by role). */
const MIRROR_TO = 'canary';

/**
 * The listeners of `config` with the mirror their port asks for. `stepPercent`: the percent the step
 * in force sets (it replaces each port's own; a port without config.mirror then mirrors with the
 * defaults). A port at 0 %, or whose listener has no canary backend (no canary copy yet), mirrors
 * nothing; a port whose config.mirror is out of bounds holds the release (spec.ts says why).
 */
export function withMirrors(
  config: L4Config,
  spec: CanaryReleaseSpec | undefined,
  stepPercent: number | undefined,
): L4Config {
  const byListener = new Map<string, ListenerConfig['mirror']>();
  for (const entry of spec?.services ?? []) {
    for (const port of entry.ports ?? []) {
      const policy = readPortMirror(port.config?.mirror ?? (stepPercent === undefined ? undefined : {}), '', []);
      if (policy === undefined) continue;
      const percent = stepPercent ?? policy.percent;
      if (percent === 0) continue;
      byListener.set(
        listenerName({ service: entry.service, port: port.port, protocol: normalizeProtocol(port.protocol) }),
        { ...policy, percent, to: MIRROR_TO },
      );
    }
  }
  if (byListener.size === 0) return config;
  return {
    listeners: config.listeners.map((listener) => {
      const mirror = byListener.get(listener.name);
      return mirror === undefined || !listener.backends.some((backend) => backend.name === MIRROR_TO)
        ? listener
        : { ...listener, mirror };
    }),
  };
}
