// Read-your-writes for the informer caches. A reconcile that runs before the watch has delivered
// the previous pass's writes sees stale objects: it would repeat a create (AlreadyExists) or send a
// patch whose resourceVersion precondition is already old (409). Both are safe but are failures,
// logged and counted, on every rollout. So the next pass waits, for a bounded time, until the
// caches hold what the writes returned; past the bound it goes on, and the preconditions keep it safe.

import type { V1Deployment, V1Service } from '@kubernetes/client-node';
import type { Written } from './apply.ts';
import type { CanaryRelease } from '../../api/types.ts';

export interface CacheView {
  service(name: string): V1Service | undefined;
  deployment(name: string): V1Deployment | undefined;
  release(): CanaryRelease | undefined;
}

export class OwnWrites {
  readonly #maxWaitMs: number;
  /** The last write per object: an object written twice is current once it shows the second. */
  readonly #pending = new Map<string, Written>();
  #deadline = 0;

  constructor(maxWaitMs: number) {
    this.#maxWaitMs = maxWaitMs;
  }

  record(written: Written, now: number): void {
    this.#pending.set(written.kind === 'release' ? 'release' : `${written.kind.replace('Gone', '')}/${written.name}`, written);
    this.#deadline = now + this.#maxWaitMs;
  }

  /** How long to wait before the caches can be trusted; 0 once they show every write (or the wait is over). */
  waitMs(cache: CacheView, now: number): number {
    for (const [key, written] of this.#pending) if (shown(cache, written)) this.#pending.delete(key);
    if (this.#pending.size === 0 || now >= this.#deadline) {
      this.#pending.clear();
      return 0;
    }
    return this.#deadline - now;
  }
}

function shown(cache: CacheView, written: Written): boolean {
  switch (written.kind) {
    case 'service': case 'deployment': {
      const object = written.kind === 'service' ? cache.service(written.name) : cache.deployment(written.name);
      return written.resourceVersion === undefined || object?.metadata?.resourceVersion === written.resourceVersion;
    }
    case 'serviceGone': case 'deploymentGone': {
      const object = written.kind === 'serviceGone' ? cache.service(written.name) : cache.deployment(written.name);
      return object === undefined || (written.uid !== undefined && object.metadata?.uid !== written.uid);
    }
    case 'release': {
      const release = cache.release();
      // A release whose last finalizer we dropped may be gone for good: nothing more to see.
      return release === undefined || written.resourceVersion === undefined || release.metadata.resourceVersion === written.resourceVersion;
    }
  }
}
