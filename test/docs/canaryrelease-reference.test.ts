// docs/canaryrelease.md against the CRD and the code: every property of deploy/crd.yaml's
// openAPIV3Schema under spec and status has an entry (its own heading, or its key named in the section
// of its nearest documented ancestor), and every condition type has a heading.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { parse } from 'yaml';
import { CONDITION_TYPES } from '../../src/api/conditions.ts';
import { readPage } from './reference-page.ts';

interface Schema {
  readonly properties?: Record<string, Schema>;
  readonly items?: Schema;
  readonly enum?: readonly string[];
}

const crd = parse(readFileSync(new URL('../../deploy/crd.yaml', import.meta.url), 'utf8')) as {
  spec: { versions: { schema: { openAPIV3Schema: Schema } }[] };
};
const root = crd.spec.versions[0]!.schema.openAPIV3Schema;

/** Every property path under `schema`: `spec.services[].ports[].config.weight`. */
function propertyPaths(schema: Schema, path: string): string[] {
  const items = schema.items;
  if (items !== undefined) return propertyPaths(items, `${path}[]`);
  return Object.entries(schema.properties ?? {}).flatMap(([key, child]) => {
    const at = `${path}.${key}`;
    return [at, ...propertyPaths(child, at)];
  });
}

const page = readPage('canaryrelease.md');
/** Each `### ` heading's text, and its section up to the next heading. */
const sections = new Map(
  [...page.matchAll(/^### (.+)\n([\s\S]*?)(?=^##)/gm)].map(([, title, body]) => [title!.replaceAll('`', ''), body!]),
);

/** `a.b[].c` → `a.b[]`, `a.b`, `a`: where an entry for it may be, nearest first. */
function ancestors(path: string): string[] {
  const segments = path.split('.');
  return segments.slice(1).map((_, index) => {
    const ancestor = segments.slice(0, segments.length - 1 - index).join('.');
    return ancestor.replace(/\[\]$/, '');
  });
}

function documented(path: string): boolean {
  if (sections.has(path)) return true;
  const nearest = ancestors(path).find((ancestor) => sections.has(ancestor));
  const key = path.split('.').at(-1)!.replace(/\[\]$/, '');
  return nearest !== undefined && sections.get(nearest)!.includes(`\`${key}\``);
}

test('docs/canaryrelease.md has an entry for every property of the CRD under spec and status', () => {
  const paths = ['spec', 'status'].flatMap((part) => propertyPaths(root.properties![part]!, part));
  assert.ok(paths.length > 100, 'the schema was read');
  const missing = paths.filter((path) => !documented(path));
  assert.deepEqual(missing, [], 'properties of deploy/crd.yaml without an entry in docs/canaryrelease.md');
});

test("docs/canaryrelease.md has a heading for every condition type, the manager's among them", () => {
  const conditionSchema = root.properties!.status!.properties!.conditions!.items!.properties!.type!;
  const types = new Set([...CONDITION_TYPES, ...(conditionSchema.enum ?? [])]);
  assert.deepEqual(
    [...types].filter((type) => !sections.has(type)),
    [],
    'condition types without a heading',
  );
});
