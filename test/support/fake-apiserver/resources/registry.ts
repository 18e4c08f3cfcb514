/**
 * Which resources are served: the built-in kinds the project uses, plus whatever
 * CustomResourceDefinitions have been created. One {@link ResourceType} per group + plural; a CRD
 * with several served versions is one type served under each version (no conversion: only
 * `apiVersion` is rewritten).
 */
import { isObject, type KObject } from '../wire/json.ts';
import type { PatchMeta } from './patch.ts';
import type { PrinterColumn } from './table.ts';

export interface ResourceType {
  group: string;
  /** Versions served; the first is the preferred (and storage) version. */
  versions: string[];
  plural: string;
  singular: string;
  kind: string;
  listKind: string;
  namespaced: boolean;
  shortNames: string[];
  categories: string[];
  /** Whether `/status` is a subresource (status written apart from spec). */
  statusSubresource: boolean;
  /** Whether `/scale` (autoscaling/v1 Scale of `spec.replicas`) is served: Deployments, ReplicaSets, StatefulSets. */
  scaleSubresource?: boolean;
  /** Built-in kinds accept strategic merge patch; custom resources do not. */
  builtin: boolean;
  /** Strategic-merge (and server-side apply) list semantics (built-ins only). */
  patchMeta: PatchMeta;
  /** Field selectors accepted beyond metadata.name / metadata.namespace (dotted paths into the object). */
  extraFieldSelectors: string[];
  /** Field selectors whose value is computed rather than read at their path (an Event's `source`). */
  computedFieldSelectors?: Record<string, (o: KObject) => string>;
  /** DELETE answers with the deleted object (Pods, Services) rather than a Status. */
  returnDeletedObject: boolean;
  /** The CRD this type came from, if any. */
  crdName?: string;
  /** A CRD's additionalPrinterColumns (served version), for Table output. */
  printerColumns?: PrinterColumn[];
  /** A CRD's `openAPIV3Schema` per served version: what its objects are pruned and validated by, and what OpenAPI publishes. */
  schemas?: Record<string, KObject>;
}

export function typeKey(group: string, plural: string): string {
  return `${group}/${plural}`;
}

export const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];

const META: PatchMeta = {
  'metadata.finalizers': { set: true },
  'metadata.ownerReferences': { mergeKey: 'uid' },
};

/** Strategic-merge metadata of a PodSpec found under `prefix`. */
function podSpecMeta(prefix: string): PatchMeta {
  const containers = (p: string): PatchMeta => ({
    [`${p}`]: { mergeKey: 'name' },
    [`${p}.ports`]: { mergeKey: 'containerPort', listMapKeys: ['containerPort', 'protocol'] },
    [`${p}.env`]: { mergeKey: 'name' },
    [`${p}.volumeMounts`]: { mergeKey: 'mountPath' },
    [`${p}.volumeDevices`]: { mergeKey: 'devicePath' },
  });
  return {
    ...containers(`${prefix}.containers`),
    ...containers(`${prefix}.initContainers`),
    ...containers(`${prefix}.ephemeralContainers`),
    [`${prefix}.volumes`]: { mergeKey: 'name' },
    [`${prefix}.imagePullSecrets`]: { mergeKey: 'name' },
    [`${prefix}.hostAliases`]: { mergeKey: 'ip' },
    [`${prefix}.topologySpreadConstraints`]: { mergeKey: 'topologyKey' },
    [`${prefix}.resourceClaims`]: { mergeKey: 'name' },
    [`${prefix}.schedulingGates`]: { mergeKey: 'name' },
  };
}

/** core/v1 Event's selectable fields (pkg/registry/core/event/strategy.go), but `source`. */
const EVENT_FIELDS = [
  'involvedObject.kind',
  'involvedObject.namespace',
  'involvedObject.name',
  'involvedObject.uid',
  'involvedObject.apiVersion',
  'involvedObject.resourceVersion',
  'involvedObject.fieldPath',
  'reason',
  'reportingComponent',
  'type',
];

const CONDITIONS: PatchMeta = { 'status.conditions': { mergeKey: 'type' } };

function builtin(
  t: Pick<ResourceType, 'group' | 'plural' | 'singular' | 'kind' | 'namespaced' | 'statusSubresource'> &
    Partial<ResourceType>,
): ResourceType {
  return {
    versions: ['v1'],
    listKind: `${t.kind}List`,
    shortNames: [],
    categories: [],
    builtin: true,
    extraFieldSelectors: [],
    returnDeletedObject: false,
    ...t,
    patchMeta: { ...META, ...(t.patchMeta ?? {}) },
  };
}

export function builtinTypes(): ResourceType[] {
  return [
    builtin({
      group: '',
      plural: 'namespaces',
      singular: 'namespace',
      kind: 'Namespace',
      namespaced: false,
      statusSubresource: true,
      shortNames: ['ns'],
      extraFieldSelectors: ['status.phase'],
      patchMeta: CONDITIONS,
    }),
    builtin({
      group: '',
      plural: 'services',
      singular: 'service',
      kind: 'Service',
      namespaced: true,
      statusSubresource: true,
      shortNames: ['svc'],
      categories: ['all'],
      returnDeletedObject: true,
      patchMeta: { 'spec.ports': { mergeKey: 'port', listMapKeys: ['port', 'protocol'] }, ...CONDITIONS },
    }),
    builtin({
      group: '',
      plural: 'endpoints',
      singular: 'endpoints',
      kind: 'Endpoints',
      namespaced: true,
      statusSubresource: false,
      shortNames: ['ep'],
    }),
    builtin({
      group: '',
      plural: 'pods',
      singular: 'pod',
      kind: 'Pod',
      namespaced: true,
      statusSubresource: true,
      shortNames: ['po'],
      categories: ['all'],
      returnDeletedObject: true,
      extraFieldSelectors: [
        'spec.nodeName',
        'spec.restartPolicy',
        'spec.schedulerName',
        'spec.serviceAccountName',
        'status.phase',
        'status.podIP',
        'status.nominatedNodeName',
      ],
      patchMeta: { ...podSpecMeta('spec'), ...CONDITIONS, 'status.podIPs': { mergeKey: 'ip' } },
    }),
    builtin({
      group: '',
      plural: 'events',
      singular: 'event',
      kind: 'Event',
      namespaced: true,
      statusSubresource: false,
      shortNames: ['ev'],
      extraFieldSelectors: EVENT_FIELDS,
      computedFieldSelectors: { source: (e) => String(e.source?.component || e.reportingComponent || '') },
    }),
    builtin({
      group: '',
      plural: 'configmaps',
      singular: 'configmap',
      kind: 'ConfigMap',
      namespaced: true,
      statusSubresource: false,
      shortNames: ['cm'],
    }),
    builtin({
      group: 'apps',
      plural: 'deployments',
      singular: 'deployment',
      kind: 'Deployment',
      namespaced: true,
      statusSubresource: true,
      scaleSubresource: true,
      shortNames: ['deploy'],
      categories: ['all'],
      patchMeta: { ...podSpecMeta('spec.template.spec'), ...CONDITIONS },
    }),
    builtin({
      group: 'apps',
      plural: 'replicasets',
      singular: 'replicaset',
      kind: 'ReplicaSet',
      namespaced: true,
      statusSubresource: true,
      scaleSubresource: true,
      shortNames: ['rs'],
      categories: ['all'],
      patchMeta: { ...podSpecMeta('spec.template.spec'), ...CONDITIONS },
    }),
    builtin({
      group: 'coordination.k8s.io',
      plural: 'leases',
      singular: 'lease',
      kind: 'Lease',
      namespaced: true,
      statusSubresource: false,
    }),
    ...manifestTypes(),
    builtin({
      group: 'apiextensions.k8s.io',
      plural: 'customresourcedefinitions',
      singular: 'customresourcedefinition',
      kind: 'CustomResourceDefinition',
      namespaced: false,
      statusSubresource: true,
      shortNames: ['crd', 'crds'],
      categories: ['api-extensions'],
      patchMeta: CONDITIONS,
    }),
  ];
}

/**
 * The other kinds a manifest set of a v1.32 cluster commonly holds (an operator's install: its
 * ServiceAccount, RBAC, PodDisruptionBudget, workloads, policies). Generic storage with their
 * scope, status subresource, short names and strategic-merge list keys: enough to apply, get,
 * watch and delete them; no controller acts on them.
 */
function manifestTypes(): ResourceType[] {
  const workload = (plural: string, kind: string, shortNames: string[], podSpec = 'spec.template.spec') =>
    builtin({
      group: plural === 'jobs' || plural === 'cronjobs' ? 'batch' : 'apps',
      plural,
      singular: kind.toLowerCase(),
      kind,
      namespaced: true,
      statusSubresource: true,
      scaleSubresource: plural === 'statefulsets',
      shortNames,
      categories: ['all'],
      patchMeta: { ...podSpecMeta(podSpec), ...CONDITIONS },
    });
  const rbac = (plural: string, kind: string, namespaced: boolean) =>
    builtin({
      group: 'rbac.authorization.k8s.io',
      plural,
      singular: kind.toLowerCase(),
      kind,
      namespaced,
      statusSubresource: false,
    });
  return [
    builtin({
      group: '',
      plural: 'serviceaccounts',
      singular: 'serviceaccount',
      kind: 'ServiceAccount',
      namespaced: true,
      statusSubresource: false,
      shortNames: ['sa'],
      returnDeletedObject: true,
      patchMeta: { secrets: { mergeKey: 'name' } },
    }),
    builtin({
      group: '',
      plural: 'secrets',
      singular: 'secret',
      kind: 'Secret',
      namespaced: true,
      statusSubresource: false,
    }),
    builtin({
      group: '',
      plural: 'persistentvolumeclaims',
      singular: 'persistentvolumeclaim',
      kind: 'PersistentVolumeClaim',
      namespaced: true,
      statusSubresource: true,
      shortNames: ['pvc'],
      patchMeta: CONDITIONS,
    }),
    rbac('roles', 'Role', true),
    rbac('rolebindings', 'RoleBinding', true),
    rbac('clusterroles', 'ClusterRole', false),
    rbac('clusterrolebindings', 'ClusterRoleBinding', false),
    builtin({
      group: 'policy',
      plural: 'poddisruptionbudgets',
      singular: 'poddisruptionbudget',
      kind: 'PodDisruptionBudget',
      namespaced: true,
      statusSubresource: true,
      shortNames: ['pdb'],
      patchMeta: CONDITIONS,
    }),
    builtin({
      group: 'scheduling.k8s.io',
      plural: 'priorityclasses',
      singular: 'priorityclass',
      kind: 'PriorityClass',
      namespaced: false,
      statusSubresource: false,
      shortNames: ['pc'],
    }),
    workload('statefulsets', 'StatefulSet', ['sts']),
    workload('daemonsets', 'DaemonSet', ['ds']),
    workload('jobs', 'Job', []),
    workload('cronjobs', 'CronJob', ['cj'], 'spec.jobTemplate.spec.template.spec'),
    builtin({
      group: 'autoscaling',
      versions: ['v2'],
      plural: 'horizontalpodautoscalers',
      singular: 'horizontalpodautoscaler',
      kind: 'HorizontalPodAutoscaler',
      namespaced: true,
      statusSubresource: true,
      shortNames: ['hpa'],
      categories: ['all'],
      patchMeta: CONDITIONS,
    }),
    builtin({
      group: 'networking.k8s.io',
      plural: 'networkpolicies',
      singular: 'networkpolicy',
      kind: 'NetworkPolicy',
      namespaced: true,
      statusSubresource: false,
      shortNames: ['netpol'],
    }),
    builtin({
      group: 'networking.k8s.io',
      plural: 'ingresses',
      singular: 'ingress',
      kind: 'Ingress',
      namespaced: true,
      statusSubresource: true,
      shortNames: ['ing'],
    }),
    // Gateway API's install carries one of each (its safe-upgrades policy): stored here, never
    // enforced, as this fake runs no admission (README).
    builtin({
      group: 'admissionregistration.k8s.io',
      plural: 'validatingadmissionpolicies',
      singular: 'validatingadmissionpolicy',
      kind: 'ValidatingAdmissionPolicy',
      namespaced: false,
      statusSubresource: true,
    }),
    builtin({
      group: 'admissionregistration.k8s.io',
      plural: 'validatingadmissionpolicybindings',
      singular: 'validatingadmissionpolicybinding',
      kind: 'ValidatingAdmissionPolicyBinding',
      namespaced: false,
      statusSubresource: false,
    }),
  ];
}

/** Derive the served type from a CRD object; `undefined` when no version is served. */
export function typeFromCrd(crd: KObject): ResourceType | undefined {
  const spec = crd.spec ?? {};
  const names = spec.names ?? {};
  const served = ((spec.versions ?? []) as KObject[]).filter((v) => v.served !== false);
  if (served.length === 0) return undefined;
  // Storage version first, so it is what objects are stored (and preferred) as.
  served.sort((a, b) => Number(Boolean(b.storage)) - Number(Boolean(a.storage)));
  const storage = served[0]!;
  return {
    group: spec.group,
    versions: served.map((v) => v.name as string),
    plural: names.plural,
    singular: names.singular ?? String(names.kind ?? '').toLowerCase(),
    kind: names.kind,
    listKind: names.listKind ?? `${names.kind}List`,
    namespaced: spec.scope !== 'Cluster',
    shortNames: names.shortNames ?? [],
    categories: names.categories ?? [],
    statusSubresource: storage.subresources?.status !== undefined && storage.subresources?.status !== null,
    builtin: false,
    patchMeta: {},
    extraFieldSelectors: ((storage.selectableFields ?? []) as KObject[]).map((f) =>
      String(f.jsonPath).replace(/^\./, ''),
    ),
    returnDeletedObject: false,
    crdName: crd.metadata?.name,
    printerColumns: (storage.additionalPrinterColumns ?? []) as PrinterColumn[],
    schemas: Object.fromEntries(
      served
        .filter((v) => isObject(v.schema?.openAPIV3Schema))
        .map((v) => [v.name as string, v.schema.openAPIV3Schema as KObject]),
    ),
  };
}

/** The mutable set of served types. */
export class Registry {
  #types = new Map<string, ResourceType>();

  constructor() {
    for (const t of builtinTypes()) this.#types.set(typeKey(t.group, t.plural), t);
  }

  all(): ResourceType[] {
    return [...this.#types.values()];
  }

  byKey(key: string): ResourceType | undefined {
    return this.#types.get(key);
  }

  /** Look up by URL parts; `undefined` if the group/version/plural is not served. */
  lookup(group: string, version: string, plural: string): ResourceType | undefined {
    const t = this.#types.get(typeKey(group, plural));
    return t?.versions.includes(version) ? t : undefined;
  }

  /** Find the type whose kind matches an object's apiVersion/kind (used by the GC). */
  byGroupKind(group: string, kind: string): ResourceType | undefined {
    return this.all().find((t) => t.group === group && t.kind === kind);
  }

  set(t: ResourceType): void {
    this.#types.set(typeKey(t.group, t.plural), t);
  }

  remove(group: string, plural: string): void {
    this.#types.delete(typeKey(group, plural));
  }

  /** Group → versions, for discovery, in a stable order (core first, built-ins, then CRDs). */
  groups(): Map<string, string[]> {
    const out = new Map<string, string[]>();
    for (const t of this.#types.values()) {
      const vs = out.get(t.group) ?? [];
      for (const v of t.versions) if (!vs.includes(v)) vs.push(v);
      out.set(t.group, vs);
    }
    return out;
  }
}

/** The types served under one group version. */
export function typesIn(registry: Registry, group: string, version: string): ResourceType[] {
  return registry.all().filter((t) => t.group === group && t.versions.includes(version));
}

/** `apps/v1` or `v1`. */
export function apiVersionOf(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}

/** Split `apps/v1` → ['apps','v1'], `v1` → ['','v1']. */
export function splitApiVersion(apiVersion: string): [string, string] {
  const i = apiVersion.indexOf('/');
  return i < 0 ? ['', apiVersion] : [apiVersion.slice(0, i), apiVersion.slice(i + 1)];
}
