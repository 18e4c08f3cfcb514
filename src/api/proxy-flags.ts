// The flags of `canary-l4 proxy` that carry structure: `--weight SERVICE:PORT=PCT`,
// `--proxy-selector key=value,...` and `--port-base`. A malformed value is a ConfigError naming the flag, so the
// command fails at startup with one line instead of running with a mistyped override.

import { ConfigError } from '../errors.ts';
import type { Labels } from './names.ts';

/** `--weight SERVICE:PORT=PCT`: the canary weight of every protocol of that port. */
export interface PortWeightOverride {
  readonly service: string;
  readonly port: number;
  readonly weight: number;
}
/** Service names are DNS-1035 labels, so neither ":" nor "=" can be part of one. */
const WEIGHT_FORM = /^([a-z]([-a-z0-9]{0,61}[a-z0-9])?):(\d{1,5})=(\d{1,3})$/;
const WEIGHT_EXPECTED = 'expected SERVICE:PORT=PCT, PORT 1-65535 and PCT (the canary weight) an integer 0-100';

export function parsePortWeight(flag: string): PortWeightOverride {
  const match = WEIGHT_FORM.exec(flag);
  const port = Number(match?.[3]);
  const weight = Number(match?.[4]);
  const service = match?.[1];
  if (service === undefined || port < 1 || port > 65_535 || weight > 100)
    throw new ConfigError(`--weight ${JSON.stringify(flag)}`, [WEIGHT_EXPECTED]);
  return { service, port, weight };
}

/** Every --weight flag; a port named twice is an error rather than a silent "last one wins". */
export function parsePortWeights(flags: readonly string[]): PortWeightOverride[] {
  const overrides = flags.map(parsePortWeight);
  overrides.forEach((override, index) => {
    const earlier = overrides.findIndex((other) => other.service === override.service && other.port === override.port);
    if (earlier !== index) {
      throw new ConfigError(`--weight ${JSON.stringify(flags[index])}`, [
        `port ${override.service}:${override.port} is already set by --weight ${JSON.stringify(flags[earlier])}`,
      ]);
    }
  });
  return overrides;
}

// Label keys: an optional DNS-subdomain prefix and a name; values may be empty (Kubernetes rules).
const LABEL_NAME = '[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?';
const LABEL_KEY = new RegExp(`^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?${LABEL_NAME}$`);
const LABEL_VALUE = new RegExp(`^(${LABEL_NAME})?$`);

/** `key=value[,key=value...]`: the labels of the proxy pods, which retargeted Services select. */
export function parseSelector(flag: string): Labels {
  const labels: Record<string, string> = {};
  const fail = (problem: string): never => {
    throw new ConfigError(`--proxy-selector ${JSON.stringify(flag)}`, [problem]);
  };
  if (flag.trim() === '') fail('expected key=value[,key=value...]; an empty selector would select no pod');
  for (const pair of flag.split(',')) {
    const [key = '', value, ...rest] = pair.split('=').map((part) => part.trim());
    if (value === undefined || rest.length > 0) fail(`expected key=value, got ${JSON.stringify(pair)}`);
    if (!LABEL_KEY.test(key)) fail(`${JSON.stringify(key)} is not a label key`);
    if (!LABEL_VALUE.test(value ?? '')) fail(`${JSON.stringify(value)} is not a label value`);
    if (key in labels) fail(`label ${key} is given twice`);
    labels[key] = value ?? '';
  }
  return labels;
}

/** `--port-base`: the first proxy port (the plugin's `plan` takes it too). */
export function checkPortBase(base: number): number {
  if (!Number.isInteger(base) || base < 1 || base > 65_535)
    throw new ConfigError('--port-base', [`must be an integer 1-65535, got ${base}`]);
  return base;
}
