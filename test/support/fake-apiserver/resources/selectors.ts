/**
 * Label and field selectors, parsed the way kube-apiserver parses the `labelSelector` and
 * `fieldSelector` query parameters. Pure; a parse error throws {@link SelectorError}.
 */

export class SelectorError extends Error {}

export type LabelRequirement =
  | { key: string; op: 'eq' | 'neq'; value: string }
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: 'exists' | 'notexists' };

export type Labels = Record<string, string> | undefined;

const KEY_RE =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const VALUE_RE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

function checkKey(key: string): string {
  if (!KEY_RE.test(key) || key.length > 316) throw new SelectorError(`invalid label key "${key}"`);
  return key;
}
function checkValue(value: string): string {
  if (!VALUE_RE.test(value) || value.length > 63) throw new SelectorError(`invalid label value: "${value}"`);
  return value;
}

/** Split on commas that are not inside parentheses. */
function splitTopLevel(s: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if (ch === '(') depth++;
    if (ch === ')') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  return parts;
}

/** Parse a label selector (`a=b,c!=d,e in (x,y),f notin (z),g,!h`). Empty → matches everything. */
export function parseLabelSelector(selector: string | undefined): LabelRequirement[] {
  if (selector === undefined || selector.trim() === '') return [];
  const reqs: LabelRequirement[] = [];
  for (const raw of splitTopLevel(selector)) {
    const term = raw.trim();
    if (term === '') throw new SelectorError(`invalid selector: empty term in "${selector}"`);
    let m: RegExpMatchArray | null;
    if ((m = term.match(/^(\S+)\s+(in|notin)\s*\(([^)]*)\)$/))) {
      const values = m[3]!
        .split(',')
        .map((v) => v.trim())
        .map(checkValue);
      if (values.length === 0 || (values.length === 1 && values[0] === '' && m[2] === 'in'))
        throw new SelectorError(`for 'in', 'notin' operators, values set can't be empty`);
      reqs.push({ key: checkKey(m[1]!), op: m[2] as 'in' | 'notin', values });
    } else if ((m = term.match(/^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/))) {
      reqs.push({ key: checkKey(m[1]!), op: m[2] === '!=' ? 'neq' : 'eq', value: checkValue(m[3]!.trim()) });
    } else if ((m = term.match(/^!\s*(\S+)$/))) {
      reqs.push({ key: checkKey(m[1]!), op: 'notexists' });
    } else if ((m = term.match(/^(\S+)$/))) {
      reqs.push({ key: checkKey(m[1]!), op: 'exists' });
    } else {
      throw new SelectorError(`unable to parse requirement: "${term}"`);
    }
  }
  return reqs;
}

export function matchLabels(reqs: LabelRequirement[], labels: Labels): boolean {
  const l = labels ?? {};
  for (const r of reqs) {
    const has = Object.hasOwn(l, r.key);
    const v = l[r.key];
    switch (r.op) {
      case 'eq':
        if (!has || v !== r.value) return false;
        break;
      case 'neq':
        if (has && v === r.value) return false;
        break;
      case 'in':
        if (!has || !r.values.includes(v!)) return false;
        break;
      case 'notin':
        if (has && r.values.includes(v!)) return false;
        break;
      case 'exists':
        if (!has) return false;
        break;
      case 'notexists':
        if (has) return false;
        break;
    }
  }
  return true;
}

export interface FieldRequirement {
  field: string;
  op: 'eq' | 'neq';
  value: string;
}

/** Parse a field selector (`metadata.name=x,metadata.namespace!=y`). Empty → matches everything. */
export function parseFieldSelector(selector: string | undefined, supported: readonly string[]): FieldRequirement[] {
  if (selector === undefined || selector.trim() === '') return [];
  const reqs: FieldRequirement[] = [];
  for (const raw of selector.split(',')) {
    const term = raw.trim();
    const m = term.match(/^([^=!]+?)\s*(==|=|!=)\s*(.*)$/);
    if (!m) throw new SelectorError(`invalid selector: '${selector}'; can't understand '${term}'`);
    const field = m[1]!;
    if (!supported.includes(field)) throw new SelectorError(`field label not supported: ${field}`);
    reqs.push({ field, op: m[2] === '!=' ? 'neq' : 'eq', value: m[3]! });
  }
  return reqs;
}

/** Read a dotted field path (`metadata.name`, `spec.nodeName`) as a string, '' when absent. */
export function fieldValue(obj: unknown, path: string): string {
  let cur: unknown = obj;
  for (const part of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return '';
    cur = (cur as Record<string, unknown>)[part];
  }
  if (cur === undefined || cur === null) return '';
  return String(cur);
}

export function matchFields(
  reqs: FieldRequirement[],
  obj: unknown,
  read: (obj: any, field: string) => string = fieldValue,
): boolean {
  for (const r of reqs) {
    const v = read(obj, r.field);
    if (r.op === 'eq' ? v !== r.value : v === r.value) return false;
  }
  return true;
}

/**
 * A LabelSelector object (matchLabels, matchExpressions) as selector text, requirements sorted by
 * key (metav1.LabelSelectorAsSelector(...).String()); '' when it selects everything, '<error>' for
 * an operator it does not know.
 */
export function formatLabelSelector(
  selector: { matchLabels?: Record<string, string>; matchExpressions?: Array<Record<string, any>> } | undefined,
): string {
  const terms: Array<[string, string]> = Object.entries(selector?.matchLabels ?? {}).map(([k, v]) => [k, `${k}=${v}`]);
  for (const e of selector?.matchExpressions ?? []) {
    const values = [...((e.values ?? []) as string[])].sort().join(',');
    const term = (
      {
        In: `${e.key} in (${values})`,
        NotIn: `${e.key} notin (${values})`,
        Exists: `${e.key}`,
        DoesNotExist: `!${e.key}`,
      } as Record<string, string>
    )[String(e.operator)];
    terms.push([String(e.key), term ?? '<error>']);
  }
  return terms
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, term]) => term)
    .join(',');
}

/** Whether `labels` match a LabelSelector object (an empty selector matches everything). */
export function labelSelectorMatches(selector: Parameters<typeof formatLabelSelector>[0], labels: Labels): boolean {
  return matchLabels(parseLabelSelector(formatLabelSelector(selector)), labels);
}
