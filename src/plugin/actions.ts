// What each `kubectl canary-l4` action writes: an ordinary patch of the CanaryRelease, the same a
// person could send with `kubectl patch` (the plugin prints it). Pure: the release as read → the
// patch, or why the action makes no sense now (one line naming the fix).

import type { CanaryRelease } from '../api/release-types.ts';
import { formatStep } from '../api/steps.ts';

export type PatchType = 'merge' | 'json';

export interface Action {
  readonly type: PatchType;
  readonly patch: unknown;
  /** What it does, for the line the plugin prints. */
  readonly summary: string;
}

export type ActionResult =
  | { readonly ok: true; readonly action: Action }
  | { readonly ok: false; readonly error: string };

const refuse = (error: string): ActionResult => ({ ok: false, error });
const merge = (spec: Record<string, unknown>, summary: string): ActionResult => ({
  ok: true,
  action: { type: 'merge', patch: { spec }, summary },
});

/** A release that is handing back or handed back takes no more actions. */
function finished(release: CanaryRelease): string | undefined {
  const phase = release.status?.phase;
  const transition = release.status?.transition?.type ?? release.spec?.transition;
  if (phase === 'Adopted' || phase === 'Deprecated')
    return `CanaryRelease ${release.metadata.name} is ${phase}: it is over`;
  if (transition === 'Adopted' || transition === 'Deprecated')
    return `CanaryRelease ${release.metadata.name} is already being ${transition.toLowerCase()} (its transition is ${transition})`;
  return undefined;
}

/** Releases the pause of the current step (spec.promotedStep); `full` adopts at once (spec.transition: Adopted). */
export function promote(release: CanaryRelease, full: boolean): ActionResult {
  const over = finished(release);
  if (over !== undefined) return refuse(over);
  if (full)
    return merge(
      { transition: 'Adopted' },
      'adopting: the canary becomes the stable version (spec.transition: Adopted)',
    );
  const steps = release.spec?.steps ?? [];
  const name = release.metadata.name;
  if (steps.length === 0)
    return refuse(`CanaryRelease ${name} has no spec.steps, so no step to promote: promote --full adopts it`);
  const current = release.status?.currentStep ?? 0;
  if (current >= steps.length)
    return refuse(
      `CanaryRelease ${name} has done every step, step ${formatStep(current, steps.length)}: promote --full adopts it`,
    );
  const paused = release.spec?.paused === true ? '; it stays paused (spec.paused) until resume' : '';
  return merge(
    { promotedStep: current },
    `step ${formatStep(current, steps.length)} promoted (spec.promotedStep: ${current}): its pause and analysis gate are over${paused}`,
  );
}

export function pause(release: CanaryRelease): ActionResult {
  const over = finished(release);
  return over !== undefined
    ? refuse(over)
    : merge({ paused: true }, 'paused: the current step holds until resume (spec.paused)');
}

export function resume(release: CanaryRelease): ActionResult {
  const over = finished(release);
  return over !== undefined ? refuse(over) : merge({ paused: false }, 'resumed: the steps go on (spec.paused: false)');
}

/** Rolls back: spec.transition Deprecated, and why (said in status and in the Deprecated Event). */
export function abort(release: CanaryRelease, reason: string | undefined): ActionResult {
  const over = finished(release);
  if (over !== undefined) return refuse(over);
  return merge(
    { transition: 'Deprecated', ...(reason === undefined ? {} : { transitionReason: reason }) },
    'aborting: every Service goes back to the stable version (spec.transition: Deprecated)',
  );
}

/** `SERVICE:PORT=N`: the canary weight of every listed protocol of that port; or which part is wrong. */
export function parseWeightTarget(text: string): { service: string; port: number; weight: number } | string {
  const match = /^([^:=]*):([^=]*)=(.*)$/.exec(text);
  if (match === null) return `"${text}" is not SERVICE:PORT=WEIGHT, e.g. web:80=25`;
  const [, service = '', portText = '', weightText = ''] = match;
  if (!/^[a-z]([-a-z0-9]*[a-z0-9])?$/.test(service))
    return `"${text}": the Service "${service}" is not a Service name (lower-case letters, digits and '-'), e.g. web:80=25`;
  const port = /^\d+$/.test(portText) ? Number(portText) : Number.NaN;
  if (!(port >= 1 && port <= 65535))
    return `"${text}": the port "${portText}" must be a number 1-65535, e.g. web:80=25`;
  const weight = /^\d+$/.test(weightText) ? Number(weightText) : Number.NaN;
  if (!(weight >= 0 && weight <= 100))
    return `"${text}": the weight "${weightText}" must be a whole percentage 0-100, e.g. web:80=25`;
  return { service, port, weight };
}

/**
 * A JSON patch of the listed port's `config.weight`, each op guarded by a `test` of the entry it
 * edits (a list reordered meanwhile fails instead of changing another port). Refused with steps:
 * they set the weights.
 */
export function setWeight(
  release: CanaryRelease,
  target: { service: string; port: number; weight: number },
): ActionResult {
  const over = finished(release);
  if (over !== undefined) return refuse(over);
  const name = release.metadata.name;
  if ((release.spec?.steps ?? []).length > 0) {
    return refuse(
      `CanaryRelease ${name} has spec.steps, which set every port's weight: promote, pause or resume it instead (or override with the proxy's --weight flag)`,
    );
  }
  const services = release.spec?.services ?? [];
  const index = services.findIndex((entry) => entry.service === target.service);
  if (index < 0)
    return refuse(
      `CanaryRelease ${name} has no Service ${target.service} in spec.services (it has ${services.map((entry) => entry.service).join(', ') || 'none'})`,
    );
  const ports = (services[index]!.ports ?? [])
    .map((port, at) => ({ port, at }))
    .filter(({ port }) => port.port === target.port);
  if (ports.length === 0)
    return refuse(
      `spec.services[${index}] (${target.service}) lists no port ${target.port}: add it to spec.services[${index}].ports`,
    );
  const patch = ports.flatMap(({ port, at }) => {
    const path = `/spec/services/${index}/ports/${at}`;
    const guard = [
      { op: 'test', path: `/spec/services/${index}/service`, value: target.service },
      { op: 'test', path: `${path}/port`, value: target.port },
    ];
    return port.config === undefined
      ? [...guard, { op: 'add', path: `${path}/config`, value: { weight: target.weight } }]
      : [...guard, { op: 'add', path: `${path}/config/weight`, value: target.weight }];
  });
  return {
    ok: true,
    action: { type: 'json', patch, summary: `${target.service}:${target.port} canary weight set to ${target.weight}%` },
  };
}
