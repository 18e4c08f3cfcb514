// Turns a parsed config document (design §3), or one the control loop built, into a validated,
// fully defaulted, deeply frozen L4Config. Pure: no file, no parser, so the proxy and the data
// plane can use it without loading the YAML parser.
// Validation reports every problem in one pass: each reader records what is wrong and returns a
// placeholder so the walk can go on; the placeholders never escape, because validateConfig throws
// as soon as one problem was recorded. The listen addresses (listen-address.ts), the hosts
// (hosts.ts) and the port clashes between listeners (port-clashes.ts) are read by their own files.

import {
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_FAIL_TIMEOUT_MS,
  DEFAULT_IDLE_TIMEOUT_MS,
  DEFAULT_MAX_FAILS,
  DEFAULT_UDP_IDLE_TIMEOUT_MS,
  DEFAULT_UDP_MAX_SESSIONS,
} from '../defaults.ts';
import { ConfigError } from '../errors.ts';
import {
  DOCUMENT_PATH,
  type IntegerRule,
  describe,
  readBoolean,
  readChoice,
  readInteger,
  readList,
  readMapping,
} from './fields.ts';
import { readHost } from './hosts.ts';
import { readListen } from './listen-address.ts';
import { reportPortClashes } from './port-clashes.ts';
import type {
  Affinity,
  BackendConfig,
  BalanceStrategy,
  L4Config,
  ListenerConfig,
  MirrorCompare,
  MirrorConfig,
  Protocol,
  UdpOptions,
} from './types.ts';

/** Listener and backend names end up in metric labels, log lines and `--weight` flags. */
export const NAME_PATTERN = /^[A-Za-z0-9_.-]{1,63}$/;
export const NAME_RULE = '1-63 characters from A-Z a-z 0-9 _ . -';
export const MAX_WEIGHT = 100;

/** Validates a raw document, from a file or built by the control loop, into an L4Config. */
export function validateConfig(raw: unknown, source: string): L4Config {
  const problems: string[] = [];
  const config = readConfig(raw, problems);
  if (problems.length > 0) throw new ConfigError(source, problems);
  return config;
}

// ---- the document ----------------------------------------------------------------------------

const ROOT_KEYS = ['listeners'] as const satisfies readonly (keyof L4Config)[];
const LISTENER_KEYS = [
  'name',
  'protocol',
  'listen',
  'balance',
  'backends',
  'connectTimeoutMs',
  'idleTimeoutMs',
  'maxConnections',
  'maxFails',
  'failTimeoutMs',
  'failOnReset',
  'firstByteTimeoutMs',
  'probeIntervalMs',
  'maxConnectionAgeMs',
  'rebalanceWindowMs',
  'drainTimeoutMs',
  'affinity',
  'mirror',
  'udp',
] as const satisfies readonly (keyof ListenerConfig)[];
// `overriddenFrom` is set by `--weight` only, never by a document.
const BACKEND_KEYS = ['name', 'host', 'port', 'weight', 'refuse'] as const satisfies readonly (keyof BackendConfig)[];
const UDP_KEYS = ['responses', 'maxSessions'] as const satisfies readonly (keyof UdpOptions)[];
const MIRROR_KEYS = ['to', 'percent', 'compare', 'maxBytes'] as const satisfies readonly (keyof MirrorConfig)[];
const MIRROR_POLICY_KEYS = MIRROR_KEYS.filter((key) => key !== 'to');

/** Every key a config file may hold, by the mapping it goes in (docs/configuration.md has a heading for each). */
export const CONFIG_KEYS = {
  root: ROOT_KEYS,
  listener: LISTENER_KEYS,
  backend: BACKEND_KEYS,
  udp: UDP_KEYS,
  mirror: MIRROR_KEYS,
} as const;

const PROTOCOLS: readonly Protocol[] = ['tcp', 'udp'];
const BALANCE_STRATEGIES: readonly BalanceStrategy[] = ['wrr', 'random'];
const AFFINITIES: readonly Affinity[] = ['none', 'clientIP'];
const MIRROR_COMPARES: readonly MirrorCompare[] = ['replies', 'none'];

const WEIGHT: IntegerRule = { min: 0, max: MAX_WEIGHT, expected: `an integer 0-${MAX_WEIGHT}` };
const BACKEND_PORT: IntegerRule = { min: 1, max: 65_535, expected: 'an integer 1-65535' };
// setTimeout's ceiling: a longer delay does not wait, it fires at once.
const MILLISECONDS: IntegerRule = { min: 1, max: 2_147_483_647, expected: 'an integer 1-2147483647 (milliseconds)' };
const POSITIVE: IntegerRule = { min: 1, max: Number.MAX_SAFE_INTEGER, expected: 'a positive integer' };
const TIMEOUT_OR_OFF: IntegerRule = {
  min: 0,
  max: MILLISECONDS.max,
  expected: 'an integer 0-2147483647 (milliseconds; 0 = off)',
};
const NON_NEGATIVE: IntegerRule = { min: 0, max: Number.MAX_SAFE_INTEGER, expected: 'an integer >= 0' };
const PERCENT: IntegerRule = { min: 0, max: 100, expected: 'an integer 0-100 (percent)' };
/** 1 GiB: a mirrored connection copies this much at most; the copy is bounded by its buffer anyway. */
const MIRROR_BYTES: IntegerRule = { min: 1, max: 1024 * 1024 * 1024, expected: 'an integer 1-1073741824 (bytes)' };
const DEFAULT_MIRROR_MAX_BYTES = 65_536;

function readConfig(raw: unknown, problems: string[]): L4Config {
  // An empty file reads as null: report the missing list rather than a puzzling "got null".
  const root = readMapping(raw ?? {}, DOCUMENT_PATH, ROOT_KEYS, problems);
  // An empty list is valid: the Kubernetes mode has no listener once a release is archived.
  const items = root === undefined ? [] : readList(root.listeners, 'listeners', 0, 'a list of listeners', problems);
  const listeners = items.map((item, index) => readListener(item, `listeners[${index}]`, problems));
  reportDuplicateNames(listeners, (index) => `listeners[${index}]`, problems);
  reportPortClashes(listeners, problems);
  return Object.freeze({ listeners: Object.freeze(listeners.filter((listener) => listener !== undefined)) });
}

function readListener(raw: unknown, path: string, problems: string[]): ListenerConfig | undefined {
  const fields = readMapping(raw, path, LISTENER_KEYS, problems);
  if (fields === undefined) return undefined;
  const at = (key: string): string => `${path}.${key}`;
  // Read in the order of design §3, so problems come out in the order a typical file has them.
  const name = readName(fields.name, at('name'), problems);
  const protocol = readChoice(fields.protocol, at('protocol'), PROTOCOLS, 'tcp', problems);
  const listen = readListen(fields.listen, at('listen'), problems);
  const balance = readChoice(fields.balance, at('balance'), BALANCE_STRATEGIES, 'wrr', problems);
  const backendItems = readList(fields.backends, at('backends'), 1, 'a list of at least one backend', problems);
  const backends = backendItems.map((item, index) => readBackend(item, `${at('backends')}[${index}]`, problems));
  reportDuplicateNames(backends, (index) => `${at('backends')}[${index}]`, problems);
  const idleTimeoutDefault = protocol === 'udp' ? DEFAULT_UDP_IDLE_TIMEOUT_MS : DEFAULT_IDLE_TIMEOUT_MS;
  // Judged by a TCP backend's first byte: on a udp listener they would be taken and do nothing.
  if (protocol === 'udp') {
    for (const key of ['failOnReset', 'firstByteTimeoutMs', 'probeIntervalMs'] as const)
      if (fields[key] !== undefined) problems.push(`${at(key)}: applies to tcp listeners only; remove it`);
  }
  return Object.freeze({
    name,
    protocol,
    listen,
    balance,
    backends: Object.freeze(backends.filter((backend) => backend !== undefined)),
    connectTimeoutMs: readInteger(
      fields.connectTimeoutMs,
      at('connectTimeoutMs'),
      MILLISECONDS,
      problems,
      DEFAULT_CONNECT_TIMEOUT_MS,
    ),
    idleTimeoutMs: readInteger(fields.idleTimeoutMs, at('idleTimeoutMs'), MILLISECONDS, problems, idleTimeoutDefault),
    maxConnections: readInteger(fields.maxConnections, at('maxConnections'), NON_NEGATIVE, problems, 0),
    maxFails: readInteger(fields.maxFails, at('maxFails'), POSITIVE, problems, DEFAULT_MAX_FAILS),
    failTimeoutMs: readInteger(
      fields.failTimeoutMs,
      at('failTimeoutMs'),
      MILLISECONDS,
      problems,
      DEFAULT_FAIL_TIMEOUT_MS,
    ),
    failOnReset: readBoolean(fields.failOnReset, at('failOnReset'), problems, false),
    firstByteTimeoutMs: readInteger(fields.firstByteTimeoutMs, at('firstByteTimeoutMs'), TIMEOUT_OR_OFF, problems, 0),
    probeIntervalMs: readInteger(fields.probeIntervalMs, at('probeIntervalMs'), TIMEOUT_OR_OFF, problems, 0),
    ...readConnectionPolicies(fields, at, problems),
    ...readListenerMirror(fields.mirror, at('mirror'), backends, problems),
    udp: readUdpOptions(fields.udp, at('udp'), problems),
  });
}

/** `mirror` of a listener: the policy, and `to` naming one of its backends (weight 0 allowed). */
function readListenerMirror(
  raw: unknown,
  path: string,
  backends: readonly (BackendConfig | undefined)[],
  problems: string[],
): { mirror?: MirrorConfig } {
  if (raw === undefined) return {};
  const fields = readMapping(raw, path, MIRROR_KEYS, problems);
  if (fields === undefined) return {};
  const names = backends.flatMap((backend) => (backend === undefined || backend.name === '' ? [] : [backend.name]));
  const expected = `the name of one of this listener's backends (${names.join(', ')})`;
  if (fields.to === undefined) problems.push(`${path}.to: is required (${expected})`);
  else if (typeof fields.to !== 'string' || !names.includes(fields.to))
    problems.push(`${path}.to: must be ${expected}, got ${describe(fields.to)}`);
  else if (backends.some((backend) => backend?.refuse === true && backend.name === fields.to))
    problems.push(
      `${path}.to: names a backend with refuse: true, which has nowhere to send the copies; name a backend that serves, got ${describe(fields.to)}`,
    );
  const to = typeof fields.to === 'string' ? fields.to : '';
  return { mirror: Object.freeze({ to, ...readMirrorPolicy(fields, (key) => `${path}.${key}`, problems) }) };
}

/** What a mirror does, without the backend it goes to: a listener's `mirror`, a CanaryRelease port's `config.mirror`. */
export type MirrorPolicy = Omit<MirrorConfig, 'to'>;

/**
 * The mirror policy among `fields` (compare default none; maxBytes default 64 KiB; percent required
 * unless `percentDefault`), each problem at `at(key)`.
 */
function readMirrorPolicy(
  fields: Readonly<Record<string, unknown>>,
  at: (key: string) => string,
  problems: string[],
  percentDefault?: number,
): MirrorPolicy {
  return {
    percent: readInteger(fields.percent, at('percent'), PERCENT, problems, percentDefault),
    compare: readChoice(fields.compare, at('compare'), MIRROR_COMPARES, 'none', problems),
    maxBytes: readInteger(fields.maxBytes, at('maxBytes'), MIRROR_BYTES, problems, DEFAULT_MIRROR_MAX_BYTES),
  };
}

/**
 * A CanaryRelease port's `config.mirror` (no `to`: the canary is the mirror; percent missing = 0,
 * for steps to set); undefined when absent.
 */
export function readPortMirror(raw: unknown, path: string, problems: string[]): MirrorPolicy | undefined {
  if (raw === undefined) return undefined;
  const fields = readMapping(raw, path, MIRROR_POLICY_KEYS, problems);
  return fields === undefined ? undefined : readMirrorPolicy(fields, (key) => `${path}.${key}`, problems, 0);
}

/** What a listener does with its live connections (lifetimes.ts, affinity.ts); every one opt-in. */
export type ConnectionPolicies = Required<
  Pick<ListenerConfig, 'maxConnectionAgeMs' | 'rebalanceWindowMs' | 'drainTimeoutMs' | 'affinity'>
>;

/**
 * The connection policies among `fields` — a listener's, or a CanaryRelease port's `config` — each
 * problem at `at(key)`.
 */
export function readConnectionPolicies(
  fields: Readonly<Record<string, unknown>>,
  at: (key: string) => string,
  problems: string[],
): ConnectionPolicies {
  return {
    maxConnectionAgeMs: readInteger(fields.maxConnectionAgeMs, at('maxConnectionAgeMs'), TIMEOUT_OR_OFF, problems, 0),
    rebalanceWindowMs: readInteger(fields.rebalanceWindowMs, at('rebalanceWindowMs'), TIMEOUT_OR_OFF, problems, 0),
    drainTimeoutMs: readInteger(fields.drainTimeoutMs, at('drainTimeoutMs'), TIMEOUT_OR_OFF, problems, 0),
    affinity: readChoice(fields.affinity, at('affinity'), AFFINITIES, 'none', problems),
  };
}

function readBackend(raw: unknown, path: string, problems: string[]): BackendConfig | undefined {
  const fields = readMapping(raw, path, BACKEND_KEYS, problems);
  if (fields === undefined) return undefined;
  const refuse = readBoolean(fields.refuse, `${path}.refuse`, problems, false);
  // A refusing backend connects nowhere: its address may be left out (or '' and 0, as a generated
  // config writes it), and one given is still checked, so that turning refuse off again serves.
  const hostUnset = refuse && (fields.host === undefined || fields.host === '');
  const portUnset = refuse && (fields.port === undefined || fields.port === 0);
  return Object.freeze({
    name: readName(fields.name, `${path}.name`, problems),
    host: hostUnset ? '' : readHost(fields.host, `${path}.host`, problems),
    port: portUnset ? 0 : readInteger(fields.port, `${path}.port`, BACKEND_PORT, problems),
    // No default weight: in a canary tool a forgotten weight must not quietly become an even split.
    weight: readInteger(fields.weight, `${path}.weight`, WEIGHT, problems),
    ...(refuse ? { refuse } : {}),
  });
}

function readUdpOptions(raw: unknown, path: string, problems: string[]): UdpOptions {
  const fields = raw === undefined ? {} : (readMapping(raw, path, UDP_KEYS, problems) ?? {});
  return Object.freeze({
    responses: readInteger(fields.responses, `${path}.responses`, NON_NEGATIVE, problems, 0),
    maxSessions: readInteger(
      fields.maxSessions,
      `${path}.maxSessions`,
      NON_NEGATIVE,
      problems,
      DEFAULT_UDP_MAX_SESSIONS,
    ),
  });
}

function reportDuplicateNames(
  items: readonly ({ readonly name: string } | undefined)[],
  pathOf: (index: number) => string,
  problems: string[],
): void {
  const firstIndexByName = new Map<string, number>();
  items.forEach((item, index) => {
    if (item === undefined || item.name === '') return; // already reported
    const firstIndex = firstIndexByName.get(item.name);
    if (firstIndex === undefined) firstIndexByName.set(item.name, index);
    else
      problems.push(
        `${pathOf(index)}.name: must be unique, ${pathOf(firstIndex)} has it too, got ${describe(item.name)}`,
      );
  });
}

// ---- names -----------------------------------------------------------------------------------

function readName(value: unknown, path: string, problems: string[]): string {
  if (value === undefined) {
    problems.push(`${path}: is required (${NAME_RULE})`);
    return '';
  }
  if (typeof value === 'string' && NAME_PATTERN.test(value)) return value;
  problems.push(`${path}: must be ${NAME_RULE}, got ${describe(value)}`);
  return '';
}
