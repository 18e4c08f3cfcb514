// A validator for the subset of OpenAPI v3 structural schemas that deploy/crd.yaml uses, so the
// example CanaryRelease is checked as kube-apiserver would check it at admission (with kubectl's
// default strict field validation, an unknown field is an error rather than silently pruned).

export interface StructuralSchema {
  readonly type?: 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';
  readonly properties?: Readonly<Record<string, StructuralSchema>>;
  readonly required?: readonly string[];
  readonly additionalProperties?: StructuralSchema | boolean;
  readonly items?: StructuralSchema;
  readonly enum?: readonly unknown[];
  readonly minimum?: number;
  readonly maximum?: number;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly pattern?: string;
  readonly minItems?: number;
  readonly maxItems?: number;
  readonly minProperties?: number;
  readonly nullable?: boolean;
  readonly 'x-kubernetes-preserve-unknown-fields'?: boolean;
  /** An integer or a string (a resource quantity: 2, "500m"). */
  readonly 'x-kubernetes-int-or-string'?: boolean;
}

const ENFORCED = new Set([
  'type', 'properties', 'required', 'additionalProperties', 'items', 'enum', 'minimum', 'maximum',
  'minLength', 'maxLength', 'pattern', 'minItems', 'maxItems', 'minProperties', 'nullable', 'x-kubernetes-preserve-unknown-fields', 'x-kubernetes-int-or-string',
]);
/** Keywords that say nothing about validity (or only about list merging, which one object cannot break). */
const NOT_VALIDATING = new Set(['description', 'default', 'format', 'x-kubernetes-list-type', 'x-kubernetes-list-map-keys']);

/**
 * The problems of `value` against `schema`, each as "path: what is wrong"; none = valid.
 * Throws on a schema keyword this validator does not know, rather than pass what it cannot check.
 */
export function validate(value: unknown, schema: StructuralSchema, path = '<root>'): string[] {
  for (const keyword of Object.keys(schema))
    if (!ENFORCED.has(keyword) && !NOT_VALIDATING.has(keyword)) throw new Error(`${path}: schema keyword ${keyword} is not supported by this validator`);
  if (value === null) return schema.nullable === true ? [] : [`${path}: must not be null`];
  const typeProblem = schema['x-kubernetes-int-or-string'] === true
    ? (Number.isInteger(value) || typeof value === 'string' ? undefined : `must be an integer or a string, got ${JSON.stringify(value)}`)
    : checkType(value, schema.type);
  if (typeProblem !== undefined) return [`${path}: ${typeProblem}`];

  const problems: string[] = [];
  const problem = (message: string) => problems.push(`${path}: ${message}`);
  if (schema.enum !== undefined && !schema.enum.includes(value)) problem(`must be one of ${schema.enum.map((item) => JSON.stringify(item)).join(', ')}, got ${JSON.stringify(value)}`);
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) problem(`must be >= ${schema.minimum}, got ${value}`);
    if (schema.maximum !== undefined && value > schema.maximum) problem(`must be <= ${schema.maximum}, got ${value}`);
  }
  if (typeof value === 'string') {
    if (schema.minLength !== undefined && value.length < schema.minLength) problem(`must be at least ${schema.minLength} characters, got ${value.length}`);
    if (schema.maxLength !== undefined && value.length > schema.maxLength) problem(`must be at most ${schema.maxLength} characters, got ${value.length}`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) problem(`must match ${schema.pattern}, got ${JSON.stringify(value)}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) problem(`must have at least ${schema.minItems} items, got ${value.length}`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) problem(`must have at most ${schema.maxItems} items, got ${value.length}`);
    const { items } = schema;
    if (items !== undefined) value.forEach((item: unknown, index) => problems.push(...validate(item, items, `${path}[${index}]`)));
  } else if (typeof value === 'object') {
    problems.push(...validateObject(value as Record<string, unknown>, schema, path));
  }
  return problems;
}

function checkType(value: unknown, type: StructuralSchema['type']): string | undefined {
  const actual = Array.isArray(value) ? 'array' : typeof value;
  switch (type) {
    case undefined:
      return undefined;
    case 'integer':
      return Number.isInteger(value) ? undefined : `must be an integer, got ${JSON.stringify(value)}`;
    case 'array':
    case 'object':
    case 'string':
    case 'number':
    case 'boolean':
      return actual === type ? undefined : `must be of type ${type}, got ${actual}`;
  }
}

function validateObject(value: Record<string, unknown>, schema: StructuralSchema, path: string): string[] {
  const problems: string[] = [];
  const fields = Object.keys(value).length;
  if (schema.minProperties !== undefined && fields < schema.minProperties) problems.push(`${path}: must have at least ${schema.minProperties} fields, got ${fields}`);
  for (const key of schema.required ?? []) if (!(key in value)) problems.push(`${path}: ${key} is required`);
  for (const [key, field] of Object.entries(value)) {
    const fieldPath = path === '<root>' ? key : `${path}.${key}`;
    const declared = schema.properties?.[key];
    if (declared !== undefined) problems.push(...validate(field, declared, fieldPath));
    else if (typeof schema.additionalProperties === 'object') problems.push(...validate(field, schema.additionalProperties, fieldPath));
    else if (schema.properties !== undefined && schema.additionalProperties !== true && schema['x-kubernetes-preserve-unknown-fields'] !== true)
      problems.push(`${fieldPath}: unknown field`);
  }
  return problems;
}
