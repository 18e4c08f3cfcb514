// A label selector (matchLabels and matchExpressions) against a namespace's labels: what a listener's
// allowedRoutes.namespaces `from: Selector` admits.
import type { LabelSelector } from '../../api/gateway/types.ts';

export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const expression of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, expression.key);
    const value = labels[expression.key];
    const listed = value !== undefined && (expression.values ?? []).includes(value);
    const holds = {
      In: has && listed,
      NotIn: !has || !listed,
      Exists: has,
      DoesNotExist: !has,
    }[expression.operator];
    if (!holds) return false;
  }
  return true;
}
