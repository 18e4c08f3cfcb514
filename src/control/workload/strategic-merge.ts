// A strategic merge patch of a pod template, as kube-apiserver applies one (computed here because
// the canary Deployment is made from the stable template and the patch in one pure step): maps
// merge, a null deletes its key, lists of the pod spec with a merge key merge item by item
// (containers by name, ports by containerPort, …; an item `{$patch: delete, <key>: …}` removes
// one), every other list is replaced, and `$patch: replace` replaces a map whole.

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

export class PatchProblem extends Error {}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function isMap(value: unknown): value is Record<string, Json> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `patch` applied to `template`; a PatchProblem names the path where it cannot apply. */
export function patchTemplate<T>(template: T, patch: unknown): T {
  if (!isMap(patch))
    throw new PatchProblem(`must be a map (a strategic merge patch of the pod template), got ${JSON.stringify(patch)}`);
  return mergeMap(structuredClone(template ?? {}) as Record<string, Json>, patch, '') as T;
}

function mergeMap(target: Record<string, Json>, patch: Record<string, Json>, path: string): Record<string, Json> {
  if (patch.$patch === 'replace') {
    const { $patch: _directive, ...rest } = patch;
    return rest;
  }
  const result: Record<string, Json> = { ...target };
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith('$')) continue; // $setElementOrder, $retainKeys: ordering hints only
    const at = path === '' ? key : `${path}.${key}`;
    if (value === null) delete result[key];
    else result[key] = mergeValue(result[key], value, at);
  }
  return result;
}

function mergeValue(target: Json | undefined, patch: Json, path: string): Json {
  if (isMap(patch)) {
    if (target !== undefined && !isMap(target))
      throw new PatchProblem(`${path}: a map cannot patch ${JSON.stringify(target)}`);
    return mergeMap(target ?? {}, patch, path);
  }
  const mergeKey = MERGE_KEYS[path];
  if (!Array.isArray(patch) || mergeKey === undefined) return patch;
  if (target !== undefined && !Array.isArray(target))
    throw new PatchProblem(`${path}: a list cannot patch ${JSON.stringify(target)}`);
  return mergeList(target ?? [], patch, mergeKey, path);
}

function mergeList(target: Json[], patch: Json[], mergeKey: string, path: string): Json[] {
  const result = [...target];
  for (const item of patch) {
    if (!isMap(item) || item[mergeKey] === undefined)
      throw new PatchProblem(`${path}: every item needs its ${mergeKey}`);
    const index = result.findIndex((existing) => isMap(existing) && existing[mergeKey] === item[mergeKey]);
    if (item.$patch === 'delete') {
      if (index >= 0) result.splice(index, 1);
    } else if (index >= 0) {
      result[index] = mergeMap(result[index] as Record<string, Json>, item, `${path}[]`);
    } else {
      const { $patch: _directive, ...added } = item;
      result.push(added);
    }
  }
  return result;
}
