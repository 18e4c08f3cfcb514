// Read-your-writes for the proxy's caches (controller-kit/own-writes.ts): which object each of
// the applier's writes is to, and when the caches show it.

import type { V1Deployment, V1Service } from '@kubernetes/client-node';
import type { Written } from './apply.ts';
import type { CanaryRelease } from '../../api/release-types.ts';
import { OwnWrites } from '../../controller-kit/own-writes.ts';
import { showsResourceVersion } from '../../controller-kit/resource-version.ts';

export interface CacheView {
  service(name: string): V1Service | undefined;
  deployment(name: string): V1Deployment | undefined;
  release(): CanaryRelease | undefined;
}

export type ProxyOwnWrites = OwnWrites<Written, CacheView>;

export function proxyOwnWrites(maxWaitMs: number): ProxyOwnWrites {
  return new OwnWrites({ maxWaitMs, objectOf, shown });
}

function objectOf(written: Written): string {
  return written.kind === 'release' ? 'release' : `${written.kind.replace('Gone', '')}/${written.name}`;
}

function shown(written: Written, cache: CacheView): boolean {
  switch (written.kind) {
    case 'service':
    case 'deployment': {
      const object = written.kind === 'service' ? cache.service(written.name) : cache.deployment(written.name);
      return (
        written.resourceVersion === undefined ||
        showsResourceVersion(object?.metadata?.resourceVersion, written.resourceVersion)
      );
    }
    case 'serviceGone':
    case 'deploymentGone': {
      const object = written.kind === 'serviceGone' ? cache.service(written.name) : cache.deployment(written.name);
      return object === undefined || (written.uid !== undefined && object.metadata?.uid !== written.uid);
    }
    case 'release': {
      const release = cache.release();
      // A release whose last finalizer we dropped may be gone for good: nothing more to see.
      return (
        release === undefined ||
        written.resourceVersion === undefined ||
        showsResourceVersion(release.metadata.resourceVersion, written.resourceVersion)
      );
    }
  }
}
