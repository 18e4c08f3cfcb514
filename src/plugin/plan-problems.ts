// The problems `kubectl canary-l4 plan` gives a release: what `kubectl apply` would meet (the API
// server's schema, asked by a dry run) and what the controller would (the one validation and the
// world), each problem once. The API server and validate.ts refuse some fields alike (a weight of
// 150): the API's words for a field the controller's problems already name are dropped. Pure.

import type { Admission } from './cluster.ts';

/** `admission`'s refusal, less the fields `problems` already name, then `problems`. */
export function planProblems(admission: Admission, problems: readonly string[]): string[] {
  const refusal = admissionProblem(admission, problems);
  return [...(refusal === undefined ? [] : [refusal]), ...problems];
}

function admissionProblem(admission: Admission, problems: readonly string[]): string | undefined {
  if (admission.refused === undefined) return undefined;
  const causes = admission.causes ?? [];
  // A refusal that names no field (a typed patch the API could not build) is said as it is.
  if (causes.length === 0) return `kubectl apply would be refused: ${admission.refused}`;
  const unsaid = causes.filter((cause) => !problems.some((problem) => problem.startsWith(`${cause.field}: `)));
  return unsaid.length === 0
    ? undefined
    : `kubectl apply would be refused: ${unsaid.map((cause) => `${cause.field}: ${cause.message}`).join('; ')}`;
}
