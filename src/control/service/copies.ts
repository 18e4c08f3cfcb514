// The forked (stable) and canary copies of an original Service: plain ClusterIP Services (no
// cluster IP, no nodePorts: seed defect D7) with the original's ports as saved, owned by the release.

import type { V1Service } from '@kubernetes/client-node';
import type { SavedOriginal } from './originals.ts';
import { API_VERSION, KIND, LABEL_RELEASE, LABEL_ROLE, LABEL_SERVICE, type Labels } from '../../api/names.ts';
import type { CanaryRelease } from '../../api/release-types.ts';

export type CopyRole = 'forked' | 'canary';
export const COPY_ROLES: readonly CopyRole[] = ['forked', 'canary'];

export function copyName(service: string, role: CopyRole): string {
  return `${service}-${role}`;
}

/** Whether a Service is a copy made by this release (by label: the spec may no longer name it). */
export function isCopyOf(service: V1Service, release: string): boolean {
  const labels = service.metadata?.labels;
  return (
    labels?.[LABEL_RELEASE] === release &&
    labels[LABEL_SERVICE] !== undefined &&
    (labels[LABEL_ROLE] === 'forked' || labels[LABEL_ROLE] === 'canary')
  );
}

/** The original Service a copy of this release was made from. */
export function copySource(service: V1Service): string | undefined {
  return service.metadata?.labels?.[LABEL_SERVICE];
}

export function desiredCopy(
  release: CanaryRelease,
  original: string,
  saved: SavedOriginal,
  role: CopyRole,
  selector: Labels,
): V1Service {
  const { name, namespace, uid } = release.metadata;
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: copyName(original, role),
      ...(namespace === undefined ? {} : { namespace }),
      labels: { [LABEL_RELEASE]: name, [LABEL_ROLE]: role, [LABEL_SERVICE]: original },
      // No blockOwnerDeletion: setting it needs `update` on canaryreleases/finalizers where
      // OwnerReferencesPermissionEnforcement runs, and the release's own finalizer already orders deletion.
      ownerReferences: [{ apiVersion: API_VERSION, kind: KIND, name, uid, controller: true }],
    },
    spec: {
      type: 'ClusterIP',
      selector: { ...selector },
      ports: saved.ports.map(({ name: portName, port, protocol, targetPort }) =>
        portName === undefined ? { port, protocol, targetPort } : { name: portName, port, protocol, targetPort },
      ),
    },
  };
}

/** The copy's cluster IP, once the apiserver has given it one (headless "None" is not one). */
export function clusterIpOf(service: V1Service | undefined): string | undefined {
  const ip = service?.spec?.clusterIP;
  return ip === undefined || ip === '' || ip === 'None' ? undefined : ip;
}
