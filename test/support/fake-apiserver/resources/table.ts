/**
 * Server-side printing: a `meta.k8s.io/v1` Table when the client asks for one (`Accept:
 * application/json;as=Table;v=v1;g=meta.k8s.io`, what `kubectl get` sends), so kubectl prints the
 * usual columns: kube-apiserver's printers for the built-in kinds we serve (pods, services,
 * deployments, …), a CRD's `additionalPrinterColumns` for its custom resources, and NAME/AGE for
 * the rest. Rows carry the object as `?includeObject=` asks: PartialObjectMetadata by default, the
 * whole object for `Object` (what `kubectl get --sort-by` asks, to sort on its fields), none for `None`.
 */
import type { KObject } from '../wire/json.ts';
import { apiVersionOf, type ResourceType } from './registry.ts';
import { formatLabelSelector } from './selectors.ts';

export interface ColumnDefinition {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  format: string;
  description: string;
  priority: number;
}

/** A CRD printer column as the CRD declares it. */
export interface PrinterColumn {
  name: string;
  type: ColumnDefinition['type'];
  jsonPath: string;
  format?: string;
  description?: string;
  priority?: number;
}

type Cell = string | number | boolean | null;

interface Printer {
  columns: ColumnDefinition[];
  cells(o: KObject, now: Date): Cell[];
}

/** Whether the request asks for a Table (kubectl lists it first, with plain JSON as a fallback). */
export function wantsTable(accept: string | undefined): boolean {
  return (accept ?? '').split(',').some((type) => /;\s*as=Table\b/.test(type) && /;\s*g=meta\.k8s\.io\b/.test(type));
}

/** What a row carries of its object: the `includeObject` query parameter. */
export type IncludeObject = 'None' | 'Metadata' | 'Object';

/** The `includeObject` query parameter; Metadata when absent or unknown, as kube-apiserver defaults it. */
export function includeObjectOf(value: string | null): IncludeObject {
  return value === 'None' || value === 'Object' ? value : 'Metadata';
}

/** A list (or one object, for a get or a watch event) as a Table. */
export function toTable(
  rt: ResourceType,
  objects: KObject[],
  meta: { resourceVersion?: string; continue?: string },
  options: { noHeaders?: boolean; now?: Date; includeObject?: IncludeObject } = {},
): KObject {
  const printer = printerFor(rt);
  const now = options.now ?? new Date();
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: { resourceVersion: meta.resourceVersion ?? '', ...(meta.continue ? { continue: meta.continue } : {}) },
    ...(options.noHeaders ? {} : { columnDefinitions: printer.columns }),
    rows: objects.map((o) => ({
      cells: printer.cells(o, now),
      ...rowObject(rt, o, options.includeObject ?? 'Metadata'),
    })),
  };
}

function rowObject(rt: ResourceType, o: KObject, include: IncludeObject): { object?: KObject } {
  if (include === 'None') return {};
  // A whole object is typed, as a get answers it (a typed list's items are not).
  if (include === 'Object')
    return { object: { apiVersion: apiVersionOf(rt.group, rt.versions[0]!), kind: rt.kind, ...o } };
  return { object: { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata ?? {} } };
}

const column = (
  name: string,
  type: ColumnDefinition['type'],
  description: string,
  priority = 0,
  format = '',
): ColumnDefinition => ({ name, type, format, description, priority });
const NAME = column('Name', 'string', 'Name must be unique within a namespace.', 0, 'name');
const AGE = column(
  'Age',
  'string',
  'CreationTimestamp is a timestamp representing the server time when this object was created.',
);

/** kube's duration.HumanDuration: what every AGE column shows. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${hours / 24}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  const years = Math.floor(hours / 24 / 365);
  const days = Math.floor(hours / 24) % 365;
  return hours < 24 * 365 * 8 && days !== 0 ? `${years}y${days}d` : `${years}y`;
}

function age(o: KObject, now: Date): string {
  const created = Date.parse(String(o.metadata?.creationTimestamp ?? ''));
  return Number.isNaN(created) ? '<unknown>' : humanDuration(now.getTime() - created);
}

const list = (values: readonly string[], none = '<none>') => (values.length === 0 ? none : values.join(','));
const byKey = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);
/** labels.FormatLabels: `k=v` sorted by key. */
const selector = (labels: Record<string, string> | undefined) =>
  list(
    Object.entries(labels ?? {})
      .sort(byKey)
      .map(([k, v]) => `${k}=${v}`),
  );

/** The CONTAINERS and IMAGES cells of a workload's pod template. */
function templateCells(template: KObject | undefined): [string, string] {
  const containers = (template?.spec?.containers ?? []) as KObject[];
  return [list(containers.map((c) => String(c.name))), list(containers.map((c) => String(c.image)))];
}

const CONTAINERS = column('Containers', 'string', 'Names of each container in the template.', 1);
const IMAGES = column('Images', 'string', 'Images referenced by each container in the template.', 1);

function podStatus(pod: KObject): string {
  if (pod.metadata?.deletionTimestamp) return 'Terminating';
  let reason = String(pod.status?.reason ?? pod.status?.phase ?? 'Unknown');
  for (const status of (pod.status?.containerStatuses ?? []) as KObject[]) {
    const waiting = status.state?.waiting?.reason;
    const terminated = status.state?.terminated;
    if (waiting) reason = waiting;
    else if (terminated)
      reason =
        terminated.reason ?? (terminated.signal ? `Signal:${terminated.signal}` : `ExitCode:${terminated.exitCode}`);
  }
  return reason;
}

function servicePorts(service: KObject): string {
  return list(
    ((service.spec?.ports ?? []) as KObject[]).map(
      (p) => `${p.port}${p.nodePort ? `:${p.nodePort}` : ''}/${p.protocol ?? 'TCP'}`,
    ),
  );
}

function externalIp(service: KObject): string {
  const external = (service.spec?.externalIPs ?? []) as string[];
  if (service.spec?.type !== 'LoadBalancer') return list(external);
  const ingress = ((service.status?.loadBalancer?.ingress ?? []) as KObject[]).map((i) => String(i.ip ?? i.hostname));
  return ingress.length + external.length === 0 ? '<pending>' : [...ingress, ...external].join(',');
}

const BUILTIN: Record<string, Printer> = {
  '/pods': {
    columns: [
      NAME,
      column('Ready', 'string', 'The aggregate readiness state of this pod for accepting traffic.'),
      column('Status', 'string', 'The aggregate status of the containers in this pod.'),
      column('Restarts', 'string', 'The number of times the containers in this pod have been restarted.'),
      AGE,
      column('IP', 'string', 'IP address allocated to the pod.', 1),
      column('Node', 'string', 'Name of the Node this pod is assigned to.', 1),
      column('Nominated Node', 'string', 'Name of the Node this pod is nominated to.', 1),
      column('Readiness Gates', 'string', 'Pod readiness gates.', 1),
    ],
    cells: (pod, now) => {
      const statuses = (pod.status?.containerStatuses ?? []) as KObject[];
      const total = ((pod.spec?.containers ?? []) as KObject[]).length;
      const gates = ((pod.spec?.readinessGates ?? []) as KObject[]).map((g) => String(g.conditionType));
      const trueGates = gates.filter((type) =>
        ((pod.status?.conditions ?? []) as KObject[]).some((c) => c.type === type && c.status === 'True'),
      );
      return [
        pod.metadata.name,
        `${statuses.filter((s) => s.ready).length}/${total}`,
        podStatus(pod),
        String(statuses.reduce((sum, s) => sum + Number(s.restartCount ?? 0), 0)),
        age(pod, now),
        pod.status?.podIP ?? '<none>',
        pod.spec?.nodeName ?? '<none>',
        pod.status?.nominatedNodeName ?? '<none>',
        gates.length === 0 ? '<none>' : `${trueGates.length}/${gates.length}`,
      ];
    },
  },
  '/services': {
    columns: [
      NAME,
      column('Type', 'string', 'The type of the service.'),
      column('Cluster-IP', 'string', 'The cluster IP of the service.'),
      column('External-IP', 'string', 'The external IP of the service.'),
      column('Port(s)', 'string', 'The ports of the service.'),
      AGE,
      column('Selector', 'string', 'The selector of the service.', 1),
    ],
    cells: (s, now) => [
      s.metadata.name,
      s.spec?.type ?? 'ClusterIP',
      s.spec?.clusterIP || '<none>',
      externalIp(s),
      servicePorts(s),
      age(s, now),
      selector(s.spec?.selector),
    ],
  },
  'apps/deployments': {
    columns: [
      NAME,
      column('Ready', 'string', 'Number of the pod with ready state'),
      column(
        'Up-to-date',
        'integer',
        'Total number of non-terminated pods targeted by this deployment that have the desired template spec.',
      ),
      column(
        'Available',
        'integer',
        'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.',
      ),
      AGE,
      CONTAINERS,
      IMAGES,
      column('Selector', 'string', 'Label selector for pods.', 1),
    ],
    cells: (d, now) => [
      d.metadata.name,
      `${d.status?.readyReplicas ?? 0}/${d.spec?.replicas ?? 1}`,
      d.status?.updatedReplicas ?? 0,
      d.status?.availableReplicas ?? 0,
      age(d, now),
      ...templateCells(d.spec?.template),
      formatLabelSelector(d.spec?.selector) || '<none>',
    ],
  },
  'apps/replicasets': {
    columns: [
      NAME,
      column('Desired', 'integer', 'Number of desired pods.'),
      column('Current', 'integer', 'Number of actual pods.'),
      column('Ready', 'integer', 'Number of pods ready.'),
      AGE,
      CONTAINERS,
      IMAGES,
      column('Selector', 'string', 'Label selector for pods.', 1),
    ],
    cells: (r, now) => [
      r.metadata.name,
      r.spec?.replicas ?? 1,
      r.status?.replicas ?? 0,
      r.status?.readyReplicas ?? 0,
      age(r, now),
      ...templateCells(r.spec?.template),
      formatLabelSelector(r.spec?.selector) || '<none>',
    ],
  },
  '/namespaces': {
    columns: [NAME, column('Status', 'string', 'The status of the namespace'), AGE],
    cells: (n, now) => [n.metadata.name, n.status?.phase ?? 'Active', age(n, now)],
  },
  '/serviceaccounts': {
    columns: [
      NAME,
      column(
        'Secrets',
        'string',
        'Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.',
      ),
      AGE,
    ],
    cells: (a, now) => [a.metadata.name, String(((a.secrets ?? []) as unknown[]).length), age(a, now)],
  },
  '/configmaps': {
    columns: [NAME, column('Data', 'integer', 'Number of data entries.'), AGE],
    cells: (c, now) => [
      c.metadata.name,
      Object.keys(c.data ?? {}).length + Object.keys(c.binaryData ?? {}).length,
      age(c, now),
    ],
  },
  '/secrets': {
    columns: [
      NAME,
      column('Type', 'string', 'The type of the secret'),
      column('Data', 'integer', 'Number of data entries.'),
      AGE,
    ],
    cells: (s, now) => [s.metadata.name, s.type ?? 'Opaque', Object.keys(s.data ?? {}).length, age(s, now)],
  },
  '/events': {
    columns: [
      column('Last Seen', 'string', 'Time since the last occurrence.'),
      column('Type', 'string', 'Type of this event (Normal, Warning).'),
      column('Reason', 'string', 'Why the action was taken.'),
      column('Object', 'string', 'The object this Event is about.'),
      column('Message', 'string', 'A human-readable description of the status of this operation.'),
    ],
    cells: (e, now) => [
      humanDuration(now.getTime() - Date.parse(String(e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp))),
      e.type ?? '',
      e.reason ?? '',
      `${String(e.involvedObject?.kind ?? '').toLowerCase()}/${e.involvedObject?.name ?? ''}`,
      e.message ?? '',
    ],
  },
  'coordination.k8s.io/leases': {
    columns: [NAME, column('Holder', 'string', 'The holder of the lease.'), AGE],
    cells: (l, now) => [l.metadata.name, l.spec?.holderIdentity ?? '', age(l, now)],
  },
  'policy/poddisruptionbudgets': {
    columns: [
      NAME,
      column('Min Available', 'string', 'The minimum number of pods that must be available.'),
      column('Max Unavailable', 'string', 'The maximum number of pods that may be unavailable.'),
      column('Allowed Disruptions', 'integer', 'Calculated number of pods that may be disrupted at this time.'),
      AGE,
    ],
    cells: (p, now) => [
      p.metadata.name,
      p.spec?.minAvailable === undefined ? 'N/A' : String(p.spec.minAvailable),
      p.spec?.maxUnavailable === undefined ? 'N/A' : String(p.spec.maxUnavailable),
      p.status?.disruptionsAllowed ?? 0,
      age(p, now),
    ],
  },
  'rbac.authorization.k8s.io/rolebindings': bindingPrinter(),
  'rbac.authorization.k8s.io/clusterrolebindings': bindingPrinter(),
  'rbac.authorization.k8s.io/roles': createdAtPrinter(),
  'rbac.authorization.k8s.io/clusterroles': createdAtPrinter(),
  'apiextensions.k8s.io/customresourcedefinitions': createdAtPrinter(),
};

function bindingPrinter(): Printer {
  return {
    columns: [NAME, column('Role', 'string', 'Role referenced by this binding.'), AGE],
    cells: (b, now) => [b.metadata.name, `${b.roleRef?.kind ?? ''}/${b.roleRef?.name ?? ''}`, age(b, now)],
  };
}

function createdAtPrinter(): Printer {
  return {
    columns: [
      NAME,
      column(
        'Created At',
        'date',
        'CreationTimestamp is a timestamp representing the server time when this object was created.',
      ),
    ],
    cells: (o) => [o.metadata.name, String(o.metadata.creationTimestamp ?? '')],
  };
}

const DEFAULT: Printer = { columns: [NAME, AGE], cells: (o, now) => [o.metadata.name, age(o, now)] };

function printerFor(rt: ResourceType): Printer {
  if (rt.printerColumns !== undefined) return crdPrinter(rt.printerColumns);
  return BUILTIN[`${rt.group}/${rt.plural}`] ?? DEFAULT;
}

/** apiextensions' table convertor: Name, then each printer column; a value it cannot find is null. */
function crdPrinter(printerColumns: readonly PrinterColumn[]): Printer {
  if (printerColumns.length === 0) return DEFAULT;
  return {
    columns: [
      NAME,
      ...printerColumns.map((c) =>
        column(
          c.name,
          c.type,
          c.description ?? `Custom resource definition column (in JSONPath format): ${c.jsonPath}`,
          c.priority ?? 0,
          c.format ?? '',
        ),
      ),
    ],
    cells: (o, now) => [o.metadata.name, ...printerColumns.map((c) => crdCell(c.type, jsonPath(o, c.jsonPath), now))],
  };
}

function crdCell(type: ColumnDefinition['type'], value: unknown, now: Date): Cell {
  if (value === undefined || value === null) return null;
  switch (type) {
    case 'string':
      return typeof value === 'object' ? JSON.stringify(value) : String(value);
    case 'integer':
      return typeof value === 'number' ? Math.trunc(value) : null;
    case 'number':
      return typeof value === 'number' ? value : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'date': {
      const at = typeof value === 'string' ? Date.parse(value) : Number.NaN;
      return Number.isNaN(at) ? '<invalid>' : humanDuration(now.getTime() - at);
    }
  }
}

/**
 * The first value a printer column's simple JSONPath finds: `.a.b`, `.a[0]`, `.a[*].b` and
 * `.a[?(@.key=="value")].b` (what CRD printer columns use); undefined when there is none.
 */
export function jsonPath(root: unknown, path: string): unknown {
  const steps = path.match(/\.[^.[\]]+|\[[^\]]*\]/g) ?? [];
  let values: unknown[] = [root];
  for (const step of steps) {
    values = values.flatMap((value): unknown[] => {
      if (step.startsWith('.')) return isRecord(value) && step.slice(1) in value ? [value[step.slice(1)]] : [];
      if (!Array.isArray(value)) return [];
      const inner = step.slice(1, -1);
      if (inner === '*') return value;
      const filter = /^\?\(@\.([\w.-]+)\s*==\s*["']([^"']*)["']\)$/.exec(inner);
      if (filter)
        return value.filter((item) => isRecord(item) && String(jsonPath(item, `.${filter[1]}`)) === filter[2]);
      const index = Number(inner);
      return Number.isInteger(index) && value.at(index) !== undefined ? [value.at(index)] : [];
    });
  }
  return values[0];
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
