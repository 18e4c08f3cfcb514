// What the manager does for one Gateway: observed Gateway + its class + the objects kept for it (by
// their names) + its pods → the writes that converge them. Pure, level-based, as plan.ts is for a
// release: each pass renders everything and compares. A Gateway that is gone, being deleted, or not
// of a class canary-l4 serves gets nothing, and what is left of its proxy is removed (the garbage
// collector removes the namespaced objects with the Gateway too; the ClusterRoleBinding only the
// manager can).

import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import type { Gateway } from '../../api/gateway/types.ts';
import { converge, removalsOf } from '../children.ts';
import { GATEWAY_KINDS, gatewayChildName, renderGateway, type GatewayKind } from './render.ts';
import { LABEL_GATEWAY, LABEL_GATEWAY_NAMESPACE } from './names.ts';
import type { RenderSettings } from '../render.ts';
import { KIND_OF, type Step } from '../step.ts';
import { LABEL_MANAGED_BY, MANAGED_BY } from '../names.ts';

export interface ObservedGateway {
  readonly namespace: string;
  readonly name: string;
  /** undefined: the Gateway is gone. */
  readonly gateway: Gateway | undefined;
  /** Whether its class is one canary-l4 serves (ours, and accepted). */
  readonly classServed: boolean;
  /** The objects named as this Gateway's would be (they may not be ours). */
  readonly children: Partial<Record<GatewayKind, KubernetesObject>>;
  /** Pods labelled for this Gateway. */
  readonly pods: readonly V1Pod[];
}

export interface GatewayPlan {
  readonly steps: readonly Step[];
  /** What stops the manager from making the proxy, one line each (the Gateway's fields, a name someone else holds). */
  readonly problems: readonly string[];
  /** What it made anyway, but says (an annotation it could not use). */
  readonly warnings: readonly string[];
}

/** An object the manager made for this Gateway (its labels say so): one it may replace or delete. */
export function isOursFor(object: KubernetesObject, namespace: string, gateway: string): boolean {
  const labels = object.metadata?.labels;
  const objectNamespace = object.metadata?.namespace ?? labels?.[LABEL_GATEWAY_NAMESPACE];
  return (
    labels?.[LABEL_MANAGED_BY] === MANAGED_BY && labels[LABEL_GATEWAY] === gateway && objectNamespace === namespace
  );
}

export function planGateway(observed: ObservedGateway, settings: RenderSettings): GatewayPlan {
  const { gateway, namespace, name } = observed;
  const ours = (object: KubernetesObject) => isOursFor(object, namespace, name);
  if (gateway === undefined || gateway.metadata.deletionTimestamp != null || !observed.classServed) {
    const left = GATEWAY_KINDS.filter((kind) => observed.children[kind] !== undefined && ours(observed.children[kind]));
    return { steps: removalsOf(left, observed.children, observed.pods.length > 0), problems: [], warnings: [] };
  }
  const rendered = renderGateway(gateway, settings);
  if (!rendered.ok) return { steps: [], problems: rendered.problems, warnings: [] };
  const { steps, taken } = converge(GATEWAY_KINDS, rendered.objects, observed.children, ours);
  if (taken.length > 0)
    return {
      steps: [],
      problems: [
        `${taken.map((kind) => `${KIND_OF[kind]} ${gatewayChildName(kind, namespace, name)}`).join(', ')} ` +
          `exist and are not the manager's: delete them, or rename the Gateway`,
      ],
      warnings: rendered.warnings,
    };
  return { steps, problems: [], warnings: rendered.warnings };
}
