// The manager's reconciler of a GatewayClass (key: its name): writes the Accepted condition of a
// class whose controllerName is canary-l4's (api/gateway/class-status.ts plans it), and nothing else.

import { classStatusPatch, isOurClass } from '../../api/gateway/class-status.ts';
import type { GatewayClass } from '../../api/gateway/types.ts';
import {
  countedPass,
  PassErrors,
  StepRunner,
  type PassResult,
  type ReconcileContext,
  type Reconciler,
} from '../pass.ts';

export class GatewayClassReconciler implements Reconciler {
  readonly #context: ReconcileContext;
  /** Before the Gateway caches are full, the class may not be listed yet. */
  readonly #synced: () => boolean;
  readonly #steps: StepRunner;
  readonly #errors: PassErrors;

  constructor(context: ReconcileContext, synced: () => boolean) {
    this.#context = context;
    this.#synced = synced;
    this.#steps = new StepRunner(context);
    this.#errors = new PassErrors(context.log);
  }

  async reconcile(name: string): Promise<PassResult> {
    if (!this.#context.writing() || !this.#synced()) return undefined;
    const waiting = this.#steps.waitForOwnWrites(name, '');
    if (waiting !== undefined) return waiting;
    const gatewayClass = this.#context.caches.informer('gatewayClass', '')?.get(name, '') as GatewayClass | undefined;
    if (!isOurClass(gatewayClass) || gatewayClass.metadata.deletionTimestamp != null) return undefined;
    const patch = classStatusPatch(gatewayClass, new Date());
    if (patch === undefined) return undefined;
    await countedPass(this.#context.metrics, () =>
      this.#steps.run(name, '', name, [{ kind: 'writeClassStatus', patch }], () => {
        const accepted = patch.status.conditions.find((condition) => condition.type === 'Accepted');
        this.#context.log[accepted?.status === 'True' ? 'info' : 'warn'](
          { gatewayClass: name, reason: accepted?.reason },
          `GatewayClass ${name} Accepted=${accepted?.status}: ${accepted?.message}`,
        );
      }),
    );
    this.#errors.recovered(name);
    return undefined;
  }

  sayFailure(name: string, err: unknown, retryInMs: number): void {
    this.#errors.say(name, { gatewayClass: name }, err, retryInMs);
  }
}
