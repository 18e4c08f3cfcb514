// Patch content types and API error decoding. client-node sends `application/json-patch+json`
// unless told otherwise (kubernetes-client/javascript#1398), so every patch names its type here.
import { ApiException, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import type { CallOptions } from './client.ts';

/** RFC 7386 merge patch: null deletes a key. Works for built-in kinds and custom resources.
 * `options` (a deadline, a cancel signal) are kept. */
export function mergePatch(options?: CallOptions): CallOptions {
  return setHeaderOptions('Content-Type', PatchStrategy.MergePatch, options);
}

/** RFC 6902 JSON patch: a list of operations, `test` ones guarding the others. */
export function jsonPatch(options?: CallOptions): CallOptions {
  return setHeaderOptions('Content-Type', PatchStrategy.JsonPatch, options);
}

/** Server-side apply (a JSON body is YAML): what `kubectl apply --server-side` sends. */
export function serverSideApply(options?: CallOptions): CallOptions {
  return setHeaderOptions('Content-Type', PatchStrategy.ServerSideApply, options);
}

/** Strategic merge patch: built-in kinds only (a Deployment's template, merged by the apiserver). */
export function strategicMergePatch(options?: CallOptions): CallOptions {
  return setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch, options);
}

export interface ApiFailure {
  readonly code: number;
  readonly reason: string;
  readonly message: string;
  /** An Invalid (422) Status's details.causes: each field refused, and why. */
  readonly causes: readonly FieldCause[];
}

export interface FieldCause {
  /** `spec.services[0].ports[0].config.weight`. */
  readonly field: string;
  /** `Invalid value: 150: … should be less than or equal to 100`. */
  readonly message: string;
}

/** The Kubernetes Status behind an error, when there is one (ApiException.body is a JSON string). */
export function apiFailure(err: unknown): ApiFailure | undefined {
  if (err instanceof ApiException) {
    let status: { reason?: string; message?: string; details?: { causes?: Partial<FieldCause>[] } } = {};
    try {
      status = typeof err.body === 'string' ? JSON.parse(err.body) : (err.body as typeof status);
    } catch {
      // not JSON: keep the HTTP code alone
    }
    const causes = (status?.details?.causes ?? []).flatMap((cause) =>
      typeof cause.field === 'string' ? [{ field: cause.field, message: String(cause.message ?? '') }] : [],
    );
    return { code: err.code, reason: status?.reason ?? '', message: status?.message ?? err.message, causes };
  }
  const statusCode = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof statusCode === 'number'
    ? { code: statusCode, reason: '', message: String((err as Error).message), causes: [] }
    : undefined;
}

export const isNotFound = (err: unknown): boolean => apiFailure(err)?.code === 404;
export const isConflict = (err: unknown): boolean => apiFailure(err)?.code === 409;
export const isAlreadyExists = (err: unknown): boolean => apiFailure(err)?.reason === 'AlreadyExists';

/** One line for logs and conditions. */
export function describeError(err: unknown): string {
  const failure = apiFailure(err);
  if (failure) return `${failure.code}${failure.reason ? ` ${failure.reason}` : ''}: ${failure.message}`;
  return err instanceof Error ? err.message : String(err);
}
