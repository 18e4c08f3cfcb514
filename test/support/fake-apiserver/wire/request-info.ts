/**
 * Turns a request path into Kubernetes' RequestInfo: API group/version, resource, subresource,
 * namespace, name, and the RBAC verb. Non-resource paths (discovery, OpenAPI, /version) come back
 * with `resource: undefined`.
 */

export type RbacVerb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

export interface RequestInfo {
  path: string;
  /** Set for resource requests only. */
  resource?: string;
  group: string;
  version: string;
  subresource: string;
  namespace: string;
  name: string;
  verb: RbacVerb | 'unknown';
  /** True for `/api/v1/watch/...` legacy watch paths (the verb is then `watch`). */
  legacyWatch: boolean;
}

function isTruthy(v: string | null): boolean {
  return v === 'true' || v === '1';
}

export function parseRequestInfo(method: string, url: URL): RequestInfo {
  const path = url.pathname;
  const parts = path
    .split('/')
    .filter((p) => p !== '')
    .map(decodeURIComponent);
  const info: RequestInfo = {
    path,
    group: '',
    version: '',
    subresource: '',
    namespace: '',
    name: '',
    verb: 'unknown',
    legacyWatch: false,
  };
  let rest: string[];
  if (parts[0] === 'api' && parts.length >= 3) {
    info.version = parts[1]!;
    rest = parts.slice(2);
  } else if (parts[0] === 'apis' && parts.length >= 4) {
    info.group = parts[1]!;
    info.version = parts[2]!;
    rest = parts.slice(3);
  } else {
    info.verb = method === 'GET' || method === 'HEAD' ? 'get' : 'unknown';
    return info;
  }
  if (rest[0] === 'watch') {
    info.legacyWatch = true;
    rest = rest.slice(1);
  }
  if (
    rest[0] === 'namespaces' &&
    rest.length >= 3 &&
    !(rest.length === 3 && (rest[2] === 'status' || rest[2] === 'finalize'))
  ) {
    info.namespace = rest[1]!;
    rest = rest.slice(2);
  } else if (rest[0] === 'namespaces' && rest.length >= 2) {
    // The namespace object itself (and its status/finalize subresources).
    info.namespace = '';
  }
  info.resource = rest[0];
  info.name = rest[1] ?? '';
  info.subresource = rest.slice(2).join('/');
  if (rest.length > 3 || rest.length === 0) info.resource = rest.length === 0 ? undefined : info.resource;

  const watchParam = isTruthy(url.searchParams.get('watch'));
  switch (method) {
    case 'GET':
    case 'HEAD':
      if (info.legacyWatch || watchParam) info.verb = 'watch';
      else info.verb = info.name ? 'get' : 'list';
      break;
    case 'POST':
      info.verb = 'create';
      break;
    case 'PUT':
      info.verb = 'update';
      break;
    case 'PATCH':
      info.verb = 'patch';
      break;
    case 'DELETE':
      info.verb = info.name ? 'delete' : 'deletecollection';
      break;
  }
  return info;
}
