// What one Gateway's controller watches, each kind by its own informer that restarts on its own
// after a failure: its Gateway (by name), the GatewayClasses, every TCPRoute, UDPRoute and
// ReferenceGrant (a route in any namespace may name this Gateway, a backend may be in any namespace),
// the Services (backends, and the one in front of this Gateway) and the Namespaces (allowedRoutes
// selectors). A pass reads them through here, never through the API.
import type { KubernetesListObject, KubernetesObject, V1Namespace, V1Service } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import {
  GATEWAY_GROUP,
  GATEWAY_ROUTE_ALPHA_VERSION,
  GATEWAY_VERSION,
  ROUTE_RESOURCES,
  type RouteKind,
} from '../api/gateway/names.ts';
import type { Gateway, GatewayClass, L4Route, ReferenceGrant } from '../api/gateway/types.ts';
import type { CallOptions, KubeClients } from '../kube/client.ts';
import { CONTROLLER_INFORMER_TUNING, type Informer, startInformer } from '../kube/informer.ts';
import { isNotFound } from '../kube/patch.ts';

export interface GatewayWatchesOptions {
  readonly clients: KubeClients;
  readonly namespace: string;
  readonly gateway: string;
  readonly callOptions: CallOptions;
  /** Every add, update and delete of any kind; must only enqueue work. */
  readonly onChange: () => void;
  readonly onRestarted: () => void;
  readonly log: Logger;
}

type List = Promise<KubernetesListObject<KubernetesObject>>;

export class GatewayWatches {
  readonly #namespace: string;
  readonly #gateway: string;
  readonly #gateways: Informer<KubernetesObject>;
  readonly #classes: Informer<KubernetesObject>;
  readonly #routes = new Map<RouteKind, Informer<KubernetesObject>>();
  readonly #routeVersions = new Map<RouteKind, string>();
  readonly #grants: Informer<KubernetesObject>;
  readonly #services: Informer<V1Service>;
  readonly #namespaces: Informer<V1Namespace>;
  readonly synced: Promise<void>;
  #stopped = false;

  constructor({ clients, namespace, gateway, callOptions, onChange, onRestarted, log }: GatewayWatchesOptions) {
    this.#namespace = namespace;
    this.#gateway = gateway;
    const { core, custom, kubeConfig } = clients;
    const shared = { kubeConfig, onChange, onRestarted, log, ...CONTROLLER_INFORMER_TUNING };
    const gatewayApi = { group: GATEWAY_GROUP, version: GATEWAY_VERSION };
    const everywhere = (plural: string, version = GATEWAY_VERSION) => ({
      path: `/apis/${GATEWAY_GROUP}/${version}/${plural}`,
      list: () =>
        custom.listCustomObjectForAllNamespaces(
          { group: GATEWAY_GROUP, version, resourcePlural: plural },
          callOptions,
        ) as List,
    });
    const fieldSelector = `metadata.name=${gateway}`;
    this.#gateways = startInformer<KubernetesObject>({
      ...shared,
      path: `/apis/${GATEWAY_GROUP}/${GATEWAY_VERSION}/namespaces/${namespace}/gateways`,
      fieldSelector,
      list: () =>
        custom.listNamespacedCustomObject(
          { ...gatewayApi, namespace, plural: 'gateways', fieldSelector },
          callOptions,
        ) as List,
    });
    this.#classes = startInformer<KubernetesObject>({
      ...shared,
      path: `/apis/${GATEWAY_GROUP}/${GATEWAY_VERSION}/gatewayclasses`,
      list: () => custom.listClusterCustomObject({ ...gatewayApi, plural: 'gatewayclasses' }, callOptions) as List,
    });
    const routesStarted = Promise.all(
      (Object.entries(ROUTE_RESOURCES) as [RouteKind, string][]).map(async ([kind, plural]) => {
        const version = await servedRouteVersion(clients, plural, callOptions);
        if (version === undefined) {
          log.warn(
            { kind },
            `${kind}s are not served: install Gateway API's CRDs (v1.6 or later: kubectl apply --server-side -f ` +
              `https://github.com/kubernetes-sigs/gateway-api/releases/download/v1.6.3/standard-install.yaml); waiting for them`,
          );
        } else if (version !== GATEWAY_VERSION)
          log.info(
            { kind, version },
            `${kind}s are served at ${version} only (Gateway API before v1.6): reading them there`,
          );
        this.#routeVersions.set(kind, version ?? GATEWAY_VERSION);
        if (this.#stopped) return;
        const informer = startInformer<KubernetesObject>({ ...shared, ...everywhere(plural, version) });
        this.#routes.set(kind, informer);
        await informer.synced;
      }),
    );
    this.#grants = startInformer<KubernetesObject>({ ...shared, ...everywhere('referencegrants') });
    this.#services = startInformer<V1Service>({
      ...shared,
      path: '/api/v1/services',
      list: () => core.listServiceForAllNamespaces({}, callOptions),
    });
    this.#namespaces = startInformer<V1Namespace>({
      ...shared,
      path: '/api/v1/namespaces',
      list: () => core.listNamespace({}, callOptions),
    });
    const others = [this.#gateways, this.#classes, this.#grants, this.#services, this.#namespaces];
    this.synced = Promise.all([routesStarted, ...others.map((informer) => informer.synced)]).then(() => {});
  }

  /** The version TCPRoutes or UDPRoutes are read and written at. */
  routeVersion(kind: RouteKind): string {
    return this.#routeVersions.get(kind) ?? GATEWAY_VERSION;
  }

  gateway(): Gateway | undefined {
    return this.#gateways.get(this.#gateway, this.#namespace) as Gateway | undefined;
  }

  gatewayClass(name: string): GatewayClass | undefined {
    return this.#classes.list().find((c) => c.metadata?.name === name) as GatewayClass | undefined;
  }

  /** Every TCPRoute and UDPRoute, each with its kind set (a list's items may omit it). */
  routes(): L4Route[] {
    return [...this.#routes].flatMap(([kind, informer]) =>
      informer.list().map((route) => ({ ...(route as unknown as L4Route), kind })),
    );
  }

  grants(): ReferenceGrant[] {
    return this.#grants.list() as unknown as ReferenceGrant[];
  }

  /** Services by ns/name. */
  services(): Map<string, V1Service> {
    return new Map(this.#services.list().map((s) => [`${s.metadata?.namespace}/${s.metadata?.name}`, s]));
  }

  namespaceLabels(): Map<string, Readonly<Record<string, string>>> {
    return new Map(this.#namespaces.list().map((n) => [n.metadata?.name ?? '', n.metadata?.labels ?? {}]));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    const all = [
      this.#gateways,
      this.#classes,
      ...this.#routes.values(),
      this.#grants,
      this.#services,
      this.#namespaces,
    ];
    await Promise.all(all.map((informer) => informer.stop()));
  }
}

/**
 * v1 where it is served (Gateway API v1.6 and later, both channels); else v1alpha2, the experimental
 * channel's only version before v1.6; undefined when neither is found (the CRDs are not installed
 * yet: the informer then asks at v1 until they are); v1 when the API gives another error.
 */
async function servedRouteVersion(
  clients: KubeClients,
  plural: string,
  call: CallOptions,
): Promise<string | undefined> {
  for (const version of [GATEWAY_VERSION, GATEWAY_ROUTE_ALPHA_VERSION]) {
    try {
      await clients.custom.listCustomObjectForAllNamespaces(
        { group: GATEWAY_GROUP, version, resourcePlural: plural, limit: 1 },
        call,
      );
      return version;
    } catch (err) {
      if (!isNotFound(err)) return GATEWAY_VERSION;
    }
  }
  return undefined;
}
