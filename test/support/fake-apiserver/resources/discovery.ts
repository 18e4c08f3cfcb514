/**
 * Discovery for kubectl (and client-node's KubernetesObjectApi): /version, /api, /apis, /api/v1,
 * /apis/<g>, /apis/<g>/<v> (openapi.ts serves /openapi). Plain (non-aggregated) discovery only;
 * kubectl falls back to it.
 */
import type { KObject } from '../wire/json.ts';
import { apiVersionOf, type Registry, typesIn, VERBS } from './registry.ts';

export const SERVER_VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0-fake',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2025-01-01T00:00:00Z',
  goVersion: 'go1.23.0',
  compiler: 'gc',
  platform: 'linux/amd64',
};

/** Answer a non-resource GET, or `undefined` if the path is not a discovery path. */
export function discovery(registry: Registry, path: string, host: string): KObject | undefined {
  const p = path.replace(/\/+$/, '') || '/';
  if (p === '/version') return SERVER_VERSION;
  if (p === '/api')
    return {
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: host }],
    };
  if (p === '/apis')
    return {
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [...registry.groups()].filter(([g]) => g !== '').map(([g, vs]) => groupDoc(g, vs)),
    };
  if (p === '/api/v1') return resourceList(registry, '', 'v1');
  let m = p.match(/^\/apis\/([^/]+)$/);
  if (m) {
    const vs = registry.groups().get(m[1]!);
    return vs ? { kind: 'APIGroup', apiVersion: 'v1', ...groupDoc(m[1]!, vs) } : undefined;
  }
  m = p.match(/^\/apis\/([^/]+)\/([^/]+)$/);
  if (m) {
    const vs = registry.groups().get(m[1]!);
    return vs?.includes(m[2]!) ? resourceList(registry, m[1]!, m[2]!) : undefined;
  }
  if (p === '/healthz' || p === '/livez' || p === '/readyz') return undefined;
  return undefined;
}

function groupDoc(group: string, versions: string[]): KObject {
  const vs = versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
  return { name: group, versions: vs, preferredVersion: vs[0] };
}

function resourceList(registry: Registry, group: string, version: string): KObject {
  const resources: KObject[] = [];
  for (const t of typesIn(registry, group, version)) {
    const r: KObject = {
      name: t.plural,
      singularName: t.singular,
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: VERBS,
    };
    if (t.shortNames.length) r.shortNames = t.shortNames;
    if (t.categories.length) r.categories = t.categories;
    resources.push(r);
    if (t.statusSubresource)
      resources.push({
        name: `${t.plural}/status`,
        singularName: '',
        namespaced: t.namespaced,
        kind: t.kind,
        verbs: ['get', 'patch', 'update'],
      });
    if (t.scaleSubresource)
      resources.push({
        name: `${t.plural}/scale`,
        singularName: '',
        namespaced: t.namespaced,
        group: 'autoscaling',
        version: 'v1',
        kind: 'Scale',
        verbs: ['get', 'patch', 'update'],
      });
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: apiVersionOf(group, version), resources };
}
