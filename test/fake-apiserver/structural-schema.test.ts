/** A CRD's structural schema on a custom resource (pure): pruning, nulls, defaults, and the field errors. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  compileSchema,
  pruneAndDefault,
  validateObject,
} from '../support/fake-apiserver/resources/structural-schema.ts';

const schema = {
  type: 'object',
  required: ['spec'],
  properties: {
    spec: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', pattern: '^[a-z]+$', maxLength: 8 },
        mode: { type: 'string', enum: ['', 'On', 'Off'], default: '' },
        weight: { type: 'integer', minimum: 0, maximum: 100 },
        ratio: { type: 'number', nullable: true },
        quantity: { 'x-kubernetes-int-or-string': true },
        optionalQuantity: { 'x-kubernetes-int-or-string': true, nullable: true },
        steps: {
          type: 'array',
          maxItems: 2,
          items: { type: 'object', properties: { pause: { type: 'string' }, count: { type: 'integer', default: 1 } } },
        },
        labels: { type: 'object', additionalProperties: { type: 'string' } },
        free: {
          type: 'object',
          'x-kubernetes-preserve-unknown-fields': true,
          properties: { known: { type: 'integer' } },
        },
      },
    },
    status: { type: 'object', properties: { phase: { type: 'string', enum: ['Running', 'Done'] } } },
  },
};

const object = (spec: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, any> => ({
  apiVersion: 'x.io/v1',
  kind: 'Widget',
  metadata: { name: 'w', anything: 1 },
  spec,
  ...extra,
});

describe('pruneAndDefault', () => {
  it('prunes fields the schema does not know, except under x-kubernetes-preserve-unknown-fields, and names them', () => {
    const o = object(
      {
        name: 'a',
        extra: 1,
        steps: [{ pause: '1s', stray: true }],
        labels: { a: 'b' },
        free: { known: 1, other: { deep: 1 } },
      },
      { top: 1 },
    );
    assert.deepEqual(pruneAndDefault(o, schema, 'main').sort(), ['spec.extra', 'spec.steps[0].stray', 'top']);
    assert.deepEqual(
      o,
      object({
        name: 'a',
        mode: '',
        steps: [{ pause: '1s', count: 1 }],
        labels: { a: 'b' },
        free: { known: 1, other: { deep: 1 } },
      }),
    );
  });

  it('drops nulls of non-nullable fields (a default takes their place), keeps nullable ones', () => {
    const o = object({ name: 'a', weight: null, ratio: null, mode: null });
    assert.deepEqual(pruneAndDefault(o, schema, 'main'), []);
    assert.deepEqual(o.spec, { name: 'a', ratio: null, mode: '' });
  });

  it('a status write touches only status; a main write leaves status alone', () => {
    const o = object({ name: 'a', extra: 1 }, { status: { phase: 'Running', stray: 1 } });
    assert.deepEqual(pruneAndDefault(o, schema, 'status'), ['status.stray']);
    assert.deepEqual(o.spec, { name: 'a', extra: 1 });
    const p = object({ name: 'a' }, { status: { stray: 1 } });
    assert.deepEqual(pruneAndDefault(p, schema, 'main'), []);
    assert.deepEqual(p.status, { stray: 1 });
  });

  it('an absent status gets its default in either scope (what kube-apiserver reads back), a present one keeps its own', () => {
    const waiting = { phase: 'Done' };
    const withDefault = {
      ...schema,
      properties: { ...schema.properties, status: { ...schema.properties.status, default: waiting } },
    };
    const created = object({ name: 'a' });
    pruneAndDefault(created, withDefault, 'main');
    assert.deepEqual(created.status, waiting);
    const cleared = object({ name: 'a', mode: null });
    pruneAndDefault(cleared, withDefault, 'status');
    assert.deepEqual(cleared.status, waiting);
    assert.equal(cleared.spec.mode, null, 'a status write does not default spec');
    const written = object({ name: 'a' }, { status: { phase: 'Running' } });
    pruneAndDefault(written, withDefault, 'main');
    assert.deepEqual(written.status, { phase: 'Running' });
  });
});

describe('validateObject', () => {
  it('reports each failing field as kube-apiserver does', () => {
    const o = object({
      name: 'Abc123456',
      mode: 'on',
      weight: 101,
      ratio: 'x',
      quantity: true,
      steps: [{}, {}, {}],
      labels: { a: 1 },
    });
    assert.deepEqual(validateObject(o, schema, 'main'), [
      { field: 'spec.name', reason: 'FieldValueTooLong', message: 'Too long: may not be more than 8 bytes' },
      {
        field: 'spec.name',
        reason: 'FieldValueInvalid',
        message: `Invalid value: "Abc123456": spec.name in body should match '^[a-z]+$'`,
      },
      {
        field: 'spec.mode',
        reason: 'FieldValueNotSupported',
        message: 'Unsupported value: "on": supported values: "", "On", "Off"',
      },
      {
        field: 'spec.weight',
        reason: 'FieldValueInvalid',
        message: 'Invalid value: 101: spec.weight in body should be less than or equal to 100',
      },
      {
        field: 'spec.ratio',
        reason: 'FieldValueTypeInvalid',
        message: 'Invalid value: "string": spec.ratio in body must be of type number: "string"',
      },
      {
        field: 'spec.quantity',
        reason: 'FieldValueTypeInvalid',
        message: 'Invalid value: "boolean": spec.quantity in body must be of type integer,string: "boolean"',
      },
      { field: 'spec.steps', reason: 'FieldValueTooMany', message: 'Too many: 3: must have at most 2 items' },
      {
        field: 'spec.labels.a',
        reason: 'FieldValueTypeInvalid',
        message: 'Invalid value: "integer": spec.labels.a in body must be of type string: "integer"',
      },
    ]);
  });

  it('required fields, at the root and below; int-or-string takes both; nullable takes null', () => {
    assert.deepEqual(validateObject({ metadata: { name: 'w' } }, schema, 'main'), [
      { field: 'spec', reason: 'FieldValueRequired', message: 'Required value' },
    ]);
    assert.deepEqual(validateObject(object({ weight: -1 }), schema, 'main'), [
      { field: 'spec.name', reason: 'FieldValueRequired', message: 'Required value' },
      {
        field: 'spec.weight',
        reason: 'FieldValueInvalid',
        message: 'Invalid value: -1: spec.weight in body should be greater than or equal to 0',
      },
    ]);
    assert.deepEqual(
      validateObject(object({ name: 'a', quantity: 2, ratio: null, optionalQuantity: null }), schema, 'main'),
      [],
    );
    assert.deepEqual(validateObject(object({ name: 'a', quantity: '500m' }), schema, 'main'), []);
  });

  it('a main write answers for all but status; a status write only for status', () => {
    const o = object({ weight: 200 }, { status: { phase: 'Lost' } });
    assert.deepEqual(
      validateObject(o, schema, 'main').map((c) => c.field),
      ['spec.name', 'spec.weight'],
    );
    assert.deepEqual(
      validateObject(o, schema, 'status').map((c) => c.field),
      ['status.phase'],
    );
  });

  it("metadata is the server's to check, whatever the schema says of it", () => {
    const withMeta = { ...schema, properties: { ...schema.properties, metadata: { type: 'string' } } };
    assert.deepEqual(validateObject(object({ name: 'a' }), withMeta, 'main'), []);
  });

  it('OpenAPI v3.0 boolean exclusiveMinimum/exclusiveMaximum make minimum/maximum strict, as in a CRD', () => {
    const bounded = {
      type: 'object',
      properties: {
        spec: {
          type: 'object',
          properties: {
            open: { type: 'number', minimum: 0.5, exclusiveMinimum: true, maximum: 1, exclusiveMaximum: true },
            closed: { type: 'number', minimum: 0.5, exclusiveMinimum: false, maximum: 1, exclusiveMaximum: false },
          },
        },
      },
    };
    assert.deepEqual(validateObject(object({ open: 0.99, closed: 1 }), bounded, 'main'), []);
    assert.deepEqual(validateObject(object({ open: 1, closed: 0.5 }), bounded, 'main'), [
      {
        field: 'spec.open',
        reason: 'FieldValueInvalid',
        message: 'Invalid value: 1: spec.open in body should be less than 1',
      },
    ]);
    assert.deepEqual(validateObject(object({ open: 0.5 }), bounded, 'main'), [
      {
        field: 'spec.open',
        reason: 'FieldValueInvalid',
        message: 'Invalid value: 0.5: spec.open in body should be greater than 0.5',
      },
    ]);
  });

  it('a schema that is not one does not compile', () => {
    assert.throws(() => compileSchema({ type: 'object', properties: { a: { type: 'widget' } } }));
  });
});
