// When the data plane refuses reconcile's L4 config (a proxy port in use, say), the previous config
// keeps serving and retargets keep waiting for the port (they are gated on what listens). What is
// left is to say so: the Failure condition names the problem in every status this pass writes, and
// a port nothing listens for claims no served weight (`kubectl canary-l4 status` shows `-`).

import { formatTime } from '../../api/conditions.ts';
import { statusWritten } from './context.ts';
import type { Desired, Step } from './desired.ts';
import type { CanaryRelease } from '../../api/release-types.ts';
import type { CanaryReleaseCondition, CanaryReleaseStatus, PortStatus } from '../../api/status-types.ts';

export const CONFIG_REFUSED = 'ConfigRefused';

/** `listening`: the proxy ports the data plane listens on with the previous config, which keeps serving. */
export function withRefusedConfig(
  desired: Desired,
  observed: CanaryRelease,
  problem: string,
  now: Date,
  listening: ReadonlySet<number>,
): Desired {
  const mark = (status: CanaryReleaseStatus) =>
    markRefused(status, observed.status?.conditions, problem, now, listening);
  const status = mark(desired.status);
  // A status write reconcile planned may say exactly what the release already holds once marked.
  const steps: Step[] = desired.steps
    .map((step) => (step.kind === 'writeStatus' ? { ...step, status: mark(step.status) } : step))
    .filter((step) => step.kind !== 'writeStatus' || !statusWritten(observed, step.status));
  const planned = steps.some((step) => step.kind === 'writeStatus');
  if (!planned && !statusWritten(observed, status)) steps.push({ kind: 'writeStatus', reason: 'updateStatus', status });
  return { ...desired, steps, status };
}

function markRefused(
  status: CanaryReleaseStatus,
  previous: readonly CanaryReleaseCondition[] | undefined,
  problem: string,
  now: Date,
  listening: ReadonlySet<number>,
): CanaryReleaseStatus {
  const message = `the proxy cannot serve its config, the previous one keeps serving: ${problem}`;
  const conditions = status.conditions.map((condition): CanaryReleaseCondition => {
    if (condition.type !== 'Failure') return condition;
    if (condition.status === 'True') return { ...condition, message: `${condition.message}; ${message}` };
    const before = previous?.find((item) => item.type === 'Failure');
    const lastTransitionTime = before?.status === 'True' ? before.lastTransitionTime : formatTime(now);
    return { ...condition, status: 'True', reason: CONFIG_REFUSED, message, lastTransitionTime };
  });
  const ports = status.ports.map((port) => (listening.has(port.proxyPort) ? port : withoutServed(port)));
  return { ...status, conditions, ports };
}

function withoutServed({ served: _unserved, ...port }: PortStatus): PortStatus {
  return port;
}
