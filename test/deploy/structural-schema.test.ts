// The validator behind canaryrelease-example.test.ts must be able to fail: one row per keyword.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validate, type StructuralSchema } from './structural-schema.ts';

const port: StructuralSchema = {
  type: 'object',
  required: ['port'],
  properties: {
    port: { type: 'integer', minimum: 1, maximum: 65535 },
    protocol: { type: 'string', enum: ['TCP', 'UDP'] },
    name: { type: 'string', minLength: 1, maxLength: 5, pattern: '^[a-z]+$' },
    labels: { type: 'object', additionalProperties: { type: 'string' } },
    tags: { type: 'array', minItems: 1, items: { type: 'string' } },
    override: { type: 'integer', nullable: true },
    free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true, properties: { known: { type: 'string' } } },
    quantity: { 'x-kubernetes-int-or-string': true },
  },
};

const cases: { name: string; value: unknown; problems: string[] }[] = [
  { name: 'a valid object', value: { port: 80, protocol: 'TCP', name: 'web', labels: { a: 'b' }, tags: ['x'], override: null, free: { other: 1 } }, problems: [] },
  { name: 'required', value: {}, problems: ['<root>: port is required'] },
  { name: 'type object', value: [], problems: ['<root>: must be of type object, got array'] },
  { name: 'type integer', value: { port: 8.5 }, problems: ['port: must be an integer, got 8.5'] },
  { name: 'type string', value: { port: 80, protocol: 6 }, problems: ['protocol: must be of type string, got number'] },
  { name: 'minimum', value: { port: 0 }, problems: ['port: must be >= 1, got 0'] },
  { name: 'maximum', value: { port: 65536 }, problems: ['port: must be <= 65535, got 65536'] },
  { name: 'enum', value: { port: 80, protocol: 'SCTP' }, problems: ['protocol: must be one of "TCP", "UDP", got "SCTP"'] },
  { name: 'minLength', value: { port: 80, name: '' }, problems: ['name: must be at least 1 characters, got 0', 'name: must match ^[a-z]+$, got ""'] },
  { name: 'maxLength', value: { port: 80, name: 'abcdef' }, problems: ['name: must be at most 5 characters, got 6'] },
  { name: 'pattern', value: { port: 80, name: 'Web' }, problems: ['name: must match ^[a-z]+$, got "Web"'] },
  { name: 'additionalProperties', value: { port: 80, labels: { a: 1 } }, problems: ['labels.a: must be of type string, got number'] },
  { name: 'unknown field', value: { port: 80, weight: 10 }, problems: ['weight: unknown field'] },
  { name: 'items', value: { port: 80, tags: ['x', 2] }, problems: ['tags[1]: must be of type string, got number'] },
  { name: 'minItems', value: { port: 80, tags: [] }, problems: ['tags: must have at least 1 items, got 0'] },
  { name: 'null where not nullable', value: { port: null }, problems: ['port: must not be null'] },
  { name: 'int-or-string takes either', value: { port: 80, quantity: '500m' }, problems: [] },
  { name: 'int-or-string refuses anything else', value: { port: 80, quantity: 0.5 }, problems: ['quantity: must be an integer or a string, got 0.5'] },
  { name: 'preserved unknown fields still check the known ones', value: { port: 80, free: { known: 1 } }, problems: ['free.known: must be of type string, got number'] },
];

describe('structural schema validator', () => {
  for (const { name, value, problems } of cases) {
    it(`${name}: ${problems.length === 0 ? 'passes' : 'fails'}`, () => {
      assert.deepEqual(validate(value, port), problems);
    });
  }

  it('refuses a schema keyword it cannot check instead of passing everything', () => {
    const schema = { type: 'array', uniqueItems: true } as StructuralSchema;
    assert.throws(() => validate([1, 1], schema), /schema keyword uniqueItems is not supported/);
  });

  it('bounds the length of a list (maxItems)', () => {
    assert.deepEqual(validate([1, 2], { type: 'array', maxItems: 1 }), ['<root>: must have at most 1 items, got 2']);
    assert.deepEqual(validate([1], { type: 'array', maxItems: 1 }), []);
  });
});
