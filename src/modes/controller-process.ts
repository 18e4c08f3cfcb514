// How `proxy`, `gateway` and `manager` run as a process: the runtime (data plane, admin server,
// logs), who this replica is, its control loop, the Lease that elects the one replica that writes,
// and a bounded stop on SIGTERM: the loop and its Lease get CONTROLLER_STOP_MS, then the data plane
// drains regardless, so a hung API server cannot keep a signal from ending the process. The API
// clients are each mode's own (made before the runtime starts, as its flags ask).
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import type { CoordinationV1Api } from '@kubernetes/client-node';
import { startLeadership } from '../kube/leadership.ts';
import type { LeaderElector } from '../kube/lease.ts';
import { exitOnSignals, Runtime, type RuntimeOptions } from '../runtime/runtime.ts';

/** On SIGTERM the control loop gets this long to stop before the drain goes ahead regardless. */
export const CONTROLLER_STOP_MS = 5_000;

/** What the process needs of a control loop. */
export interface ControlLoop {
  /** Leadership was gained or lost: reconcile soon. */
  leadershipChanged(): void;
  /** Bounded: API calls in flight are aborted. */
  stop(): Promise<void>;
}

export interface LoopContext {
  readonly runtime: Runtime;
  readonly identity: string;
  isLeader(): boolean;
  /** The process's bounded stop (a loop whose work is over may end the process). */
  stop(): Promise<void>;
}

export interface ControllerProcessOptions {
  readonly runtime: RuntimeOptions;
  /** undefined: the host name and a random suffix. */
  readonly identity?: string;
  readonly lease: {
    readonly coordination: CoordinationV1Api;
    readonly namespace: string;
    readonly name: string;
    /** undefined: no election (a single replica, or one writer guaranteed some other way). */
    readonly durationMs: number | undefined;
  };
  /** How long live connections get to finish on SIGTERM. */
  readonly drainMs: number;
  /** Makes the control loop, once the runtime runs (it may serve something first). */
  readonly loop: (process: LoopContext) => ControlLoop | Promise<ControlLoop>;
  /** The line logged once it runs. */
  readonly started: { readonly fields: Record<string, unknown>; readonly message: string };
}

export interface ControllerProcess {
  readonly runtime: Runtime;
  /** The bounded stop SIGTERM and SIGINT run; asked twice, it is the same stop. */
  readonly stop: () => Promise<void>;
}

export async function startControllerProcess(options: ControllerProcessOptions): Promise<ControllerProcess> {
  const runtime = await Runtime.start(options.runtime);
  const identity = options.identity ?? `${hostname()}_${randomUUID().slice(0, 8)}`;
  let loop: ControlLoop | undefined;
  let elector: LeaderElector | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      const stopped = await Promise.race([
        Promise.all([loop?.stop(), elector?.stop(true)]).then(() => true),
        delay(CONTROLLER_STOP_MS, false, { ref: false }),
      ]);
      if (!stopped)
        runtime.log.warn({ waitedMs: CONTROLLER_STOP_MS }, 'the control loop did not stop in time; draining anyway');
      await runtime.stop(options.drainMs);
    })());
  exitOnSignals(runtime.log, stop);
  const started = await options.loop({ runtime, identity, isLeader: () => elector?.isLeader ?? true, stop });
  loop = started;
  elector = startLeadership({
    coordination: options.lease.coordination,
    namespace: options.lease.namespace,
    name: options.lease.name,
    identity,
    leaseDurationMs: options.lease.durationMs,
    log: runtime.log,
    registry: runtime.registry,
    onChange: () => started.leadershipChanged(),
  });
  runtime.log.info({ ...options.started.fields, identity }, options.started.message);
  return { runtime, stop };
}
