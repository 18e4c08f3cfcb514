/**
 * Kubernetes `Status` error bodies. Every failure the fake returns goes through {@link ApiError} so
 * that the HTTP code, `reason` and body match what kube-apiserver sends (client-node puts the raw
 * body in `ApiException.body`, kubectl prints `message`).
 */

export type StatusReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'Forbidden'
  | 'NotFound'
  | 'MethodNotAllowed'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'Expired'
  | 'UnsupportedMediaType'
  | 'Invalid'
  | 'TooManyRequests'
  | 'InternalError'
  | 'Timeout'
  | 'ServiceUnavailable'
  // StatusReasonUnknown: what a plain error becomes (500), e.g. a server-side apply's typed-patch error.
  | '';

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  uid?: string;
  causes?: Array<{ reason?: string; message?: string; field?: string }>;
  retryAfterSeconds?: number;
}

export interface StatusBody {
  kind: 'Status';
  apiVersion: 'v1';
  metadata: Record<string, never>;
  status: 'Failure' | 'Success';
  message?: string;
  reason?: StatusReason;
  details?: StatusDetails;
  code: number;
}

/** The reason kube-apiserver uses for a bare HTTP code (used by fault injection). */
export function reasonForCode(code: number): StatusReason {
  const table: Record<number, StatusReason> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    405: 'MethodNotAllowed',
    409: 'Conflict',
    410: 'Expired',
    415: 'UnsupportedMediaType',
    422: 'Invalid',
    429: 'TooManyRequests',
    500: 'InternalError',
    503: 'ServiceUnavailable',
    504: 'Timeout',
  };
  return table[code] ?? 'InternalError';
}

/** Thrown by handlers; the HTTP layer turns it into a Status response. */
export class ApiError extends Error {
  readonly code: number;
  readonly reason: StatusReason;
  readonly details: StatusDetails | undefined;

  constructor(code: number, reason: StatusReason, message: string, details?: StatusDetails) {
    super(message);
    this.code = code;
    this.reason = reason;
    this.details = details;
  }

  toStatus(): StatusBody {
    const body: StatusBody = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: this.message,
      reason: this.reason,
      code: this.code,
    };
    if (this.details) body.details = this.details;
    return body;
  }
}

/** `services` or `canaryreleases.canary-l4.io`, as used in apiserver messages. */
export function qualifiedResource(group: string, resource: string): string {
  return group ? `${resource}.${group}` : resource;
}

export const errors = {
  notFound(group: string, resource: string, name: string): ApiError {
    return new ApiError(404, 'NotFound', `${qualifiedResource(group, resource)} "${name}" not found`, {
      name,
      group,
      kind: resource,
    });
  },
  /** Unknown path: same text kube-apiserver uses. */
  noRoute(): ApiError {
    return new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});
  },
  alreadyExists(group: string, resource: string, name: string): ApiError {
    return new ApiError(409, 'AlreadyExists', `${qualifiedResource(group, resource)} "${name}" already exists`, {
      name,
      group,
      kind: resource,
    });
  },
  conflict(group: string, resource: string, name: string, why?: string): ApiError {
    const reason = why ?? 'the object has been modified; please apply your changes to the latest version and try again';
    return new ApiError(
      409,
      'Conflict',
      `Operation cannot be fulfilled on ${qualifiedResource(group, resource)} "${name}": ${reason}`,
      { name, group, kind: resource },
    );
  },
  invalid(
    group: string,
    kind: string,
    name: string,
    causes: Array<{ field: string; message: string; reason?: string }>,
  ): ApiError {
    // An aggregate of several errors prints as a bracketed list (utilerrors.NewAggregate).
    const each = causes.map((c) => `${c.field}: ${c.message}`);
    const summary = each.length === 1 ? each[0] : `[${each.join(', ')}]`;
    return new ApiError(422, 'Invalid', `${kind}${group ? `.${group}` : ''} "${name}" is invalid: ${summary}`, {
      name,
      group,
      kind,
      causes: causes.map((c) => ({ reason: c.reason ?? 'FieldValueInvalid', message: c.message, field: c.field })),
    });
  },
  /** A plain error inside kube-apiserver (not an API status): 500 with no reason. */
  plain(message: string): ApiError {
    return new ApiError(500, '', message);
  },
  badRequest(message: string): ApiError {
    return new ApiError(400, 'BadRequest', message);
  },
  forbidden(group: string, resource: string, name: string, message: string): ApiError {
    return new ApiError(403, 'Forbidden', `${qualifiedResource(group, resource)} "${name}" is forbidden: ${message}`, {
      name,
      group,
      kind: resource,
    });
  },
  methodNotAllowed(): ApiError {
    return new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
  },
  unsupportedMediaType(contentType: string, accepted: string[]): ApiError {
    return new ApiError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: ${accepted.join(', ')}`,
      { causes: [{ reason: 'UnsupportedMediaType', message: contentType }] },
    );
  },
  expired(message: string): ApiError {
    return new ApiError(410, 'Expired', message);
  },
  fromCode(code: number, message?: string): ApiError {
    const reason = reasonForCode(code);
    const details: StatusDetails | undefined = code === 429 ? { retryAfterSeconds: 1 } : undefined;
    return new ApiError(code, reason, message ?? `injected fault: ${reason}`, details);
  },
};
