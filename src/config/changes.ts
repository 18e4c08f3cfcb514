// What a new config changes of the one served, for the reload's log line: the listeners added,
// removed or otherwise changed, and each backend weight that moved. Pure.

import { isDeepStrictEqual } from 'node:util';
import type { L4Config, ListenerConfig } from './types.ts';

export interface ConfigChanges {
  /** Listener names. */
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** Listeners kept whose settings other than their backends' weights changed. */
  readonly changed: readonly string[];
  /** `web: canary 10→20, stable 90→80`: one entry per listener whose weights moved (a backend added or removed: `new`, `gone`). */
  readonly weights: readonly string[];
}

const withoutWeights = (listener: ListenerConfig) => ({
  ...listener,
  backends: listener.backends.map(({ weight: _weight, overriddenFrom: _from, ...backend }) => backend),
});

/** What `after` changes of `before`, listeners by name. */
export function configChanges(before: L4Config, after: L4Config): ConfigChanges {
  const old = new Map(before.listeners.map((listener) => [listener.name, listener]));
  const kept = after.listeners.filter((listener) => old.has(listener.name));
  const names = new Set(after.listeners.map((listener) => listener.name));
  return {
    added: after.listeners.filter((listener) => !old.has(listener.name)).map((listener) => listener.name),
    removed: before.listeners.filter((listener) => !names.has(listener.name)).map((listener) => listener.name),
    changed: kept
      .filter((listener) => !isDeepStrictEqual(withoutWeights(old.get(listener.name)!), withoutWeights(listener)))
      .map((listener) => listener.name),
    weights: kept.flatMap((listener) => {
      const moved = weightMoves(old.get(listener.name)!, listener);
      return moved.length === 0 ? [] : [`${listener.name}: ${moved.join(', ')}`];
    }),
  };
}

/** `canary 10→20` per backend whose weight moved, by name. */
function weightMoves(before: ListenerConfig, after: ListenerConfig): string[] {
  const old = new Map(before.backends.map((backend) => [backend.name, backend.weight]));
  const names = new Set(after.backends.map((backend) => backend.name));
  return [
    ...after.backends.flatMap((backend) => {
      const was = old.get(backend.name);
      if (was === backend.weight) return [];
      return [`${backend.name} ${was === undefined ? 'new' : was}→${backend.weight}`];
    }),
    ...before.backends
      .filter((backend) => !names.has(backend.name))
      .map((backend) => `${backend.name} ${backend.weight}→gone`),
  ];
}
