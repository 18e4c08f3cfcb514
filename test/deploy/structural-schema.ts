// A custom resource checked against its CRD's schema as `kubectl apply` (strict field validation)
// would find it on a real API server: the fake apiserver's own admission
// (test/support/fake-apiserver/resources/structural-schema.ts), one line per problem, so a test can say what
// the schema refuses without starting a server.

import { clone, type KObject } from '../support/fake-apiserver/wire/json.ts';
import { pruneAndDefault, validateObject } from '../support/fake-apiserver/resources/structural-schema.ts';

/** A CRD version's `schema.openAPIV3Schema`. */
export type StructuralSchema = KObject;

/**
 * The problems of `object` against `schema`, as kube-apiserver words them: `path: unknown field`
 * for a field strict validation refuses, `path: <the 422 cause>` for an invalid value; none = valid.
 */
export function validate(object: unknown, schema: StructuralSchema): string[] {
  const copy = clone(object as KObject);
  const unknown = pruneAndDefault(copy, schema, 'main').map((path) => `${path}: unknown field`);
  return [...unknown, ...validateObject(copy, schema, 'main').map((cause) => `${cause.field}: ${cause.message}`)];
}
