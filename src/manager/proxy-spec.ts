// spec.proxy of a CanaryRelease: read and checked before anything is rendered from it, so a value the
// apiserver or the scheduler would refuse (a Deployment that never gets a pod) is said on the
// release, naming the field, instead of failing somewhere nobody looks. The CRD schema checks the
// types at admission; this also checks what a schema cannot (quantities, label syntax, requests
// against limits, the toleration rules).

import { isMapping, readMapping } from '../config/fields.ts';
import { DNS_SUBDOMAIN, labelProblems } from '../api/labels.ts';
import type { Labels } from '../api/names.ts';
import { replicasProblem } from '../api/validate.ts';
import type { ProxyResources, ProxySpec, Toleration } from '../api/proxy-types.ts';

export const DEFAULT_PROXY_REPLICAS = 2;

export type ProxySpecResult =
  | { readonly ok: true; readonly spec: ProxySpec }
  | { readonly ok: false; readonly problems: readonly string[] };

const FIELDS = ['replicas', 'resources', 'nodeSelector', 'tolerations', 'priorityClassName'] as const;
const TOLERATION_FIELDS = ['key', 'operator', 'value', 'effect', 'tolerationSeconds'] as const;
const EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;
/** resource.Quantity: a decimal number, then a binary (Ki…Ei), decimal (n u m k M G T P E) or exponent suffix. */
const QUANTITY = /^(\d+(?:\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][-+]?\d+)?$/;
const SUFFIXES: Readonly<Record<string, number>> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
  Ei: 2 ** 60,
  n: 1e-9,
  u: 1e-6,
  m: 1e-3,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  P: 1e15,
  E: 1e18,
};
const RESOURCE_NAME =
  /^(cpu|memory|ephemeral-storage|hugepages-.+|[a-z0-9]([-a-z0-9.]*[a-z0-9])?\/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)$/;

/** The value of a quantity (`500m` → 0.5, `1Gi` → 1073741824), or undefined when it is not one. */
export function parseQuantity(value: unknown): number | undefined {
  const text = typeof value === 'number' ? String(value) : value;
  if (typeof text !== 'string') return undefined;
  const match = QUANTITY.exec(text);
  if (match === null) return undefined;
  const [, number = '', suffix = ''] = match;
  const scale =
    suffix === '' ? 1 : suffix[0] === 'e' || suffix[0] === 'E' ? 10 ** Number(suffix.slice(1)) : SUFFIXES[suffix]!;
  return Number(number) * scale;
}

/** A proxy without spec.proxy (and every Gateway's): two replicas, deploy/'s resources, anywhere. */
export const DEFAULT_PROXY_SPEC: ProxySpec = {
  replicas: DEFAULT_PROXY_REPLICAS,
  resources: undefined,
  nodeSelector: undefined,
  tolerations: undefined,
  priorityClassName: undefined,
};

export function readProxySpec(raw: unknown): ProxySpecResult {
  if (raw === undefined || raw === null) return { ok: true, spec: DEFAULT_PROXY_SPEC };
  if (!isMapping(raw)) return { ok: false, problems: [`spec.proxy: must be an object, got ${describe(raw)}`] };
  const problems: string[] = [];
  readMapping(raw, 'spec.proxy', FIELDS, problems);
  const replicas = raw.replicas ?? DEFAULT_PROXY_REPLICAS;
  const badReplicas = replicasProblem(
    replicas,
    'spec.proxy.replicas',
    1,
    ' (every proxy pod serves; the Services need one)',
  );
  if (badReplicas !== undefined) problems.push(badReplicas);
  const resources = raw.resources === undefined ? undefined : readResources(raw.resources, problems);
  const nodeSelector = raw.nodeSelector === undefined ? undefined : readNodeSelector(raw.nodeSelector, problems);
  const tolerations = raw.tolerations === undefined ? undefined : readTolerations(raw.tolerations, problems);
  const priorityClassName = raw.priorityClassName;
  if (
    priorityClassName !== undefined &&
    (typeof priorityClassName !== 'string' || priorityClassName.length > 253 || !DNS_SUBDOMAIN.test(priorityClassName))
  ) {
    problems.push(
      `spec.proxy.priorityClassName: must be the name of a PriorityClass (lower-case letters, digits, '-' and '.'), got ${describe(priorityClassName)}`,
    );
  }
  if (problems.length > 0) return { ok: false, problems };
  return {
    ok: true,
    spec: {
      replicas: replicas as number,
      resources,
      nodeSelector,
      tolerations,
      priorityClassName: priorityClassName as string | undefined,
    },
  };
}

function readResources(raw: unknown, problems: string[]): ProxyResources | undefined {
  if (!isMapping(raw)) {
    problems.push(`spec.proxy.resources: must be an object with requests and limits, got ${describe(raw)}`);
    return undefined;
  }
  readMapping(raw, 'spec.proxy.resources', ['requests', 'limits'], problems);
  const read = (which: 'requests' | 'limits'): Record<string, string> | undefined => {
    const list = raw[which];
    if (list === undefined) return undefined;
    if (!isMapping(list)) {
      problems.push(`spec.proxy.resources.${which}: must be a map of resource name to quantity, got ${describe(list)}`);
      return undefined;
    }
    const quantities: Record<string, string> = {};
    for (const [name, value] of Object.entries(list)) {
      const field = `spec.proxy.resources.${which}.${name}`;
      if (!RESOURCE_NAME.test(name))
        problems.push(
          `${field}: not a resource name (cpu, memory, ephemeral-storage, hugepages-<size> or domain/name)`,
        );
      else if (parseQuantity(value) === undefined)
        problems.push(`${field}: must be a quantity such as 500m, 2, 128Mi or 1Gi, got ${describe(value)}`);
      else quantities[name] = String(value);
    }
    return quantities;
  };
  const requests = read('requests');
  const limits = read('limits');
  for (const [name, request] of Object.entries(requests ?? {})) {
    const limit = limits?.[name];
    if (limit !== undefined && parseQuantity(request)! > parseQuantity(limit)!) {
      problems.push(
        `spec.proxy.resources.requests.${name}: must be less than or equal to the limit ${limit}, got ${request}`,
      );
    }
  }
  return { ...(requests === undefined ? {} : { requests }), ...(limits === undefined ? {} : { limits }) };
}

function readNodeSelector(raw: unknown, problems: string[]): Labels | undefined {
  if (!isMapping(raw) || Object.values(raw).some((value) => typeof value !== 'string')) {
    problems.push(`spec.proxy.nodeSelector: must be a map of node label to value (strings), got ${describe(raw)}`);
    return undefined;
  }
  const labels = raw as Labels;
  problems.push(...labelProblems(labels).map((problem) => `spec.proxy.nodeSelector: ${problem}`));
  return labels;
}

function readTolerations(raw: unknown, problems: string[]): Toleration[] | undefined {
  if (!Array.isArray(raw)) {
    problems.push(`spec.proxy.tolerations: must be a list, got ${describe(raw)}`);
    return undefined;
  }
  return raw.map((item: unknown, index) => {
    const field = `spec.proxy.tolerations[${index}]`;
    if (!isMapping(item)) {
      problems.push(
        `${field}: must be an object {key, operator, value, effect, tolerationSeconds}, got ${describe(item)}`,
      );
      return {};
    }
    readMapping(item, field, TOLERATION_FIELDS, problems);
    const { key = '', operator = 'Equal', value = '', effect = '', tolerationSeconds } = item;
    if (operator !== 'Equal' && operator !== 'Exists')
      problems.push(`${field}.operator: must be Exists or Equal, got ${describe(operator)}`);
    if (typeof key !== 'string' || (key !== '' && labelProblems({ [key]: '' }).length > 0))
      problems.push(`${field}.key: must be a label key, got ${describe(key)}`);
    else if (key === '' && operator !== 'Exists')
      problems.push(`${field}.operator: must be Exists when key is empty (a toleration of every taint)`);
    if (typeof value !== 'string') problems.push(`${field}.value: must be a string, got ${describe(value)}`);
    else if (operator === 'Exists' && value !== '')
      problems.push(`${field}.value: must be empty when operator is Exists, got ${describe(value)}`);
    else if (labelProblems({ key: value }).length > 0)
      problems.push(`${field}.value: must be a label value, got ${describe(value)}`);
    if (effect !== '' && !(EFFECTS as readonly unknown[]).includes(effect))
      problems.push(
        `${field}.effect: must be one of ${EFFECTS.join(', ')} (or empty for all), got ${describe(effect)}`,
      );
    if (tolerationSeconds !== undefined) {
      if (typeof tolerationSeconds !== 'number' || !Number.isInteger(tolerationSeconds))
        problems.push(`${field}.tolerationSeconds: must be an integer, got ${describe(tolerationSeconds)}`);
      else if (effect !== 'NoExecute')
        problems.push(`${field}.tolerationSeconds: only applies with effect NoExecute, got effect ${describe(effect)}`);
    }
    return item as Toleration;
  });
}

function describe(value: unknown): string {
  return value === undefined ? 'nothing' : JSON.stringify(value);
}
