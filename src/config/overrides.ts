// `--weight LISTENER:BACKEND=N`: replace the weight of one backend of a loaded config, for
// instance to pin a canary at 0 without editing the file. The file's weight is kept in
// `overriddenFrom` so /config and the metrics can show that an override is in force.

import { ConfigError } from '../errors.ts';
import { MAX_WEIGHT } from './validate.ts';
import type { BackendConfig, L4Config, ListenerConfig, WeightOverride } from './types.ts';

// Names are [A-Za-z0-9_.-] (validate.ts), so neither ":" nor "=" can be part of one.
const OVERRIDE_FORM = /^([A-Za-z0-9_.-]{1,63}):([A-Za-z0-9_.-]{1,63})=(\d{1,3})$/;
const EXPECTED_FORM = `expected LISTENER:BACKEND=N with N an integer 0-${MAX_WEIGHT}`;

/** Parses one `--weight` flag value; a malformed one is a ConfigError naming the flag. */
export function parseWeightOverride(flag: string): WeightOverride {
  const [, listener, backend, digits] = OVERRIDE_FORM.exec(flag) ?? [];
  const weight = Number(digits);
  if (listener === undefined || backend === undefined || !isWeight(weight)) {
    throw new ConfigError(flagSource(flag), [EXPECTED_FORM]);
  }
  return Object.freeze({ listener, backend, weight });
}

/**
 * Returns a new frozen config whose overridden backends carry the override's weight. An override
 * naming a listener or backend the config lacks, or a backend another override already set, is a
 * ConfigError: silently ignoring a mistyped name would leave the canary at the file's weight.
 */
export function applyWeightOverrides(config: L4Config, overrides: readonly WeightOverride[]): L4Config {
  const weightsByListener = new Map<string, Map<string, number>>();
  const flagByTarget = new Map<string, string>();
  for (const override of overrides) {
    const target = `${override.listener}:${override.backend}`;
    const flag = `${target}=${override.weight}`;
    const problem = overrideProblem(config, override, flagByTarget.get(target));
    if (problem !== undefined) throw new ConfigError(flagSource(flag), [problem]);
    flagByTarget.set(target, flag);
    const weights = weightsByListener.get(override.listener) ?? new Map<string, number>();
    weights.set(override.backend, override.weight);
    weightsByListener.set(override.listener, weights);
  }
  if (weightsByListener.size === 0) return config;
  return Object.freeze({
    listeners: Object.freeze(
      config.listeners.map((listener) => {
        const weights = weightsByListener.get(listener.name);
        return weights === undefined ? listener : withWeights(listener, weights);
      }),
    ),
  });
}

function overrideProblem(
  config: L4Config,
  override: WeightOverride,
  earlierFlag: string | undefined,
): string | undefined {
  // Overrides may be built in code (the proxy command), not only parsed from a flag.
  if (!isWeight(override.weight)) return EXPECTED_FORM;
  const listener = config.listeners.find((candidate) => candidate.name === override.listener);
  if (listener === undefined) return `no listener "${override.listener}"; ${listNames('listeners', config.listeners)}`;
  if (!listener.backends.some((backend) => backend.name === override.backend)) {
    return `listener "${listener.name}" has no backend "${override.backend}"; ${listNames('backends', listener.backends)}`;
  }
  if (earlierFlag !== undefined) return `one override per backend, and ${flagSource(earlierFlag)} came first`;
  return undefined;
}

function withWeights(listener: ListenerConfig, weights: ReadonlyMap<string, number>): ListenerConfig {
  const backends = listener.backends.map((backend): BackendConfig => {
    const weight = weights.get(backend.name);
    if (weight === undefined) return backend;
    // Overriding an overridden config keeps the weight the source asked for.
    return Object.freeze({ ...backend, weight, overriddenFrom: backend.overriddenFrom ?? backend.weight });
  });
  return Object.freeze({ ...listener, backends: Object.freeze(backends) });
}

function isWeight(weight: number): boolean {
  return Number.isInteger(weight) && weight >= 0 && weight <= MAX_WEIGHT;
}

function flagSource(flag: string): string {
  return `--weight ${JSON.stringify(flag)}`;
}

function listNames(what: string, items: readonly { readonly name: string }[]): string {
  return items.length === 0 ? `there are no ${what}` : `the ${what} are ${items.map((item) => item.name).join(', ')}`;
}
