// Leader election as `proxy` and `manager` run it: a Lease with client-go's proportions (renew
// well within the lease, retry several times per lease), and the canary_l4_leader gauge.
import type { CoordinationV1Api } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import { METRIC_PREFIX } from '../defaults.ts';
import { LeaderElector } from './lease.ts';

export interface LeadershipOptions {
  readonly coordination: CoordinationV1Api;
  readonly namespace: string;
  /** The Lease. */
  readonly name: string;
  readonly identity: string;
  /** undefined: no election (a single replica, or one writer guaranteed some other way). */
  readonly leaseDurationMs: number | undefined;
  readonly log: Logger;
  readonly registry: Registry;
  /** Leadership was gained or lost. */
  readonly onChange: () => void;
}

/** The running election, or undefined without one (then this replica writes). */
export function startLeadership(options: LeadershipOptions): LeaderElector | undefined {
  const gauge = new Gauge({
    name: `${METRIC_PREFIX}leader`,
    help: '1 on the replica that writes to the API (the Lease holder, or the only replica without leader election).',
    registers: [options.registry],
  });
  const { leaseDurationMs } = options;
  gauge.set(leaseDurationMs === undefined ? 1 : 0);
  if (leaseDurationMs === undefined) return undefined;
  const changed = (leading: boolean) => {
    gauge.set(leading ? 1 : 0);
    options.onChange();
  };
  const elector = new LeaderElector({
    coordination: options.coordination,
    namespace: options.namespace,
    name: options.name,
    identity: options.identity,
    leaseDurationMs,
    renewDeadlineMs: Math.round((leaseDurationMs * 2) / 3),
    retryPeriodMs: Math.round(leaseDurationMs / 7.5),
    requestTimeoutMs: Math.round(leaseDurationMs / 7.5),
    log: options.log,
    onStartedLeading: () => changed(true),
    onStoppedLeading: () => changed(false),
  });
  elector.start();
  return elector;
}
