/**
 * The `scale` subresource of Deployments, ReplicaSets and StatefulSets (what `kubectl scale`
 * patches, as a JSON merge patch): an autoscaling/v1 Scale read from the object, whose
 * `spec.replicas` written back is the object's. Pure; api.ts writes it through the usual pipeline.
 */
import type { KObject } from '../wire/json.ts';
import { formatLabelSelector } from '../resources/selectors.ts';

/** The Scale of `obj` (metadata trimmed to what kube-apiserver copies). */
export function toScale(obj: KObject): KObject {
  const { name, namespace, uid, resourceVersion, creationTimestamp } = obj.metadata;
  return {
    kind: 'Scale',
    apiVersion: 'autoscaling/v1',
    metadata: { name, namespace, uid, resourceVersion, creationTimestamp },
    spec: { replicas: obj.spec?.replicas ?? 1 },
    status: { replicas: obj.status?.replicas ?? 0, selector: formatLabelSelector(obj.spec?.selector) },
  };
}
