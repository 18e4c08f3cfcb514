// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it: the
// leader renews the lease every retry period and steps down when it cannot renew before the renew
// deadline; a candidate takes the lease over only after it has watched the same record go
// unrenewed for a whole lease duration, measured on its own clock (no trust in clock sync). Writes
// are optimistic (resourceVersion), so two candidates never both win. On shutdown the leader
// releases the lease so a follower takes over at once instead of after the lease duration.
import { V1MicroTime, type CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { boundedCall, type CallOptions } from './client.ts';
import { apiFailure, describeError, isConflict, isNotFound, isAlreadyExists } from './patch.ts';

export interface LeaderElectionOptions {
  readonly coordination: CoordinationV1Api;
  readonly namespace: string;
  readonly name: string;
  /** Unique per process, e.g. the pod name. */
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  /** A lease call that takes longer is abandoned (and counts as a failed renewal). */
  readonly requestTimeoutMs: number;
  readonly log: Logger;
  readonly onStartedLeading: () => void;
  readonly onStoppedLeading: () => void;
  readonly now?: () => number;
}

export class LeaderElector {
  readonly #options: LeaderElectionOptions;
  readonly #now: () => number;
  #leading = false;
  #stopped = false;
  #timer: NodeJS.Timeout | undefined;
  #lastRenewed = 0;
  /** The record last seen and when this process first saw it (for expiry on our own clock). */
  #observed: { key: string; at: number } | undefined;
  #cycle: Promise<void> = Promise.resolve();
  /** Aborts the calls in flight when campaigning stops, so stop() never waits on a hung API. */
  readonly #cancel = new AbortController();
  readonly #call: CallOptions;

  constructor(options: LeaderElectionOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#call = boundedCall(this.#cancel.signal, options.requestTimeoutMs);
  }

  get isLeader(): boolean {
    return this.#leading;
  }

  start(): void {
    this.#stopped = false;
    this.#tick();
  }

  /** Stops campaigning; a leader steps down and, with `release`, frees the lease for the next one. */
  async stop(release = true): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#cancel.abort();
    await this.#cycle;
    if (!this.#leading) return;
    this.#setLeading(false);
    if (release) await this.#release();
  }

  #tick(): void {
    if (this.#stopped) return;
    this.#cycle = this.#tryAcquireOrRenew().then(() => {
      if (!this.#stopped) this.#timer = setTimeout(() => this.#tick(), this.#options.retryPeriodMs);
    });
  }

  async #tryAcquireOrRenew(): Promise<void> {
    const { log, identity, renewDeadlineMs } = this.#options;
    try {
      const won = await this.#attempt();
      if (won) {
        this.#lastRenewed = this.#now();
        if (!this.#leading) this.#setLeading(true);
      } else if (this.#leading) {
        log.warn({ lease: this.#options.name }, 'another process holds the lease; stepping down');
        this.#setLeading(false);
      }
    } catch (err) {
      log.warn({ lease: this.#options.name, identity, error: describeError(err) }, 'lease acquire/renew failed');
      if (this.#leading && this.#now() - this.#lastRenewed > renewDeadlineMs) {
        log.error({ lease: this.#options.name }, `could not renew the lease for ${renewDeadlineMs} ms; stepping down`);
        this.#setLeading(false);
      }
    }
  }

  /** True when this process holds the lease after the attempt. */
  async #attempt(): Promise<boolean> {
    const { coordination, namespace, name, identity, leaseDurationMs } = this.#options;
    let lease: V1Lease;
    try {
      lease = await coordination.readNamespacedLease({ name, namespace }, this.#call);
    } catch (err) {
      if (!isNotFound(err)) throw err;
      try {
        await coordination.createNamespacedLease(
          { namespace, body: { metadata: { name, namespace }, spec: this.#spec(0) } },
          this.#call,
        );
        return true;
      } catch (createErr) {
        if (isAlreadyExists(createErr) || isConflict(createErr)) return false;
        throw createErr;
      }
    }
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const key = `${holder}|${String(spec.renewTime ?? '')}|${lease.metadata?.resourceVersion ?? ''}`;
    if (this.#observed?.key !== key) this.#observed = { key, at: this.#now() };
    const durationMs = (spec.leaseDurationSeconds ?? leaseDurationMs / 1000) * 1000;
    const expired = holder === '' || this.#now() - this.#observed.at > durationMs;
    if (holder !== identity && !expired) return false;

    const transitions = (spec.leaseTransitions ?? 0) + (holder === identity ? 0 : 1);
    const body: V1Lease = {
      ...lease,
      spec: {
        ...this.#spec(transitions),
        acquireTime: holder === identity ? spec.acquireTime : new V1MicroTime(this.#now()),
      },
    };
    try {
      await coordination.replaceNamespacedLease({ name, namespace, body }, this.#call);
      return true;
    } catch (err) {
      if (isConflict(err)) return false; // someone else wrote first: they win this round
      throw err;
    }
  }

  #spec(transitions: number): NonNullable<V1Lease['spec']> {
    const now = new V1MicroTime(this.#now());
    return {
      holderIdentity: this.#options.identity,
      leaseDurationSeconds: Math.ceil(this.#options.leaseDurationMs / 1000),
      acquireTime: now,
      renewTime: now,
      leaseTransitions: transitions,
    };
  }

  async #release(): Promise<void> {
    const { coordination, namespace, name, identity, log, retryPeriodMs } = this.#options;
    // Campaign calls are aborted by now; the release gets its own short deadline.
    const call = boundedCall(new AbortController().signal, retryPeriodMs);
    try {
      const lease = await coordination.readNamespacedLease({ name, namespace }, call);
      if (lease.spec?.holderIdentity !== identity) return;
      // An empty holder with a 1 s duration: any candidate may take it at its next attempt.
      await coordination.replaceNamespacedLease(
        {
          name,
          namespace,
          body: {
            ...lease,
            spec: {
              ...lease.spec,
              holderIdentity: '',
              leaseDurationSeconds: 1,
              renewTime: new V1MicroTime(this.#now()),
            },
          },
        },
        call,
      );
      log.info({ lease: name }, 'lease released');
    } catch (err) {
      // Forbidden or gone: the rights went with the release (its RoleBinding is collected with it).
      const over = isNotFound(err) || apiFailure(err)?.code === 403;
      log[over ? 'info' : 'warn'](
        { lease: name, error: describeError(err) },
        over
          ? 'lease left to expire: this proxy may no longer touch it (its release is over)'
          : 'could not release the lease; it expires by itself',
      );
    }
  }

  #setLeading(leading: boolean): void {
    this.#leading = leading;
    this.#options.log.info(
      { lease: this.#options.name, identity: this.#options.identity, leading },
      leading ? 'became leader' : 'stopped leading',
    );
    if (leading) this.#options.onStartedLeading();
    else this.#options.onStoppedLeading();
  }
}
