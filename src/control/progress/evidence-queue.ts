// The intervals the leader collected that status has not counted yet, oldest first: a pass counts
// one (its status write records it as countedAt), the next pass takes the next, so a pass delayed
// past the next interval (a backoff, an API outage) loses none. Pure.

import { mergeEvidence } from './collector.ts';
import type { Evidence } from './analysis/evidence.ts';

/** Intervals kept while passes cannot count them (an API outage); older ones are merged. */
export const MAX_PENDING_INTERVALS = 30;

export class EvidenceQueue {
  #pending: Evidence[] = [];

  /** Queues an interval; past MAX_PENDING_INTERVALS the two oldest become one. */
  push(evidence: Evidence): void {
    this.#pending.push(evidence);
    if (this.#pending.length > MAX_PENDING_INTERVALS)
      this.#pending.splice(0, 2, mergeEvidence(this.#pending[0]!, this.#pending[1]!));
  }

  /**
   * The oldest interval status has not counted yet (`countedAt`: status.countedAt), dropping those it
   * has. Only the leader's: it alone collects and writes, and a replica that stopped leading must not
   * plan on intervals another leader counts, so one not `leading` drops them all.
   */
  oldest(countedAt: string | undefined, leading: boolean): Evidence | undefined {
    this.#pending = leading
      ? this.#pending.filter((item) => countedAt === undefined || Date.parse(item.at) > Date.parse(countedAt))
      : [];
    return this.#pending[0];
  }
}
