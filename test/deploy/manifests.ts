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
    assert.deepEqual(document.errors.map((error) => error.message), [], `${file} document ${index + 1} is not valid YAML`);
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
    typeof apiVersion === 'string' && apiVersion !== '' && typeof kind === 'string' && kind !== '' &&
    typeof metadata === 'object' && metadata !== null && typeof (metadata as Record<string, unknown>).name === 'string'
  );
}

/** The YAML manifests of deploy/ (kustomization.yaml is not one). */
export function manifestFiles(): string[] {
  return readdirSync(deployDir).filter((file) => file.endsWith('.yaml') && file !== 'kustomization.yaml').sort();
}

export function allObjects(): KubeObject[] {
  return manifestFiles().flatMap(loadManifest);
}

/** The single object of a kind across deploy/, typed as the caller knows it to be. */
export function theOnly<T>(kind: string): T {
  const found = allObjects().filter((object) => object.kind === kind);
  assert.equal(found.length, 1, `deploy/ holds exactly one ${kind}`);
  return found[0] as T;
}
