// The Gateway API objects canary-l4 reads and the statuses it writes, as the v1 schema has them: the
// fields an L4 implementation uses (HTTP's and TLS's are left to the schema; a listener with them is
// refused by protocol). Optional where the schema lets a client omit a field; the API server's
// defaults (group, kind, weight, allowedRoutes) may be absent in what a watch delivers, so readers
// apply them (gateway/model/defaults.ts).
import type { RouteKind } from './names.ts';

export interface ObjectMeta {
  readonly name: string;
  readonly namespace?: string;
  readonly uid?: string;
  readonly generation?: number;
  readonly resourceVersion?: string;
  readonly creationTimestamp?: string;
  readonly deletionTimestamp?: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly annotations?: Readonly<Record<string, string>>;
}

export type ConditionStatus = 'True' | 'False' | 'Unknown';

export interface Condition {
  readonly type: string;
  readonly status: ConditionStatus;
  readonly reason: string;
  readonly message: string;
  readonly observedGeneration?: number;
  readonly lastTransitionTime: string;
}

export interface LabelSelector {
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly {
    readonly key: string;
    readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
    readonly values?: readonly string[];
  }[];
}

export interface GatewayClass {
  readonly apiVersion?: string;
  readonly kind?: 'GatewayClass';
  readonly metadata: ObjectMeta;
  readonly spec: {
    readonly controllerName: string;
    readonly parametersRef?: { readonly group: string; readonly kind: string; readonly name: string };
    readonly description?: string;
  };
  readonly status?: { readonly conditions?: readonly Condition[] };
}

export interface RouteGroupKind {
  readonly group?: string;
  readonly kind: string;
}

export interface GatewayListener {
  readonly name: string;
  readonly hostname?: string;
  readonly port: number;
  readonly protocol: string;
  readonly tls?: unknown;
  readonly allowedRoutes?: {
    readonly namespaces?: { readonly from?: 'All' | 'Same' | 'Selector'; readonly selector?: LabelSelector };
    readonly kinds?: readonly RouteGroupKind[];
  };
}

export interface GatewayAddress {
  readonly type?: string;
  readonly value: string;
}

export interface ListenerStatus {
  readonly name: string;
  readonly supportedKinds: readonly RouteGroupKind[];
  readonly attachedRoutes: number;
  readonly conditions: readonly Condition[];
}

export interface GatewayStatus {
  readonly addresses?: readonly GatewayAddress[];
  readonly conditions?: readonly Condition[];
  readonly listeners?: readonly ListenerStatus[];
}

export interface Gateway {
  readonly apiVersion?: string;
  readonly kind?: 'Gateway';
  readonly metadata: ObjectMeta;
  readonly spec: {
    readonly gatewayClassName: string;
    readonly listeners: readonly GatewayListener[];
    readonly addresses?: readonly GatewayAddress[];
  };
  readonly status?: GatewayStatus;
}

export interface ParentReference {
  readonly group?: string;
  readonly kind?: string;
  readonly namespace?: string;
  readonly name: string;
  readonly sectionName?: string;
  readonly port?: number;
}

export interface BackendRef {
  readonly group?: string;
  readonly kind?: string;
  readonly name: string;
  readonly namespace?: string;
  readonly port?: number;
  /** 0–1 000 000; absent = 1. */
  readonly weight?: number;
}

export interface RouteRule {
  readonly name?: string;
  readonly backendRefs?: readonly BackendRef[];
}

export interface RouteParentStatus {
  readonly parentRef: ParentReference;
  readonly controllerName: string;
  readonly conditions: readonly Condition[];
}

/** A TCPRoute or a UDPRoute: the same shape, a different kind. */
export interface L4Route {
  readonly apiVersion?: string;
  readonly kind: RouteKind;
  readonly metadata: ObjectMeta;
  readonly spec: { readonly parentRefs?: readonly ParentReference[]; readonly rules: readonly RouteRule[] };
  readonly status?: { readonly parents?: readonly RouteParentStatus[] };
}

export interface ReferenceGrant {
  readonly metadata: ObjectMeta;
  readonly spec: {
    readonly from: readonly { readonly group: string; readonly kind: string; readonly namespace: string }[];
    readonly to: readonly { readonly group: string; readonly kind: string; readonly name?: string }[];
  };
}
