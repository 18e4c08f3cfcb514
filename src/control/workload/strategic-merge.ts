// A strategic merge patch of a pod template, as kube-apiserver applies one (computed here because
// the canary Deployment is made from the stable template and the patch in one pure step): maps
// merge, a null deletes its key, lists of the pod spec with a merge key merge item by item
// (containers by name, ports by containerPort, …; an item `{$patch: delete, <key>: …}` removes
// one), every other list is replaced, and `$patch: replace` replaces a map whole. An item whose key
// the list does not hold is added, and a delete of one it does not hold does nothing: the merge
// reports both for the lists where that is most often a typo (added-items.ts judges them).

/** Merge keys of the lists of a PodTemplateSpec, by path (`[]` = any item). */
const MERGE_KEYS: Readonly<Record<string, string>> = {
  'spec.containers': 'name',
  'spec.initContainers': 'name',
  'spec.ephemeralContainers': 'name',
  'spec.volumes': 'name',
  'spec.imagePullSecrets': 'name',
  'spec.hostAliases': 'ip',
  'spec.resourceClaims': 'name',
  'spec.containers[].ports': 'containerPort',
  'spec.containers[].env': 'name',
  'spec.containers[].volumeMounts': 'mountPath',
  'spec.containers[].volumeDevices': 'devicePath',
  'spec.initContainers[].ports': 'containerPort',
  'spec.initContainers[].env': 'name',
  'spec.initContainers[].volumeMounts': 'mountPath',
};

/** The lists whose unmatched items the merge reports, by the name WorkloadSpec.adds gives them. */
const REPORTED_LISTS: Readonly<Record<string, UnmatchedList>> = {
  'spec.containers': 'containers',
  'spec.initContainers': 'initContainers',
  'spec.volumes': 'volumes',
  'spec.containers[].ports': 'containerPorts',
  'spec.initContainers[].ports': 'containerPorts',
};

/** The lists of a pod template where a patch's item that matches nothing is reported. */
export type UnmatchedList = 'containers' | 'initContainers' | 'volumes' | 'containerPorts';

/** An item of a patch's list that matched no item of the template's list by its merge key. */
export interface UnmatchedItem {
  readonly list: UnmatchedList;
  /** Where in the patch, with the merge keys: `spec.containers[name=wbe]`, `spec.containers[name=web].ports[containerPort=81]`. */
  readonly at: string;
  /** The item's merge key value (a name, or a containerPort). */
  readonly key: string | number;
  /** The keys the template's list held. */
  readonly existing: readonly (string | number)[];
  /** `added`: the merge adds the item; `deletedNothing`: a `$patch: delete` of an item that is not there. */
  readonly effect: 'added' | 'deletedNothing';
}

export class PatchProblem extends Error {}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isMap(value: unknown): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Where the merge is: the path that finds merge keys (`spec.containers[]`), the one a message shows, what it found. */
interface MergePath {
  readonly schema: string;
  readonly shown: string;
  readonly unmatched: UnmatchedItem[];
}

const child = (at: MergePath, key: string): MergePath => ({
  ...at,
  schema: at.schema === '' ? key : `${at.schema}.${key}`,
  shown: at.shown === '' ? key : `${at.shown}.${key}`,
});

/** `patch` applied to `template`; a PatchProblem names the path where it cannot apply. */
export function patchTemplate<T>(template: T, patch: unknown): T {
  return mergeTemplate(template, patch).template;
}

/** `patch` applied to `template`, with the items of the reported lists that matched nothing. */
export function mergeTemplate<T>(template: T, patch: unknown): { template: T; unmatched: UnmatchedItem[] } {
  if (!isMap(patch))
    throw new PatchProblem(`must be a map (a strategic merge patch of the pod template), got ${JSON.stringify(patch)}`);
  const unmatched: UnmatchedItem[] = [];
  const merged = mergeMap(structuredClone(template ?? {}) as Record<string, Json>, patch, {
    schema: '',
    shown: '',
    unmatched,
  });
  return { template: merged as T, unmatched };
}

function mergeMap(target: Record<string, Json>, patch: Record<string, Json>, at: MergePath): Record<string, Json> {
  if (patch.$patch === 'replace') {
    const { $patch: _directive, ...rest } = patch;
    return rest;
  }
  const result: Record<string, Json> = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) continue; // $setElementOrder, $retainKeys: ordering hints only
    if (value === null) delete result[key];
    else result[key] = mergeValue(result[key], value, child(at, key));
  }
  return result;
}

function mergeValue(target: Json | undefined, patch: Json, at: MergePath): Json {
  if (isMap(patch)) {
    if (target !== undefined && !isMap(target))
      throw new PatchProblem(`${at.schema}: a map cannot patch ${JSON.stringify(target)}`);
    return mergeMap(target ?? {}, patch, at);
  }
  const mergeKey = MERGE_KEYS[at.schema];
  if (!Array.isArray(patch) || mergeKey === undefined) return patch;
  if (target !== undefined && !Array.isArray(target))
    throw new PatchProblem(`${at.schema}: a list cannot patch ${JSON.stringify(target)}`);
  return mergeList(target ?? [], patch, mergeKey, at);
}

function mergeList(target: Json[], patch: Json[], mergeKey: string, at: MergePath): Json[] {
  const result = [...target];
  const reported = REPORTED_LISTS[at.schema];
  const existing = target.flatMap((item) => (isMap(item) && isKey(item[mergeKey]) ? [item[mergeKey]] : []));
  for (const item of patch) {
    if (!isMap(item) || item[mergeKey] === undefined)
      throw new PatchProblem(`${at.schema}: every item needs its ${mergeKey}`);
    const key = item[mergeKey];
    const index = result.findIndex((other) => isMap(other) && other[mergeKey] === key);
    const itemAt = { ...at, schema: `${at.schema}[]`, shown: `${at.shown}[${mergeKey}=${String(key)}]` };
    if (index < 0 && reported !== undefined && isKey(key)) {
      const effect = item.$patch === 'delete' ? 'deletedNothing' : 'added';
      at.unmatched.push({ list: reported, at: itemAt.shown, key, existing, effect });
    }
    if (item.$patch === 'delete') {
      if (index >= 0) result.splice(index, 1);
    } else if (index >= 0) {
      result[index] = mergeMap(result[index] as Record<string, Json>, item, itemAt);
    } else {
      const { $patch: _directive, ...added } = item;
      result.push(added);
    }
  }
  return result;
}

const isKey = (value: Json | undefined): value is string | number =>
  typeof value === 'string' || typeof value === 'number';
