// Label maps as the CanaryRelease API uses them: the selector operations of spec.services, and the
// checks the apiserver would make of a label, so a bad one is refused by field before any write.

import type { Labels } from './names.ts';
import type { SelectorOperations } from './spec-types.ts';
import type { TakeoverStatus } from './status-types.ts';

/** The selector with `remove` dropped, then `add` set. Absolute: applying it to the same input twice
 * gives the same result, so a retried step never stacks operations. */
export function applyOperations(selector: Labels, operations: SelectorOperations | undefined): Labels {
  const result: Record<string, string> = { ...selector };
  for (const key of operations?.remove ?? []) delete result[key];
  Object.assign(result, operations?.add ?? {});
  return result;
}

const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
/** A DNS subdomain (RFC 1123), as Kubernetes names and label prefixes are. */
export const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why the apiserver would refuse these labels in a selector (422), one line each; [] when valid. */
export function labelProblems(labels: Labels): string[] {
  const problems: string[] = [];
  for (const [key, value] of Object.entries(labels)) {
    const slash = key.lastIndexOf('/');
    const prefix = slash < 0 ? undefined : key.slice(0, slash);
    const name = slash < 0 ? key : key.slice(slash + 1);
    if (
      (prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) ||
      name.length > 63 ||
      !LABEL_NAME.test(name)
    ) {
      problems.push(
        `label key "${key}" is not valid (an optional DNS prefix and "/", then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)`,
      );
    }
    if (value.length > 63 || (value !== '' && !LABEL_NAME.test(value))) {
      problems.push(
        `label value "${value}" of ${key} is not valid (at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit)`,
      );
    }
  }
  return problems;
}

/** The labels status.takeover asks the proxy pods to carry: each key with the release's value. */
export function takeoverLabels(takeover: Pick<TakeoverStatus, 'keys' | 'value'>): Labels {
  return Object.fromEntries(takeover.keys.map((key) => [key, takeover.value]));
}

/** `a=1,b=2`, keys sorted, as kubectl prints selectors. */
export function formatSelector(selector: Labels): string {
  const text = Object.keys(selector)
    .sort()
    .map((key) => `${key}=${selector[key]}`)
    .join(',');
  return text === '' ? '<empty>' : text;
}
