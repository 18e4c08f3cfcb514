// Generic readers for a parsed document, shared by every part of the L4 config. Each reader
// records a one-line problem (`<path>: <what is wrong>, got <value>`) and returns a placeholder,
// so that a single pass over the document finds every problem.

import { closestKey } from '../util/closest.ts';

export const DOCUMENT_PATH = '(document)';

export interface IntegerRule {
  readonly min: number;
  readonly max: number;
  readonly expected: string;
}

type Mapping = Readonly<Record<string, unknown>>;

export function isMapping(value: unknown): value is Mapping {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A mapping whose keys are all known; an unknown key gets a "did you mean" when one is close. */
export function readMapping(
  value: unknown,
  path: string,
  knownKeys: readonly string[],
  problems: string[],
): Mapping | undefined {
  if (!isMapping(value)) {
    problems.push(`${path}: must be a mapping, got ${describe(value)}`);
    return undefined;
  }
  for (const key of Object.keys(value)) {
    if (knownKeys.includes(key)) continue;
    const suggestion = closestKey(key, knownKeys);
    const hint = suggestion === undefined ? `; known keys: ${knownKeys.join(', ')}` : `, did you mean "${suggestion}"?`;
    problems.push(`${childPath(path, key)}: unknown key${hint}`);
  }
  return value;
}

export function readList(
  value: unknown,
  path: string,
  minLength: number,
  expected: string,
  problems: string[],
): readonly unknown[] {
  if (value === undefined) {
    problems.push(`${path}: is required (${expected})`);
    return [];
  }
  if (!Array.isArray(value) || value.length < minLength) {
    problems.push(`${path}: must be ${expected}, got ${describe(value)}`);
    return Array.isArray(value) ? value : [];
  }
  return value;
}

/** An integer within the rule; `fallback` is the default, and without one the field is required. */
export function readInteger(
  value: unknown,
  path: string,
  rule: IntegerRule,
  problems: string[],
  fallback?: number,
): number {
  if (value === undefined) {
    if (fallback !== undefined) return fallback;
    problems.push(`${path}: is required (${rule.expected})`);
    return rule.min;
  }
  if (typeof value === 'number' && Number.isInteger(value) && value >= rule.min && value <= rule.max) return value;
  problems.push(`${path}: must be ${rule.expected}, got ${describe(value)}`);
  return rule.min;
}

export function readBoolean(value: unknown, path: string, problems: string[], fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value === 'boolean') return value;
  problems.push(`${path}: must be true or false, got ${describe(value)}`);
  return fallback;
}

export function readChoice<T extends string>(
  value: unknown,
  path: string,
  choices: readonly T[],
  fallback: T,
  problems: string[],
): T {
  if (value === undefined) return fallback;
  const choice = choices.find((candidate) => candidate === value);
  if (choice !== undefined) return choice;
  problems.push(
    `${path}: must be ${choices.map((candidate) => `"${candidate}"`).join(' or ')}, got ${describe(value)}`,
  );
  return fallback;
}

// ---- problem wording -------------------------------------------------------------------------

function childPath(path: string, key: string): string {
  const segment = /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
  return path === DOCUMENT_PATH ? segment.replace(/^\./, '') : `${path}${segment}`;
}

/** A value as the user wrote it, short enough for one line. */
export function describe(value: unknown): string {
  let text = typeof value === 'string' ? JSON.stringify(value) : String(value);
  if (typeof value === 'object' && value !== null) {
    try {
      text = JSON.stringify(value);
    } catch {
      text = Array.isArray(value) ? 'a list' : 'a mapping'; // a circular YAML alias
    }
  }
  return text.length <= 80 ? text : `${text.slice(0, 77)}...`;
}
