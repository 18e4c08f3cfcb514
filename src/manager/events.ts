// What the manager says of its passes, for a release and a Gateway alike: Events on the object it
// keeps a proxy for (one recorder per namespace), and the log line of each object a step wrote.

import type { CoreV1Api, V1ObjectReference } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { CallOptions } from '../kube/client.ts';
import { EventRecorder } from '../kube/events.ts';
import { KIND_OF, type Step } from './step.ts';
import { MANAGED_BY } from './names.ts';

export interface EventReporterOptions {
  readonly core: CoreV1Api;
  /** Who this replica is, for the Events it records. */
  readonly identity: string;
  readonly log: Logger;
  readonly call: CallOptions;
}

export class EventReporter {
  readonly #options: EventReporterOptions;
  readonly #recorders = new Map<string, EventRecorder>();

  constructor(options: EventReporterOptions) {
    this.#options = options;
  }

  record(object: V1ObjectReference, type: 'Normal' | 'Warning', reason: string, message: string): void {
    const namespace = object.namespace ?? '';
    let recorder = this.#recorders.get(namespace);
    if (recorder === undefined) {
      const { core, identity, log, call } = this.#options;
      recorder = new EventRecorder({
        core,
        namespace,
        component: MANAGED_BY,
        instance: identity,
        log,
        callOptions: call,
      });
      this.#recorders.set(namespace, recorder);
    }
    recorder.record(object, type, reason, message);
  }

  /**
   * Logs a step that wrote one of the objects kept for `owner` (`fields` name it in the log); the
   * proxy Deployment's also as an Event on the owner, when it is still there.
   */
  step(fields: Readonly<Record<string, string>>, owner: V1ObjectReference | undefined, step: Step): void {
    if (step.kind === 'writeStatus' || step.kind === 'writeClassStatus') return;
    const object = `${KIND_OF[step.child]} ${step.kind === 'delete' ? step.name : step.object.metadata?.name}`;
    const verb = { create: 'created', replace: 'updated', delete: 'deleted' }[step.kind];
    this.#options.log.info({ ...fields, step: step.kind, object }, `${verb} ${object}`);
    if (step.child === 'deployment' && owner !== undefined) {
      const reason = { create: 'ProxyCreated', replace: 'ProxyUpdated', delete: 'ProxyRemoved' }[step.kind];
      this.record(owner, 'Normal', reason, `${verb} ${object}`);
    }
  }
}
