// What every kind's reconciler of the manager shares (controller-runtime's Reconciler, in small): a
// key per object (namespace/name; a GatewayClass: its name), the context a pass runs in, the run of
// its steps with the writes the next pass waits to see, the count of each pass by result, and the
// log of a failing key said once per error.

import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { CallOptions } from '../kube/client.ts';
import { describeError } from '../kube/patch.ts';
import { OWN_WRITES_WAIT_MS } from '../controller-kit/constants.ts';
import { OwnWrites } from '../controller-kit/own-writes.ts';
import { showsResourceVersion } from '../controller-kit/resource-version.ts';
import { applyManagerSteps, describeStep, type ManagerApis, type StepFailure, type Written } from './apply.ts';
import type { ManagerCaches } from './caches.ts';
import type { EventReporter } from './events.ts';
import type { ManagerMetrics } from './metrics.ts';
import type { RenderSettings } from './render.ts';
import type { Step } from './step.ts';

/** What a pass may do with its key's queue: run it again after a while, or nothing (undefined). */
export type PassResult = { requeueAfterMs?: number } | undefined;

/** A reconciler of one kind: one pass per key of its queue; a pass that throws is retried with backoff. */
export interface Reconciler {
  reconcile(key: string): Promise<PassResult>;
  /** Logs a failed pass (the queue retries it in `retryInMs`). */
  sayFailure(key: string, err: unknown, retryInMs: number): void;
}

/** What every reconciler of the manager is given. */
export interface ReconcileContext {
  readonly apis: ManagerApis;
  readonly call: CallOptions;
  readonly caches: ManagerCaches;
  readonly settings: RenderSettings;
  readonly log: Logger;
  readonly metrics: ManagerMetrics;
  readonly events: EventReporter;
  /** Whether this replica writes now: it holds the Lease and is not stopping. */
  readonly writing: () => boolean;
}

/** The queue key of a namespaced object. */
export const namespacedKey = (namespace: string, name: string): string => `${namespace}/${name}`;

/** The namespace and name of a namespaced key. */
export function splitKey(key: string): { readonly namespace: string; readonly name: string } {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** Finds an object of the pass's namespace (cluster-scoped ones by name alone) in the caches. */
type Lookup = (kind: Written['child'], name: string) => KubernetesObject | undefined;

/** Runs a kind's steps, and keeps what each key's writes left until the caches show them. */
export class StepRunner {
  readonly #context: ReconcileContext;
  /** Writes of each key the caches have yet to show: the next pass waits for them. */
  readonly #ownWrites = new Map<string, OwnWrites<Written, Lookup>>();

  constructor(context: ReconcileContext) {
    this.#context = context;
  }

  /** A requeue while the caches have yet to show this key's last writes; undefined: go ahead. */
  waitForOwnWrites(key: string, namespace: string): PassResult {
    const writes = this.#ownWrites.get(key);
    if (writes === undefined) return undefined;
    const waitMs = writes.waitMs((kind, name) => this.#context.caches.lookup(kind, name, namespace), Date.now());
    if (waitMs > 0) return { requeueAfterMs: Math.min(waitMs, 100) };
    this.#ownWrites.delete(key);
    return undefined;
  }

  /** Runs the steps, keeping what they wrote for the next pass to wait for; the first failure, if any. */
  run(
    key: string,
    namespace: string,
    name: string,
    steps: readonly Step[],
    say: (step: Step) => void,
  ): Promise<StepFailure | undefined> {
    const { apis, call, writing } = this.#context;
    return applyManagerSteps(
      apis,
      namespace,
      name,
      steps,
      call,
      (step, written) => {
        this.#ownWritesOf(key).record(written, Date.now());
        say(step);
      },
      writing,
    );
  }

  #ownWritesOf(key: string): OwnWrites<Written, Lookup> {
    let writes = this.#ownWrites.get(key);
    if (writes === undefined) {
      writes = new OwnWrites({
        maxWaitMs: OWN_WRITES_WAIT_MS,
        objectOf: (written) => `${written.child}/${written.name}`,
        shown,
      });
      this.#ownWrites.set(key, writes);
    }
    return writes;
  }
}

/**
 * Counts a pass by its result; a failed step (after `onFailure`, if given) is thrown, for the
 * queue to retry the key with backoff.
 */
export async function countedPass(
  metrics: ManagerMetrics,
  pass: () => Promise<StepFailure | undefined>,
  onFailure?: (failure: StepFailure) => Promise<void>,
): Promise<void> {
  const passed = metrics.pass();
  const failure = await pass();
  if (failure === undefined) {
    passed('success');
    return;
  }
  passed('error');
  await onFailure?.(failure);
  throw new Error(`${describeStep(failure.step)}: ${describeError(failure.error)}`, { cause: failure.error });
}

/** The last error said per key: a retry that fails the same way is no news (debug); a success is. */
export class PassErrors {
  readonly #log: Logger;
  readonly #lastError = new Map<string, string>();

  constructor(log: Logger) {
    this.#log = log;
  }

  say(key: string, fields: Readonly<Record<string, string>>, err: unknown, retryInMs: number): void {
    const message = describeError(err);
    const level = this.#lastError.get(key) === message ? 'debug' : 'warn';
    this.#log[level]({ ...fields, error: message, retryInMs }, 'manager reconcile failed; retrying');
    this.#lastError.set(key, message);
  }

  /** The key's pass succeeded: whether it had failed before (then its recovery is news). */
  recovered(key: string): boolean {
    return this.#lastError.delete(key);
  }
}

/** A write is shown once its object is cached at that resourceVersion or later; a delete once it is gone. */
function shown(written: Written, lookup: Lookup): boolean {
  const cached = lookup(written.child, written.name);
  if (written.resourceVersion === undefined) return cached === undefined;
  // A release (a class) gone since is shown as well as it will ever be.
  if (cached === undefined) return written.child === 'release' || written.child === 'gatewayClass';
  return showsResourceVersion(cached.metadata?.resourceVersion, written.resourceVersion);
}
