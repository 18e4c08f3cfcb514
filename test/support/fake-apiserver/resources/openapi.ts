/**
 * The OpenAPI documents kubectl reads: /openapi/v3 (the index of group versions, each with a hash
 * of its document), /openapi/v3/<api/v1|apis/g/v> (each kind's operations tagged with its GVK and
 * `fieldValidation`, and each CRD's schema under components, as kube-apiserver publishes it), and
 * /openapi/v2 (no definitions: kubectl then builds strategic merge patches from its compiled-in
 * types and validates objects server-side).
 */
import { createHash } from 'node:crypto';
import { SERVER_VERSION } from './discovery.ts';
import { clone, isObject, type KObject } from '../wire/json.ts';
import { type Registry, type ResourceType, typesIn } from './registry.ts';

/**
 * What client-go asks /openapi/v2 for. kube-openapi answers with the same type written with a dot
 * for the `@`, which Go's mime parser (and so kubectl) can read.
 */
const OPENAPI_V2_PROTOBUF_ACCEPT = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';
const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

const META = 'io.k8s.apimachinery.pkg.apis.meta.v1';
const INFO = { title: 'Kubernetes', version: SERVER_VERSION.gitVersion };

/** An OpenAPI answer: a body and its content type. */
export interface OpenApiAnswer {
  contentType: string;
  body: Buffer;
}

/** Answer a GET under /openapi, or `undefined` for a path that is not served (404). */
export function openApi(registry: Registry, path: string, accept: string | undefined): OpenApiAnswer | undefined {
  const p = path.replace(/\/+$/, '');
  if (p === '/openapi/v2') return openApiV2(accept);
  if (p === '/openapi/v3') return json(openApiRoot(registry));
  const m = p.match(/^\/openapi\/v3\/(api\/v1|apis\/[^/]+\/[^/]+)$/);
  const doc = m ? openApiGroupVersion(registry, m[1]!) : undefined;
  return doc ? json(doc) : undefined;
}

function json(doc: KObject): OpenApiAnswer {
  return { contentType: 'application/json', body: Buffer.from(JSON.stringify(doc)) };
}

/** A Swagger 2.0 document with no definitions, as gnostic protobuf when asked so, else as JSON. */
function openApiV2(accept: string | undefined): OpenApiAnswer {
  if ((accept ?? '').includes(OPENAPI_V2_PROTOBUF_ACCEPT) || (accept ?? '').includes(OPENAPI_V2_PROTOBUF)) {
    // gnostic's openapi.v2.Document: swagger = 1, info = 2 (Info: title = 1, version = 2).
    const infoBytes = Buffer.concat([protoString(1, INFO.title), protoString(2, INFO.version)]);
    return { contentType: OPENAPI_V2_PROTOBUF, body: Buffer.concat([protoString(1, '2.0'), protoBytes(2, infoBytes)]) };
  }
  return json({ swagger: '2.0', info: INFO, paths: {}, definitions: {} });
}

/** A length-delimited protobuf field (wire type 2); lengths here stay below 128 bytes. */
function protoBytes(field: number, bytes: Buffer): Buffer {
  if (bytes.length > 127) throw new Error('protoBytes: only single-byte lengths are encoded');
  return Buffer.concat([Buffer.from([(field << 3) | 2, bytes.length]), bytes]);
}

function protoString(field: number, text: string): Buffer {
  return protoBytes(field, Buffer.from(text, 'utf8'));
}

/** `api/v1` or `apis/<group>/<version>`. */
function gvPathOf(group: string, version: string): string {
  return group === '' ? `api/${version}` : `apis/${group}/${version}`;
}

/** The index: every served group version, its hash that of its document (so a CRD change shows). */
export function openApiRoot(registry: Registry): KObject {
  const paths: KObject = {};
  for (const [g, vs] of registry.groups()) {
    for (const v of vs) {
      const key = gvPathOf(g, v);
      const hash = createHash('sha512')
        .update(JSON.stringify(openApiGroupVersion(registry, key)))
        .digest('hex')
        .toUpperCase();
      paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${hash}` };
    }
  }
  return { paths };
}

/** `canary-l4.io` → `io.canary-l4`: how kube-apiserver names a CRD's schemas. */
function reversedGroup(group: string): string {
  return group.split('.').reverse().join('.');
}

/**
 * One group version's document: per kind, patch/put/post operations tagged with the GVK and a
 * `fieldValidation` parameter (so kubectl validates server-side), and for a CRD its schema and its
 * List's under components (so `kubectl explain` reads the CRD's descriptions). Built-in kinds have
 * no schema here: kubectl would otherwise build their strategic merge patches from it.
 */
export function openApiGroupVersion(registry: Registry, gvPath: string): KObject | undefined {
  const [group, version] = gvPath.startsWith('api/')
    ? ['', gvPath.slice(4)]
    : (gvPath.slice(5).split('/') as [string, string]);
  const types = typesIn(registry, group, version);
  if (types.length === 0) return undefined;
  const paths: KObject = {};
  const schemas: KObject = {};
  const params = [
    { name: 'fieldValidation', in: 'query', schema: { type: 'string', uniqueItems: true } },
    { name: 'dryRun', in: 'query', schema: { type: 'string', uniqueItems: true } },
    { name: 'fieldManager', in: 'query', schema: { type: 'string', uniqueItems: true } },
  ];
  for (const t of types) {
    const prefix = `/${gvPathOf(group, version)}`;
    const item = t.namespaced ? `${prefix}/namespaces/{namespace}/${t.plural}/{name}` : `${prefix}/${t.plural}/{name}`;
    const coll = t.namespaced ? `${prefix}/namespaces/{namespace}/${t.plural}` : `${prefix}/${t.plural}`;
    const gvk = { group, version, kind: t.kind };
    const schema = t.schemas?.[version];
    const name = `${reversedGroup(group)}.${version}.${t.kind}`;
    const responses = schema
      ? {
          '200': {
            description: 'OK',
            content: { 'application/json': { schema: { $ref: `#/components/schemas/${name}` } } },
          },
        }
      : {};
    const op = (action: string) => ({
      'x-kubernetes-group-version-kind': gvk,
      'x-kubernetes-action': action,
      parameters: params,
      responses,
    });
    paths[item] = { patch: op('patch'), put: op('put') };
    paths[coll] = { post: op('post') };
    if (schema) {
      schemas[name] = customResourceSchema(t, version, schema);
      schemas[`${reversedGroup(group)}.${version}.${t.listKind}`] = customResourceListSchema(t, version, name);
    }
  }
  if (Object.keys(schemas).length > 0) Object.assign(schemas, metaSchemas());
  return { openapi: '3.0.0', info: INFO, paths, components: { schemas } };
}

const API_VERSION =
  'APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources';
const KIND =
  'Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds';

/** A CRD version's schema as published: apiVersion/kind described, metadata an ObjectMeta, tagged with its GVK. */
function customResourceSchema(t: ResourceType, version: string, schema: KObject): KObject {
  const out = clone(schema);
  const properties: KObject = isObject(out.properties) ? out.properties : {};
  out.properties = {
    ...properties,
    apiVersion: { type: 'string', description: API_VERSION, ...(properties.apiVersion ?? {}) },
    kind: { type: 'string', description: KIND, ...(properties.kind ?? {}) },
    metadata: {
      description:
        "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
      allOf: [{ $ref: `#/components/schemas/${META}.ObjectMeta` }],
    },
  };
  out['x-kubernetes-group-version-kind'] = [{ group: t.group, kind: t.kind, version }];
  return out;
}

function customResourceListSchema(t: ResourceType, version: string, itemSchema: string): KObject {
  return {
    description: `${t.listKind} is a list of ${t.kind}`,
    type: 'object',
    required: ['items'],
    properties: {
      apiVersion: { type: 'string', description: API_VERSION },
      items: {
        type: 'array',
        description: `List of ${t.plural}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md`,
        items: { $ref: `#/components/schemas/${itemSchema}` },
      },
      kind: { type: 'string', description: KIND },
      metadata: { description: 'Standard list metadata.', allOf: [{ $ref: `#/components/schemas/${META}.ListMeta` }] },
    },
    'x-kubernetes-group-version-kind': [{ group: t.group, kind: t.listKind, version }],
  };
}

/** ObjectMeta, OwnerReference and ListMeta, the fields users write and read (managedFields left loose). */
function metaSchemas(): KObject {
  const str = (description: string) => ({ type: 'string', description });
  const time = (description: string) => ({ type: 'string', format: 'date-time', description });
  const stringMap = (description: string) => ({
    type: 'object',
    additionalProperties: { type: 'string' },
    description,
  });
  return {
    [`${META}.ObjectMeta`]: {
      description:
        'ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.',
      type: 'object',
      properties: {
        annotations: stringMap(
          'Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata.',
        ),
        creationTimestamp: time(
          'CreationTimestamp is a timestamp representing the server time when this object was created. Populated by the system. Read-only.',
        ),
        deletionGracePeriodSeconds: {
          type: 'integer',
          format: 'int64',
          description:
            'Number of seconds allowed for this object to gracefully terminate before it will be removed from the system. Only set when deletionTimestamp is also set.',
        },
        deletionTimestamp: time(
          'DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted. Set by the server when a graceful deletion is requested by the user. Read-only.',
        ),
        finalizers: {
          type: 'array',
          items: { type: 'string' },
          'x-kubernetes-list-type': 'set',
          description: 'Must be empty before the object is deleted from the registry.',
        },
        generateName: str(
          'GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided.',
        ),
        generation: {
          type: 'integer',
          format: 'int64',
          description:
            'A sequence number representing a specific generation of the desired state. Populated by the system. Read-only.',
        },
        labels: stringMap(
          'Map of string keys and values that can be used to organize and categorize (scope and select) objects.',
        ),
        managedFields: {
          type: 'array',
          items: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
          description:
            'ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow.',
        },
        name: str('Name must be unique within a namespace. Cannot be updated.'),
        namespace: str('Namespace defines the space within which each name must be unique. Cannot be updated.'),
        ownerReferences: {
          type: 'array',
          items: { allOf: [{ $ref: `#/components/schemas/${META}.OwnerReference` }] },
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['uid'],
          description:
            'List of objects depended by this object. If ALL objects in the list have been deleted, this object will be garbage collected.',
        },
        resourceVersion: str(
          'An opaque value that represents the internal version of this object that can be used by clients to determine when objects have changed. Populated by the system. Read-only.',
        ),
        uid: str('UID is the unique in time and space value for this object. Populated by the system. Read-only.'),
      },
    },
    [`${META}.OwnerReference`]: {
      description: 'OwnerReference contains enough information to let you identify an owning object.',
      type: 'object',
      required: ['apiVersion', 'kind', 'name', 'uid'],
      properties: {
        apiVersion: str('API version of the referent.'),
        blockOwnerDeletion: {
          type: 'boolean',
          description:
            'If true, AND if the owner has the "foregroundDeletion" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed.',
        },
        controller: { type: 'boolean', description: 'If true, this reference points to the managing controller.' },
        kind: str('Kind of the referent.'),
        name: str('Name of the referent.'),
        uid: str('UID of the referent.'),
      },
    },
    [`${META}.ListMeta`]: {
      description:
        'ListMeta describes metadata that synthetic resources must have, including lists and various status objects.',
      type: 'object',
      properties: {
        continue: str(
          'continue may be set if the user set a limit on the number of items returned, and indicates that the server has more data available.',
        ),
        remainingItemCount: {
          type: 'integer',
          format: 'int64',
          description: 'The number of subsequent items in the list which are not included in this list response.',
        },
        resourceVersion: str(
          "String that identifies the server's internal version of this object that can be used by clients to determine when objects have changed.",
        ),
      },
    },
  };
}
