/**
 * A CRD version's structural schema applied to a custom resource as apiextensions-apiserver does
 * on create, update and patch: unknown fields pruned (reported for `fieldValidation`), nulls of
 * non-nullable fields dropped, `default`s filled in, then the object validated (ajv) and each
 * failure turned into the field error kube-apiserver writes. Pure: no I/O, no registry.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { clone, isObject, type KObject } from '../wire/json.ts';

/** One entry of a 422 Status's `details.causes`, as kube-apiserver fills it. */
export interface FieldCause {
  field: string;
  reason:
    | 'FieldValueInvalid'
    | 'FieldValueRequired'
    | 'FieldValueNotSupported'
    | 'FieldValueTypeInvalid'
    | 'FieldValueTooMany'
    | 'FieldValueTooLong'
    | 'FieldValueDuplicate';
  /** The error without its path: `Invalid value: -1: spec.x in body should be greater than or equal to 0`. */
  message: string;
}

/** Which part of the object a write may change: the main resource (all but status) or `/status`. */
export type WriteScope = 'main' | 'status';

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
ajv.addKeyword({
  keyword: 'x-kubernetes-int-or-string',
  schemaType: 'boolean',
  errors: true,
  // A null still there after pruning is in a nullable field.
  validate: function intOrString(this: unknown, flag: boolean, data: unknown) {
    return !flag || data === null || Number.isInteger(data) || typeof data === 'string';
  },
});

const compiled = new WeakMap<KObject, ValidateFunction>();

/**
 * Compile a schema (once per schema object); throws with ajv's reason when it is not a schema, so
 * a CRD carrying one can be refused.
 */
export function compileSchema(schema: KObject): ValidateFunction {
  let validate = compiled.get(schema);
  if (!validate) {
    // metadata is ObjectMeta, checked by the server's own rules; a CRD may only narrow name.
    const { metadata: _metadata, ...properties } = isObject(schema.properties) ? schema.properties : {};
    validate = ajv.compile(forAjv({ ...schema, properties }));
    compiled.set(schema, validate);
  }
  return validate;
}

/**
 * The schema as ajv takes it: `nullable` only beside a `type` (an untyped field, int-or-string or
 * preserved, takes null anyway); OpenAPI v3.0's boolean `exclusiveMinimum`/`exclusiveMaximum` (they
 * make `minimum`/`maximum` exclusive, as Kubernetes reads them) as JSON Schema's numeric bounds;
 * through every place a schema nests another.
 */
function forAjv(schema: KObject): KObject {
  const out: KObject = { ...schema };
  if (out.nullable !== undefined && out.type === undefined) delete out.nullable;
  for (const [flag, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (typeof out[flag] !== 'boolean') continue;
    if (out[flag] === true && typeof out[bound] === 'number') {
      out[flag] = out[bound];
      delete out[bound];
    } else delete out[flag];
  }
  if (isObject(out.properties))
    out.properties = Object.fromEntries(
      Object.entries(out.properties).map(([k, v]) => [k, isObject(v) ? forAjv(v) : v]),
    );
  for (const key of ['items', 'additionalProperties', 'not']) if (isObject(out[key])) out[key] = forAjv(out[key]);
  for (const key of ['allOf', 'anyOf', 'oneOf'])
    if (Array.isArray(out[key])) out[key] = out[key].map((v: unknown) => (isObject(v) ? forAjv(v) : v));
  return out;
}

/**
 * Prune, drop non-nullable nulls and default `obj` in place, within `scope`; returns the paths of
 * the fields the schema does not know (`spec.foo`, `spec.ports[0].bar`), as strict decoding names them.
 */
export function pruneAndDefault(obj: KObject, schema: KObject, scope: WriteScope): string[] {
  const unknown: string[] = [];
  const properties: KObject = isObject(schema.properties) ? schema.properties : {};
  for (const key of Object.keys(obj)) {
    if (key === 'apiVersion' || key === 'kind' || key === 'metadata') continue;
    if ((key === 'status') !== (scope === 'status')) continue;
    walkField(obj, key, properties[key], key, unknown, schema['x-kubernetes-preserve-unknown-fields'] === true);
  }
  // Either scope fills an absent status's default: kube-apiserver drops status on create and
  // defaults what it reads from etcd, so a new Gateway reads back with its "Waiting for controller" conditions.
  const { status, ...others } = properties;
  const defaulted = {
    ...(scope === 'main' ? others : {}),
    ...(obj.status === undefined && status !== undefined ? { status } : {}),
  };
  fillDefaults(obj, { ...schema, properties: defaulted }, unknown, '');
  return unknown;
}

/** One member of an object: unknown → pruned; null and not nullable → its default or gone; else walked. */
function walkField(
  parent: KObject,
  key: string,
  schema: KObject | undefined,
  path: string,
  unknown: string[],
  preserve: boolean,
): void {
  if (!isObject(schema)) {
    if (!preserve) {
      unknown.push(path);
      delete parent[key];
    }
    return;
  }
  if (parent[key] === null && schema.nullable !== true) {
    if (schema.default !== undefined) parent[key] = clone(schema.default);
    else delete parent[key];
    return;
  }
  walk(parent[key], schema, path, unknown);
}

function walk(value: unknown, schema: KObject, path: string, unknown: string[]): void {
  if (schema['x-kubernetes-int-or-string'] === true) return;
  if (Array.isArray(value)) {
    if (isObject(schema.items)) {
      value.forEach((item, i) => {
        walk(item, schema.items, `${path}[${i}]`, unknown);
      });
    }
    return;
  }
  if (!isObject(value)) return;
  const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true;
  const embedded = schema['x-kubernetes-embedded-resource'] === true;
  if (isObject(schema.additionalProperties)) {
    for (const key of Object.keys(value))
      walkField(value, key, schema.additionalProperties, `${path}.${key}`, unknown, true);
  } else if (isObject(schema.properties) || !preserve) {
    const properties: KObject = isObject(schema.properties) ? schema.properties : {};
    const mapOfAnything = schema.additionalProperties === true;
    for (const key of Object.keys(value)) {
      if (embedded && (key === 'apiVersion' || key === 'kind' || key === 'metadata')) continue;
      walkField(value, key, properties[key], `${path}.${key}`, unknown, preserve || mapOfAnything);
    }
  }
  fillDefaults(value, schema, unknown, path);
}

/** Absent members with a `default` get it (and the default is walked, as it may hold more). */
function fillDefaults(value: KObject, schema: KObject, unknown: string[], path: string): void {
  if (!isObject(schema.properties)) return;
  for (const [key, sub] of Object.entries(schema.properties as KObject)) {
    if (value[key] !== undefined || !isObject(sub) || sub.default === undefined) continue;
    value[key] = clone(sub.default);
    walk(value[key], sub, path ? `${path}.${key}` : key, unknown);
  }
}

/**
 * Validate `obj` against `schema`; the causes of a 422, within `scope` (a main-resource write does
 * not answer for status, a status write answers only for it).
 */
export function validateObject(obj: KObject, schema: KObject, scope: WriteScope): FieldCause[] {
  const validate = compileSchema(schema);
  const found = [
    ...(validate(obj) ? [] : (validate.errors ?? []).map((e) => toCause(e, obj))),
    ...listTypeCauses(obj, schema, ''),
  ];
  const causes: FieldCause[] = [];
  for (const cause of found) {
    if (!cause) continue;
    const inStatus = cause.field === 'status' || cause.field.startsWith('status.') || cause.field.startsWith('status[');
    if (inStatus !== (scope === 'status')) continue;
    if (!causes.some((c) => c.field === cause.field && c.message === cause.message)) causes.push(cause);
  }
  return causes;
}

/**
 * `x-kubernetes-list-type`, as apiextensions-apiserver enforces it (a real control plane refused a
 * CanaryRelease listing one port twice, which this fake once admitted): a `set`'s items are
 * unique, a `map`'s items unique by their `x-kubernetes-list-map-keys` (the duplicate's keys shown
 * as a JSON object, sorted as Go prints a map).
 */
function listTypeCauses(value: unknown, schema: KObject | undefined, path: string): FieldCause[] {
  if (schema === undefined || value === null || typeof value !== 'object') return [];
  if (Array.isArray(value)) {
    const causes: FieldCause[] = [];
    const listType = schema['x-kubernetes-list-type'];
    if (listType === 'set' || listType === 'map') {
      const keys = (schema['x-kubernetes-list-map-keys'] ?? []) as string[];
      const keyOf = (item: unknown) =>
        listType === 'set'
          ? item
          : Object.fromEntries(
              keys
                .filter((key) => isObject(item) && item[key] !== undefined)
                .sort()
                .map((key) => [key, (item as KObject)[key]]),
            );
      const seen = new Set<string>();
      value.forEach((item, index) => {
        const key = JSON.stringify(keyOf(item));
        if (seen.has(key))
          causes.push({
            field: `${path}[${index}]`,
            reason: 'FieldValueDuplicate',
            message: `Duplicate value: ${key}`,
          });
        seen.add(key);
      });
    }
    value.forEach((item, index) => {
      causes.push(...listTypeCauses(item, schema.items as KObject | undefined, `${path}[${index}]`));
    });
    return causes;
  }
  const properties = (schema.properties ?? {}) as Record<string, KObject>;
  return Object.entries(value).flatMap(([key, item]) =>
    listTypeCauses(
      item,
      properties[key] ?? (isObject(schema.additionalProperties) ? schema.additionalProperties : undefined),
      path ? `${path}.${key}` : key,
    ),
  );
}

/** `/spec/steps/0/weight` → `spec.steps[0].weight`. */
function fieldPath(instancePath: string): string {
  let out = '';
  for (const raw of instancePath.split('/').slice(1)) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^\d+$/.test(part) ? `[${part}]` : out ? `.${part}` : part;
  }
  return out;
}

function valueAt(obj: unknown, instancePath: string): unknown {
  let v: any = obj;
  for (const raw of instancePath.split('/').slice(1)) v = v?.[raw.replace(/~1/g, '/').replace(/~0/g, '~')];
  return v;
}

/** Go's %v of a JSON value as field errors print it: strings quoted, numbers and booleans bare. */
function shown(v: unknown): string {
  return v === undefined ? 'null' : JSON.stringify(v);
}

function jsonType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

/** One ajv error as the field error apiextensions-apiserver reports (validation.go ConvertToFieldErrors). */
function toCause(e: ErrorObject, obj: KObject): FieldCause | undefined {
  const field = fieldPath(e.instancePath);
  const value = valueAt(obj, e.instancePath);
  const invalid = (detail: string): FieldCause => ({
    field,
    reason: 'FieldValueInvalid',
    message: `Invalid value: ${shown(value)}: ${field} in body ${detail}`,
  });
  const p = e.params as Record<string, any>;
  switch (e.keyword) {
    case 'required': {
      const missing = String(p.missingProperty);
      return {
        field: field ? `${field}.${missing}` : missing,
        reason: 'FieldValueRequired',
        message: 'Required value',
      };
    }
    case 'type':
    case 'x-kubernetes-int-or-string': {
      const want = e.keyword === 'type' ? String(p.type).replace(/,null$/, '') : 'integer,string';
      return {
        field,
        reason: 'FieldValueTypeInvalid',
        message: `Invalid value: "${jsonType(value)}": ${field} in body must be of type ${want}: "${jsonType(value)}"`,
      };
    }
    case 'enum':
      return {
        field,
        reason: 'FieldValueNotSupported',
        message: `Unsupported value: ${shown(value)}: supported values: ${(p.allowedValues as unknown[]).map((a) => (typeof a === 'string' ? JSON.stringify(a) : shown(a))).join(', ')}`,
      };
    case 'maxItems':
    case 'maxProperties':
      return {
        field,
        reason: 'FieldValueTooMany',
        message: `Too many: ${Array.isArray(value) ? value.length : Object.keys(value ?? {}).length}: must have at most ${p.limit} items`,
      };
    case 'maxLength':
      return { field, reason: 'FieldValueTooLong', message: `Too long: may not be more than ${p.limit} bytes` };
    case 'minimum':
      return invalid(`should be greater than or equal to ${p.limit}`);
    case 'exclusiveMinimum':
      return invalid(`should be greater than ${p.limit}`);
    case 'maximum':
      return invalid(`should be less than or equal to ${p.limit}`);
    case 'exclusiveMaximum':
      return invalid(`should be less than ${p.limit}`);
    case 'pattern':
      return invalid(`should match '${p.pattern}'`);
    case 'minLength':
      return invalid(`should be at least ${p.limit} chars long`);
    case 'minItems':
      return invalid(`should have at least ${p.limit} items`);
    case 'minProperties':
      return invalid(`should have at least ${p.limit} properties`);
    case 'multipleOf':
      return invalid(`should be a multiple of ${p.multipleOf}`);
    case 'uniqueItems':
      return {
        field,
        reason: 'FieldValueInvalid',
        message: `Duplicate value: ${shown(Array.isArray(value) ? value[p.j] : value)}`,
      };
    case 'if':
      return undefined; // its branch's own errors say what failed
    default:
      return invalid(e.message ?? `does not satisfy ${e.keyword}`);
  }
}
