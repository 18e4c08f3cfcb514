/**
 * Fault injection state: fail the next N matching requests with a code, add latency. Dropping
 * watches, compaction and connection refusal act on other modules and are wired in server.ts.
 */
import { type ApiError, errors } from './errors.ts';
import type { RequestInfo } from './request-info.ts';

export interface FailRule {
  /** RBAC verb (get/list/watch/create/update/patch/delete); any when absent. */
  verb?: string;
  /** Plural resource (`services`), or `resource/subresource` (`canaryreleases/status`); any when absent. */
  resource?: string;
  /** HTTP status to answer with (Status body with the matching reason). */
  code: number;
  /** How many matching requests fail (default 1). */
  count?: number;
  message?: string;
}

export class FaultState {
  #rules: Array<FailRule & { left: number }> = [];
  latencyMs = 0;

  failNext(rule: FailRule): void {
    this.#rules.push({ ...rule, left: rule.count ?? 1 });
  }

  clear(): void {
    this.#rules = [];
    this.latencyMs = 0;
  }

  /** The injected error for this resource request, if a rule matches (consumes one count). */
  take(info: RequestInfo): ApiError | undefined {
    if (info.resource === undefined) return undefined;
    const full = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
    for (const r of this.#rules) {
      if (r.left <= 0) continue;
      if (r.verb !== undefined && r.verb !== info.verb) continue;
      if (r.resource !== undefined && r.resource !== full && r.resource !== info.resource) continue;
      r.left--;
      this.#rules = this.#rules.filter((x) => x.left > 0);
      return errors.fromCode(r.code, r.message);
    }
    return undefined;
  }
}
