// The GitOps settings of docs/gitops.md (Argo CD ignoreDifferences, Flux driftIgnoreRules) checked against
// what a release really changes on a Service: with them, the owner's manifest and the live,
// taken-over Service differ in nothing the GitOps tool would look at; without them they do. The
// fake runs neither tool, so this is as far as it can be tested; the re-apply itself is tested
// with kubectl in strand.test.ts.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { parseAllDocuments } from 'yaml';
import { ANNOTATION_ORIGINAL } from '../../../src/api/names.ts';
import { converge, service, webWorld, WEB_SPEC } from '../reconcile/world.ts';

const page = readFileSync(new URL('../../../docs/gitops.md', import.meta.url), 'utf8');
const snippets = [...page.matchAll(/```yaml\n([\s\S]*?)```/g)].flatMap((match) =>
  parseAllDocuments(match[1]!).map((document) => document.toJS()),
);
const argo = snippets.find((item) => item.kind === 'Application');
const flux = snippets.find((item) => item.kind === 'Kustomization');

/** What the owner applies, and the Service as a running release leaves it. */
const manifest = (): V1Service =>
  service('web', { app: 'web', version: 'v1' }, [
    { name: 'http', port: 80, targetPort: 8000 },
    { name: 'admin', port: 9000, targetPort: 9100 },
  ]);
const live = (): V1Service => converge(webWorld(WEB_SPEC, [manifest()])).world.services.get('web')!;

/** `live` reduced to the fields `desired` sets: what an apply-based diff compares. */
function project(value: unknown, desired: unknown): unknown {
  if (Array.isArray(desired))
    return desired.map((item, index) => project((value as unknown[] | undefined)?.[index], item));
  if (typeof desired === 'object' && desired !== null) {
    return Object.fromEntries(
      Object.keys(desired).map((key) => [
        key,
        project((value as Record<string, unknown> | undefined)?.[key], (desired as Record<string, unknown>)[key]),
      ]),
    );
  }
  return value;
}

/** JSON pointers (RFC 6901) to every place a path names; `[]` in a jq path expression means every item. */
function pointers(object: unknown, path: string, syntax: 'pointer' | 'jq'): string[] {
  const segments = syntax === 'pointer' ? path.split('/').slice(1) : path.split(/\.|(?=\[\])/).filter(Boolean);
  let places: { pointer: string; value: unknown }[] = [{ pointer: '', value: object }];
  for (const segment of segments) {
    places = places.flatMap(({ pointer, value }) => {
      if (segment === '[]') {
        assert.ok(syntax === 'jq', `[] in ${path}`);
        return ((value as unknown[] | undefined) ?? []).map((item, index) => ({
          pointer: `${pointer}/${index}`,
          value: item,
        }));
      }
      assert.match(segment, /^[A-Za-z0-9_-]+$/, `only plain keys and [] are checked here: ${path}`);
      return [{ pointer: `${pointer}/${segment}`, value: (value as Record<string, unknown> | undefined)?.[segment] }];
    });
  }
  return places.map((place) => place.pointer);
}

function withoutPaths(object: unknown, ignored: readonly string[]): unknown {
  const copy = structuredClone(object) as Record<string, unknown>;
  for (const pointer of ignored) {
    const keys = pointer.split('/').slice(1);
    const parent = keys
      .slice(0, -1)
      .reduce<unknown>((node, key) => (node as Record<string, unknown> | undefined)?.[key], copy) as
      | Record<string, unknown>
      | undefined;
    if (parent !== undefined) delete parent[keys.at(-1)!];
  }
  return copy;
}

function differs(ignored: (object: unknown) => string[]): boolean {
  const desired = { metadata: { name: 'web' }, spec: manifest().spec };
  const seen = project(live(), desired);
  return JSON.stringify(withoutPaths(seen, ignored(seen))) !== JSON.stringify(withoutPaths(desired, ignored(desired)));
}

describe('the GitOps settings of docs/gitops.md', () => {
  it('a running release changes the Service where an apply would see it: the settings are needed', () => {
    assert.equal(
      differs(() => []),
      true,
    );
  });

  it('Argo CD: ignoreDifferences for the Service covers every field the release changes; the sync respects it', () => {
    assert.ok(argo, 'an Argo CD Application in the GitOps section');
    const rules = (
      argo.spec.ignoreDifferences as {
        group: string;
        kind: string;
        name?: string;
        jsonPointers?: string[];
        jqPathExpressions?: string[];
      }[]
    ).filter(
      (rule) => rule.group === '' && rule.kind === 'Service' && (rule.name === undefined || rule.name === 'web'),
    );
    assert.ok(rules.length > 0, 'a rule for the Service');
    const ignored = (object: unknown) =>
      rules.flatMap((rule) => [
        ...(rule.jsonPointers ?? []).flatMap((path) => pointers(object, path, 'pointer')),
        ...(rule.jqPathExpressions ?? []).flatMap((path) => pointers(object, path, 'jq')),
      ]);
    assert.equal(differs(ignored), false);
    assert.ok(
      argo.spec.syncPolicy.syncOptions.includes('RespectIgnoreDifferences=true'),
      'without it the sync applies the ignored fields anyway',
    );
  });

  it('Flux: driftIgnoreRules cover every field the release changes, only on Services under a release', () => {
    assert.ok(flux, 'a Flux Kustomization in the GitOps section');
    const rules = flux.spec.driftIgnoreRules as {
      paths: string[];
      target: { kind: string; annotationSelector: string };
    }[];
    const rule = rules.find((item) => item.target.kind === 'Service');
    assert.ok(rule, 'a rule for Services');
    assert.equal(
      differs((object) => rule.paths.flatMap((path) => pointers(object, path, 'pointer'))),
      false,
    );
    assert.equal(
      rule.target.annotationSelector,
      ANNOTATION_ORIGINAL,
      'an "exists" selector on the annotation a release keeps on its Services',
    );
    assert.ok(
      live().metadata?.annotations?.[ANNOTATION_ORIGINAL] !== undefined,
      'a Service under a release carries it',
    );
    assert.equal(
      manifest().metadata?.annotations?.[ANNOTATION_ORIGINAL],
      undefined,
      'a Service outside a release does not: Flux manages it fully again',
    );
  });
});
