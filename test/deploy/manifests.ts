// The manifests of deploy/, parsed as kubectl would read them (multi-document YAML, anchors).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { parseAllDocuments } from 'yaml';

export const deployDir = new URL('../../deploy/', import.meta.url);

export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly labels?: Record<string, string> };
  readonly [field: string]: unknown;
}

/** Every document of one file of deploy/; fails on a YAML error or a document that is not an API object. */
export function loadManifest(file: string): KubeObject[] {
  const documents = parseAllDocuments(readFileSync(new URL(file, deployDir), 'utf8'));
  return documents.flatMap((document, index) => {
    assert.deepEqual(
      document.errors.map((error) => error.message),
      [],
      `${file} document ${index + 1} is not valid YAML`,
    );
    const object: unknown = document.toJS();
    if (object === null) return [];
    assert.ok(isKubeObject(object), `${file} document ${index + 1} lacks apiVersion, kind or metadata.name`);
    return [object];
  });
}

function isKubeObject(value: unknown): value is KubeObject {
  if (typeof value !== 'object' || value === null) return false;
  const { apiVersion, kind, metadata } = value as Record<string, unknown>;
  return (
    typeof apiVersion === 'string' &&
    apiVersion !== '' &&
    typeof kind === 'string' &&
    kind !== '' &&
    typeof metadata === 'object' &&
    metadata !== null &&
    typeof (metadata as Record<string, unknown>).name === 'string'
  );
}

/** The YAML manifests of a folder of deploy/ ('' for deploy/ itself; kustomization.yaml is not one). */
export function manifestFiles(folder = ''): string[] {
  return readdirSync(new URL(folder, deployDir))
    .filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml')
    .sort()
    .map((file) => `${folder}${file}`);
}

export function allObjects(folder = ''): KubeObject[] {
  return manifestFiles(folder).flatMap(loadManifest);
}

/** The single object of a kind in a folder of deploy/, typed as the caller knows it to be. */
export function theOnly<T>(kind: string, folder = ''): T {
  const found = allObjects(folder).filter((object) => object.kind === kind);
  assert.equal(found.length, 1, `deploy/${folder} holds exactly one ${kind}`);
  return found[0] as T;
}

/** The object of a kind and name in a folder of deploy/. */
export function named<T>(kind: string, name: string, folder = ''): T {
  const found = allObjects(folder).find((object) => object.kind === kind && object.metadata.name === name);
  assert.ok(found, `deploy/${folder} holds ${kind} ${name}`);
  return found as T;
}
