/**
 * Fault injection state: fail the next N matching requests with a code, add latency. Dropping
 * watches, compaction and connection refusal act on other modules and are wired in server.ts.
 */
import { type ApiError, errors } from '../wire/errors.ts';
import type { RequestInfo } from '../wire/request-info.ts';

export interface FailRule {
  /** RBAC verb (get/list/watch/create/update/patch/delete/deletecollection); any when absent. */
  verb?: string;
  /** Plural resource (`services`), or `resource/subresource` (`canaryreleases/status`); any when absent. */
  resource?: string;
  /** `status`; `''` matches only the main resource; any (main resource or subresource) when absent. */
  subresource?: string;
  /** Only requests of this client (its bearer token, which stands for the user); any when absent. */
  user?: string;
  /** HTTP status to answer with (Status body with the matching reason). */
  code: number;
  /** How many matching requests fail (default 1). */
  count?: number;
  message?: string;
}

/** The fault controls, the same in process (`api.faults`) and over HTTP (`/_fake/faults`). */
export interface FakeFaults {
  /** Fail the next `count` (default 1) requests matching verb/resource/subresource with `code` (Status body). */
  failNext(rule: FailRule): void;
  /** Delay every request by `ms` before it is handled (0 turns it off). */
  setLatency(ms: number): void;
  /** End every open watch stream; clients re-watch from their last RV. `abrupt` resets the sockets instead. */
  dropWatches(opts?: { abrupt?: boolean }): number;
  /** Advance the compaction floor to the current RV: watches from older RVs get 410 Expired. */
  compact(): void;
  /** Close the listener and every connection; reopen on the same port after `ms`. Resolves when reopened. */
  refuseConnections(ms: number): Promise<void>;
  /** Forget pending failNext rules and latency. */
  reset(): void;
}

interface PendingRule {
  user: string | undefined;
  verb: string | undefined;
  resource: string | undefined;
  subresource: string | undefined;
  code: number;
  message: string | undefined;
  left: number;
}

export class FaultState {
  #rules: PendingRule[] = [];
  latencyMs = 0;

  failNext(rule: FailRule): void {
    // `resource: 'pods/status'` is shorthand for `resource: 'pods', subresource: 'status'`.
    const [resource, subresource] = rule.resource?.includes('/')
      ? rule.resource.split('/', 2)
      : [rule.resource, rule.subresource];
    this.#rules.push({
      user: rule.user,
      verb: rule.verb,
      resource,
      subresource,
      code: rule.code,
      message: rule.message,
      left: rule.count ?? 1,
    });
  }

  clear(): void {
    this.#rules = [];
    this.latencyMs = 0;
  }

  /** The injected error for this resource request, if a rule matches (consumes one count). */
  take(info: RequestInfo, user: string): ApiError | undefined {
    if (info.resource === undefined) return undefined;
    const rule = this.#rules.find(
      (r) =>
        (r.user === undefined || r.user === user) &&
        (r.verb === undefined || r.verb === info.verb) &&
        (r.resource === undefined || r.resource === info.resource) &&
        (r.subresource === undefined || r.subresource === info.subresource),
    );
    if (!rule) return undefined;
    if (--rule.left <= 0) this.#rules = this.#rules.filter((r) => r !== rule);
    return errors.fromCode(rule.code, rule.message);
  }
}
