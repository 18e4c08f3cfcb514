// The manager's reconciler of a Gateway of canary-l4's classes (key namespace/name): reads the
// Gateway, its class, the objects kept for it and its proxy pods from the caches, plans (plan.ts,
// pure) and applies the steps. The gateway command writes the Gateway's status; this one only says,
// once per change, what stops its proxy or what it was made without.

import type { V1ObjectReference } from '@kubernetes/client-node';
import { GATEWAY_GROUP, GATEWAY_VERSION } from '../../api/gateway/names.ts';
import { servesClass } from '../../api/gateway/class-status.ts';
import type { Gateway, GatewayClass } from '../../api/gateway/types.ts';
import {
  countedPass,
  PassErrors,
  splitKey,
  StepRunner,
  type PassResult,
  type ReconcileContext,
  type Reconciler,
} from '../pass.ts';
import { LABEL_GATEWAY } from './names.ts';
import { planGateway, type GatewayPlan, type ObservedGateway } from './plan.ts';
import { GATEWAY_KINDS, gatewayChildName } from './render.ts';

export class GatewayReconciler implements Reconciler {
  readonly #context: ReconcileContext;
  /** Before the Gateway caches are full, a pass would take a Gateway not listed yet for one gone. */
  readonly #synced: () => boolean;
  readonly #steps: StepRunner;
  readonly #errors: PassErrors;
  /** What this replica last said of each Gateway's proxy (its problems and warnings). */
  readonly #reported = new Map<string, string>();

  constructor(context: ReconcileContext, synced: () => boolean) {
    this.#context = context;
    this.#synced = synced;
    this.#steps = new StepRunner(context);
    this.#errors = new PassErrors(context.log);
  }

  async reconcile(key: string): Promise<PassResult> {
    if (!this.#context.writing() || !this.#synced()) return undefined;
    const { namespace, name } = splitKey(key);
    const waiting = this.#steps.waitForOwnWrites(key, namespace);
    if (waiting !== undefined) return waiting;
    await countedPass(this.#context.metrics, () => {
      const observed = this.#observe(namespace, name);
      const planned = planGateway(observed, this.#context.settings);
      this.#report(key, observed, planned);
      const owner = observed.gateway === undefined ? undefined : gatewayRef(observed.gateway);
      return this.#steps.run(key, namespace, name, planned.steps, (step) =>
        this.#context.events.step({ gateway: name, namespace }, owner, step),
      );
    });
    if (this.#errors.recovered(key))
      this.#context.log.info({ gateway: name, namespace }, "the Gateway's proxy objects converge again");
    return undefined;
  }

  sayFailure(key: string, err: unknown, retryInMs: number): void {
    const { namespace, name } = splitKey(key);
    this.#errors.say(key, { gateway: name, namespace }, err, retryInMs);
  }

  #observe(namespace: string, name: string): ObservedGateway {
    const { caches } = this.#context;
    const children: ObservedGateway['children'] = {};
    for (const kind of GATEWAY_KINDS) {
      const found = caches.lookup(kind, gatewayChildName(kind, namespace, name), namespace);
      if (found !== undefined) children[kind] = found;
    }
    const pods = caches.pods(namespace, LABEL_GATEWAY, name);
    const gateway = caches.informer('gateway', namespace)?.get(name, namespace) as Gateway | undefined;
    const gatewayClass =
      gateway === undefined
        ? undefined
        : (caches.informer('gatewayClass', '')?.get(gateway.spec.gatewayClassName, '') as GatewayClass | undefined);
    return { namespace, name, gateway, classServed: servesClass(gatewayClass), children, pods };
  }

  /**
   * What stops a Gateway's proxy (or what it was made without), logged and recorded on the Gateway
   * once per change: the gateway command writes the Gateway's status, the manager only says this.
   */
  #report(key: string, observed: ObservedGateway, planned: GatewayPlan): void {
    const said = [...planned.problems, ...planned.warnings].join('; ');
    const before = this.#reported.get(key) ?? '';
    if (said === '') this.#reported.delete(key);
    else this.#reported.set(key, said);
    if (said === before || said === '' || observed.gateway === undefined) return;
    const reason = planned.problems.length > 0 ? 'ProxyNotMade' : 'ProxyWarning';
    const message =
      planned.problems.length > 0 ? `no proxy is made for this Gateway: ${said}` : `the proxy is made, but: ${said}`;
    this.#context.log.warn({ gateway: observed.name, namespace: observed.namespace, reason }, message);
    this.#context.events.record(gatewayRef(observed.gateway), 'Warning', reason, message);
  }
}

function gatewayRef(gateway: Gateway): V1ObjectReference {
  const { name, namespace = '', uid } = gateway.metadata;
  return { apiVersion: `${GATEWAY_GROUP}/${GATEWAY_VERSION}`, kind: 'Gateway', name, namespace, uid };
}
