// The Accepted condition canary-l4 writes on each GatewayClass of its controller name: the manager for
// the classes it serves, and a gateway run from a host for its own class, in the same words, so the
// two never undo each other's write. Pure. canary-l4 takes no parameters, so a class with
// spec.parametersRef is not accepted (the spec's InvalidParameters). Written through the status
// subresource as one merge patch carrying the
// class's resourceVersion (conditions are a list, replaced whole), and only when it differs, so
// the write's own watch event finds nothing to do.

import { formatTime } from '../conditions.ts';
import { ConditionType, GATEWAY_CONTROLLER_NAME, Reason } from './names.ts';
import type { Condition, ConditionStatus, GatewayClass } from './types.ts';

export interface ClassStatusPatch {
  readonly metadata: { readonly resourceVersion: string | undefined };
  readonly status: { readonly conditions: readonly Condition[] };
}

/** Whether the class is canary-l4's to implement. */
export function isOurClass(gatewayClass: GatewayClass | undefined): gatewayClass is GatewayClass {
  return gatewayClass?.spec?.controllerName === GATEWAY_CONTROLLER_NAME;
}

/** The Accepted condition canary-l4 gives a class of its own. */
export function classAcceptance(gatewayClass: GatewayClass): {
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
} {
  const ref = gatewayClass.spec.parametersRef;
  if (ref != null)
    return {
      status: 'False',
      reason: Reason.InvalidParameters,
      message: `spec.parametersRef: canary-l4 takes no parameters, got ${ref.kind} ${ref.name}; remove spec.parametersRef`,
    };
  return { status: 'True', reason: Reason.Accepted, message: `accepted by ${GATEWAY_CONTROLLER_NAME}` };
}

/** Whether Gateways of this class get a proxy: ours, and accepted. */
export function servesClass(gatewayClass: GatewayClass | undefined): boolean {
  return isOurClass(gatewayClass) && classAcceptance(gatewayClass).status === 'True';
}

/**
 * The status write that gives the class its Accepted condition, or undefined when it has it
 * already (same status, reason, message, observedGeneration). Other conditions are kept;
 * lastTransitionTime moves only when the status flips.
 */
export function classStatusPatch(gatewayClass: GatewayClass, now: Date): ClassStatusPatch | undefined {
  const draft = classAcceptance(gatewayClass);
  const observed = gatewayClass.status?.conditions ?? [];
  const before = observed.find((condition) => condition.type === ConditionType.Accepted);
  const generation = gatewayClass.metadata.generation ?? 0;
  if (
    before !== undefined &&
    before.status === draft.status &&
    before.reason === draft.reason &&
    before.message === draft.message &&
    before.observedGeneration === generation
  )
    return undefined;
  const condition: Condition = {
    type: ConditionType.Accepted,
    ...draft,
    observedGeneration: generation,
    lastTransitionTime:
      before !== undefined && before.status === draft.status ? before.lastTransitionTime : formatTime(now),
  };
  const conditions =
    before === undefined ? [...observed, condition] : observed.map((item) => (item === before ? condition : item));
  return { metadata: { resourceVersion: gatewayClass.metadata.resourceVersion }, status: { conditions } };
}
