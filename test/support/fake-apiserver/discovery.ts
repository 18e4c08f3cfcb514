/**
 * Discovery and OpenAPI documents for kubectl (and client-node's KubernetesObjectApi):
 * /version, /api, /apis, /api/v1, /apis/<g>, /apis/<g>/<v>, and the minimal /openapi/v3 that
 * lets plain `kubectl apply` run with server-side field validation. Plain (non-aggregated)
 * discovery only; kubectl falls back to it.
 */
import type { KObject } from './json.ts';
import { apiVersionOf, type Registry, type ResourceType, VERBS } from './registry.ts';

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

/**
 * /openapi/v2 as kubectl reads it: protobuf only (client-go asks for
 * `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`), when it patches an object that
 * exists and the v3 document names no strategic-merge schema. A Swagger 2.0 document with no
 * definitions: kubectl then builds the patch from its compiled-in types, as it does for any kind a
 * server does not describe. Any other Accept gets the same document as JSON.
 */
export const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';

export function openApiV2(accept: string | undefined): { contentType: string; body: Buffer } {
  const info = { title: 'fake-apiserver', version: SERVER_VERSION.gitVersion };
  if ((accept ?? '').includes('protobuf')) {
    // gnostic's openapi.v2.Document: swagger = 1, info = 2 (Info: title = 1, version = 2).
    const infoBytes = Buffer.concat([protoString(1, info.title), protoString(2, info.version)]);
    return { contentType: OPENAPI_V2_PROTOBUF, body: Buffer.concat([protoString(1, '2.0'), protoBytes(2, infoBytes)]) };
  }
  return { contentType: 'application/json', body: Buffer.from(JSON.stringify({ swagger: '2.0', info, paths: {}, definitions: {} })) };
}

/** A length-delimited protobuf field (wire type 2); lengths here stay below 128 bytes. */
function protoBytes(field: number, bytes: Buffer): Buffer {
  if (bytes.length > 127) throw new Error('protoBytes: only single-byte lengths are encoded');
  return Buffer.concat([Buffer.from([(field << 3) | 2, bytes.length]), bytes]);
}

function protoString(field: number, text: string): Buffer {
  return protoBytes(field, Buffer.from(text, 'utf8'));
}

/** Answer a non-resource GET, or `undefined` if the path is not a discovery path. */
export function discovery(registry: Registry, path: string, host: string): KObject | undefined {
  const p = path.replace(/\/+$/, '') || '/';
  if (p === '/version') return SERVER_VERSION;
  if (p === '/api')
    return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: host }] };
  if (p === '/apis') return { kind: 'APIGroupList', apiVersion: 'v1', groups: [...registry.groups()].filter(([g]) => g !== '').map(([g, vs]) => groupDoc(g, vs)) };
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
  if (p === '/openapi/v3') return openApiRoot(registry);
  m = p.match(/^\/openapi\/v3\/(api\/v1|apis\/[^/]+\/[^/]+)$/);
  if (m) return openApiGroupVersion(registry, m[1]!);
  if (p === '/healthz' || p === '/livez' || p === '/readyz') return undefined;
  return undefined;
}

function groupDoc(group: string, versions: string[]): KObject {
  const vs = versions.map((v) => ({ groupVersion: `${group}/${v}`, version: v }));
  return { name: group, versions: vs, preferredVersion: vs[0] };
}

function typesIn(registry: Registry, group: string, version: string): ResourceType[] {
  return registry.all().filter((t) => t.group === group && t.versions.includes(version));
}

function resourceList(registry: Registry, group: string, version: string): KObject {
  const resources: KObject[] = [];
  for (const t of typesIn(registry, group, version)) {
    const r: KObject = { name: t.plural, singularName: t.singular, namespaced: t.namespaced, kind: t.kind, verbs: VERBS };
    if (t.shortNames.length) r.shortNames = t.shortNames;
    if (t.categories.length) r.categories = t.categories;
    resources.push(r);
    if (t.statusSubresource)
      resources.push({ name: `${t.plural}/status`, singularName: '', namespaced: t.namespaced, kind: t.kind, verbs: ['get', 'patch', 'update'] });
    if (t.scaleSubresource)
      resources.push({ name: `${t.plural}/scale`, singularName: '', namespaced: t.namespaced, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'] });
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: apiVersionOf(group, version), resources };
}

function openApiRoot(registry: Registry): KObject {
  const paths: KObject = {};
  const hash = String(registry.generation);
  for (const [g, vs] of registry.groups()) {
    for (const v of vs) {
      const key = g === '' ? `api/${v}` : `apis/${g}/${v}`;
      paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${hash}` };
    }
  }
  return { paths };
}

/**
 * One PATCH operation per kind, tagged with its GVK and a `fieldValidation` parameter: enough for
 * kubectl to find the kind and to choose server-side field validation. No schemas.
 */
function openApiGroupVersion(registry: Registry, gvPath: string): KObject | undefined {
  const [group, version] = gvPath.startsWith('api/') ? ['', gvPath.slice(4)] : gvPath.slice(5).split('/') as [string, string];
  const types = typesIn(registry, group, version);
  if (types.length === 0) return undefined;
  const paths: KObject = {};
  const params = [
    { name: 'fieldValidation', in: 'query', schema: { type: 'string', uniqueItems: true } },
    { name: 'dryRun', in: 'query', schema: { type: 'string', uniqueItems: true } },
    { name: 'fieldManager', in: 'query', schema: { type: 'string', uniqueItems: true } },
  ];
  for (const t of types) {
    const prefix = group === '' ? `/api/${version}` : `/apis/${group}/${version}`;
    const item = t.namespaced ? `${prefix}/namespaces/{namespace}/${t.plural}/{name}` : `${prefix}/${t.plural}/{name}`;
    const coll = t.namespaced ? `${prefix}/namespaces/{namespace}/${t.plural}` : `${prefix}/${t.plural}`;
    const gvk = { group, version, kind: t.kind };
    paths[item] = {
      patch: { 'x-kubernetes-group-version-kind': gvk, 'x-kubernetes-action': 'patch', parameters: params, responses: {} },
      put: { 'x-kubernetes-group-version-kind': gvk, 'x-kubernetes-action': 'put', parameters: params, responses: {} },
    };
    paths[coll] = { post: { 'x-kubernetes-group-version-kind': gvk, 'x-kubernetes-action': 'post', parameters: params, responses: {} } };
  }
  return { openapi: '3.0.0', info: { title: 'fake-apiserver', version: SERVER_VERSION.gitVersion }, paths, components: { schemas: {} } };
}
