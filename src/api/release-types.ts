// The CanaryRelease object as canary-l4 reads it from the cluster: its metadata, spec and status
// (spec-types.ts, status-types.ts). The parts the manager owns are proxy-types.ts.

import type { CanaryReleaseSpec } from './spec-types.ts';
import type { CanaryReleaseStatus } from './status-types.ts';

export interface CanaryReleaseMetadata {
  readonly name: string;
  readonly namespace?: string;
  readonly uid: string;
  readonly generation?: number;
  readonly resourceVersion?: string;
  readonly finalizers?: readonly string[];
  readonly deletionTimestamp?: string;
}

export interface CanaryRelease {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata: CanaryReleaseMetadata;
  readonly spec?: CanaryReleaseSpec;
  /** As read from the cluster: anything may be missing (a fresh object has no status). */
  readonly status?: Partial<CanaryReleaseStatus>;
}
