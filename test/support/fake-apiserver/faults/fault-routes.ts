/**
 * Fault injection over HTTP, for failure drills against `npm run fake-apiserver` from any client:
 * `POST /_fake/faults/{fail-next,latency,drop-watches,refuse}` and `DELETE /_fake/faults`. These
 * requests bypass injected faults and latency and are not logged in `api.requests`. Bodies are
 * checked strictly (unknown fields too), so a typo is a 400 naming the field, not a silent no-op.
 */
import { type ApiError, errors } from '../wire/errors.ts';
import type { FailRule, FakeFaults } from './faults.ts';
import { isObject } from '../wire/json.ts';

export const CONTROL_PREFIX = '/_fake/';

const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];
const MAX_MS = 600_000;

export interface ControlReply {
  code: number;
  body: unknown;
  /** Run once the reply has been flushed (refusing connections must not cut its own answer). */
  afterFlush?: () => void;
}

/** Answer one `/_fake/...` request. Throws {@link ApiError} (400/404/405) for bad requests. */
export function handleControl(faults: FakeFaults, method: string, path: string, body: unknown): ControlReply {
  const route = path.replace(/\/+$/, '');
  if (route === '/_fake/faults') {
    if (method !== 'DELETE') throw errors.methodNotAllowed();
    faults.reset();
    return { code: 200, body: { reset: true } };
  }
  const action = /^\/_fake\/faults\/([a-z-]+)$/.exec(route)?.[1];
  const handler = action === undefined ? undefined : ACTIONS[action];
  if (!handler) throw errors.noRoute();
  if (method !== 'POST') throw errors.methodNotAllowed();
  return handler(faults, new Fields(action!, body));
}

const ACTIONS: Record<string, (faults: FakeFaults, b: Fields) => ControlReply> = {
  'fail-next': (faults, b) => {
    b.allow(['user', 'verb', 'resource', 'subresource', 'code', 'count', 'message']);
    const rule: FailRule = { code: b.integer('code', 400, 599, true)! };
    const verb = b.string('verb');
    if (verb !== undefined && !VERBS.includes(verb)) throw b.bad('verb', `must be one of ${VERBS.join(', ')}`);
    if (verb !== undefined) rule.verb = verb;
    const resource = b.string('resource');
    const subresource = b.string('subresource', true);
    if (resource === '' || (resource !== undefined && !/^[a-z0-9.-]+(\/[a-z]+)?$/.test(resource)))
      throw b.bad('resource', 'must be a plural resource name, optionally /subresource');
    if (resource?.includes('/') && subresource !== undefined)
      throw b.bad('subresource', 'give it either here or in resource, not both');
    if (resource !== undefined) rule.resource = resource;
    if (subresource !== undefined) rule.subresource = subresource;
    const count = b.integer('count', 1, Number.MAX_SAFE_INTEGER);
    if (count !== undefined) rule.count = count;
    const message = b.string('message');
    if (message !== undefined) rule.message = message;
    const user = b.string('user');
    if (user !== undefined) rule.user = user;
    faults.failNext(rule);
    return { code: 200, body: { count: 1, ...rule } };
  },
  latency: (faults, b) => {
    b.allow(['ms']);
    const ms = b.integer('ms', 0, MAX_MS, true)!;
    faults.setLatency(ms);
    return { code: 200, body: { ms } };
  },
  'drop-watches': (faults, b) => {
    b.allow(['abrupt']);
    const abrupt = b.boolean('abrupt') ?? false;
    return { code: 200, body: { dropped: faults.dropWatches({ abrupt }) } };
  },
  refuse: (faults, b) => {
    b.allow(['ms']);
    const ms = b.integer('ms', 1, MAX_MS, true)!;
    const refuse = () =>
      void faults
        .refuseConnections(ms)
        .catch((e: unknown) => console.error('fake-apiserver: could not reopen the listener', e));
    return { code: 202, body: { refusingForMs: ms }, afterFlush: refuse };
  },
};

/** Typed, strict reads of a control request's JSON body; errors name the field. */
class Fields {
  readonly #action: string;
  readonly #body: Record<string, unknown>;

  constructor(action: string, body: unknown) {
    this.#action = action;
    if (body !== undefined && !isObject(body)) throw errors.badRequest(`${action}: the body must be a JSON object`);
    this.#body = body ?? {};
  }

  bad(field: string, why: string): ApiError {
    return errors.badRequest(`${this.#action}: ${field}: ${why}`);
  }

  allow(fields: string[]): void {
    const unknown = Object.keys(this.#body).find((k) => !fields.includes(k));
    if (unknown !== undefined) throw this.bad(unknown, `unknown field (known: ${fields.join(', ')})`);
  }

  string(field: string, emptyAllowed = false): string | undefined {
    const v = this.#body[field];
    if (v === undefined) return undefined;
    if (typeof v !== 'string' || (!emptyAllowed && v === ''))
      throw this.bad(field, emptyAllowed ? 'must be a string' : 'must be a non-empty string');
    return v;
  }

  integer(field: string, min: number, max: number, required = false): number | undefined {
    const v = this.#body[field];
    if (v === undefined && !required) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max)
      throw this.bad(field, `${v === undefined ? 'required, ' : ''}must be an integer from ${min} to ${max}`);
    return v;
  }

  boolean(field: string): boolean | undefined {
    const v = this.#body[field];
    if (v !== undefined && typeof v !== 'boolean') throw this.bad(field, 'must be true or false');
    return v;
  }
}
