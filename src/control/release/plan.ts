// From the CanaryRelease spec and the original Services to one plan per Service, or the list of
// reasons why the release cannot go on as written. A problem anywhere holds the whole release:
// nothing is changed until the spec is fixed (and whatever already runs keeps running).

import type { V1Service } from '@kubernetes/client-node';
import { normalizeProtocol, SPEC_PROTOCOLS } from '../../api/spec.ts';
import { copyName, COPY_ROLES, isCopyOf } from '../service/copies.ts';
import {
  portProtocol,
  saveOriginal,
  servicePorts,
  type OriginalState,
  type SavedOriginal,
  type Takeover,
} from '../service/originals.ts';
import type { PortKey } from '../service/ports.ts';
import { selectorMatches } from '../service/selectors.ts';
import { takeoverSelector } from '../service/takeover-selector.ts';
import { applyOperations, formatSelector } from '../../api/labels.ts';
import { canarySideSelector, stableSideSelector, type WorkloadPlan } from '../workload/workloads.ts';
import type { CanaryPortSpec, CanaryReleaseSpec, CanaryServiceSpec } from '../../api/spec-types.ts';
import type { Labels } from '../../api/names.ts';

/** A state in which the release may run on the Service. */
export type WorkableState = Extract<OriginalState, { readonly kind: 'free' | 'saved' | 'retargeted' }>;

export interface PlannedPort extends PortKey {
  /** Canary weight the spec asks for; 0 for a port the spec does not list. */
  readonly weight: number;
}

export interface ServicePlan {
  readonly name: string;
  readonly entry: CanaryServiceSpec;
  readonly state: WorkableState;
  /** The saved original, up to date with the live Service (or as it would be saved now). */
  readonly saved: SavedOriginal;
  readonly forkedSelector: Labels;
  readonly canarySelector: Labels;
  /** The workload whose pods the Service selects, when the release has spec.workloads. */
  readonly workload?: WorkloadPlan;
  /** Every port of the Service: the unlisted ones are proxied too, at 100 % stable. */
  readonly ports: readonly PlannedPort[];
  /** The owner's selector keys with the release's values; a Service a 0.2 proxy took over keeps the proxy selector until handed back. */
  readonly takeover: Takeover;
}

/** Not ok: the release holds. `problems` are the spec's to fix; `waiting` clears by itself (another
 * release still holds a Service). */
export type SpecPlan =
  | { readonly ok: true; readonly plans: readonly ServicePlan[] }
  | { readonly ok: false; readonly problems: readonly string[]; readonly waiting: readonly string[] };

/** Service names are DNS-1035 labels; the copies' names must be too. */
const MAX_SERVICE_NAME = 63;

export function planServices(
  spec: CanaryReleaseSpec | undefined,
  release: string,
  proxySelector: Labels,
  states: ReadonlyMap<string, OriginalState>,
  services: ReadonlyMap<string, V1Service>,
  workloads: readonly WorkloadPlan[] = [],
  stepWeight?: number,
): SpecPlan {
  const entries = spec?.services ?? [];
  const problems: string[] = [];
  const waiting: string[] = [];
  const seen = new Set<string>();
  const plans: ServicePlan[] = [];
  // The spec's own problems (an empty list, a Service or port listed twice, a bad port or label)
  // are validate.ts's; here, what the Services of the namespace make of it.
  entries.forEach((entry, index) => {
    const at = `spec.services[${index}]`;
    if (seen.has(entry.service)) return;
    seen.add(entry.service);
    const state = states.get(entry.service) ?? { kind: 'missing' };
    if (state.kind === 'foreign') {
      waiting.push(
        `Service ${entry.service} is under CanaryRelease ${state.release}; this release starts once that one has ended`,
      );
      return;
    }
    const plan = planService(entry, at, release, proxySelector, state, services, workloads, stepWeight, problems);
    if (plan !== undefined) plans.push(plan);
  });
  return problems.length === 0 && waiting.length === 0 ? { ok: true, plans } : { ok: false, problems, waiting };
}

function planService(
  entry: CanaryServiceSpec,
  at: string,
  release: string,
  proxySelector: Labels,
  state: Exclude<OriginalState, { kind: 'foreign' }>,
  services: ReadonlyMap<string, V1Service>,
  workloads: readonly WorkloadPlan[],
  stepWeight: number | undefined,
  problems: string[],
): ServicePlan | undefined {
  const name = entry.service;
  const workable = workableState(state, name, at, problems);
  if (workable === undefined) return undefined;
  const before = problems.length;
  const service = workable.service;
  if (service.spec?.type === 'ExternalName')
    problems.push(`${at}: Service ${name} is of type ExternalName; it has no pods to split`);
  if (service.spec?.clusterIP === 'None')
    problems.push(`${at}: Service ${name} is headless; clients reach its pods directly, not through it`);
  if (copyName(name, 'forked').length > MAX_SERVICE_NAME) {
    problems.push(
      `${at}: Service name ${name} is too long for its copy ${copyName(name, 'forked')} (at most ${MAX_SERVICE_NAME} characters)`,
    );
  }
  for (const role of COPY_ROLES) {
    const existing = services.get(copyName(name, role));
    if (existing !== undefined && !isCopyOf(existing, release)) {
      problems.push(
        `${at}: Service ${copyName(name, role)} exists and is not a copy made by this release; rename or remove it`,
      );
    }
  }
  const saved = workable.kind === 'free' ? saveOriginal(service, release) : workable.saved;
  if (Object.keys(saved.selector).length === 0) {
    problems.push(`${at}: Service ${name} has no selector; only Services that select pods can be split`);
  }
  const ownKeys = Object.keys(saved.selector).filter((key) => key in proxySelector);
  if (ownKeys.length > 0) {
    problems.push(
      `${at}: Service ${name} selects by ${ownKeys.join(', ')}, a label of the proxy pods (--proxy-selector); ` +
        "the takeover gives the proxy pods each selector key with a value of the release's, so select the app's pods by another label",
    );
  }
  const workload =
    workloads.length === 0 ? undefined : workloadOf(saved.selector, workloads, `${at}: Service ${name}`, problems);
  // With workloads the selectors are made apart: the stable side pinned to the stable pods' hash,
  // the canary side on the canary pods' labels and the track label.
  const forkedSelector = applyOperations(
    workload === undefined ? saved.selector : stableSideSelector(saved.selector, workload.stableHash),
    entry.forkedServiceOperations,
  );
  const canarySelector = applyOperations(
    workload === undefined ? saved.selector : canarySideSelector(saved.selector, workload),
    entry.canaryServiceOperations,
  );
  if (Object.keys(canarySelector).length === 0)
    problems.push(`${at}.canaryServiceOperations: the canary selector ends up empty`);
  if (Object.keys(forkedSelector).length === 0)
    problems.push(`${at}.forkedServiceOperations: the forked selector ends up empty`);
  const ports = planPorts(entry, at, service, stepWeight, problems);
  if (problems.length > before) return undefined;
  // A Service a 0.2 proxy took over stays so until it is handed back: its saved original says how.
  const takeover: Takeover =
    workable.kind === 'retargeted' && saved.takeover === undefined
      ? { selector: proxySelector, design: undefined }
      : { selector: takeoverSelector(saved.selector, release), design: 'values' };
  return {
    name,
    entry,
    state: workable,
    saved,
    forkedSelector,
    canarySelector,
    ports,
    takeover,
    ...(workload === undefined ? {} : { workload }),
  };
}

/** The one workload whose stable pods the selector picks; with workloads, each Service must pick one. */
function workloadOf(
  selector: Labels,
  workloads: readonly WorkloadPlan[],
  what: string,
  problems: string[],
): WorkloadPlan | undefined {
  const matching = workloads.filter((workload) => selectorMatches(selector, workload.stableLabels));
  if (matching.length === 1) return matching[0];
  problems.push(
    matching.length === 0
      ? `${what} selects ${formatSelector(selector)}, the pods of none of spec.workloads; with workloads, every Service must select the pods of one`
      : `${what} selects the pods of several workloads (${matching.map((workload) => workload.spec.name).join(', ')}); list one Service per workload`,
  );
  return undefined;
}

function workableState(
  state: Exclude<OriginalState, { kind: 'foreign' }>,
  name: string,
  at: string,
  problems: string[],
): WorkableState | undefined {
  switch (state.kind) {
    case 'free':
    case 'saved':
    case 'retargeted':
      return state;
    case 'missing':
      problems.push(`${at}: Service ${name} not found in the namespace`);
      return undefined;
    case 'unreadable':
      problems.push(
        `${at}: the saved original on Service ${name} is unreadable (${state.error}); it must be repaired by hand`,
      );
      return undefined;
    case 'lost':
      problems.push(
        `${at}: Service ${name} selects the proxy but its saved original is gone; ` +
          `set its selector back by hand (it is served meanwhile)`,
      );
      return undefined;
    case 'hijacked':
      // Decided before planning (automatic deprecation); reaching here means a logic error upstream.
      problems.push(
        `${at}: Service ${name} selector was changed to ${formatSelector(state.service.spec?.selector ?? {})}`,
      );
      return undefined;
  }
}

/** `stepWeight`: with spec.steps, the current step's weight for every listed port (its own config is not read). */
function planPorts(
  entry: CanaryServiceSpec,
  at: string,
  service: V1Service,
  stepWeight: number | undefined,
  problems: string[],
): PlannedPort[] {
  const listed = new Map<string, CanaryPortSpec>();
  (entry.ports ?? []).forEach((port, index) => {
    // A protocol validate.ts refuses is skipped: the release holds for it anyway.
    if (port.protocol !== undefined && !SPEC_PROTOCOLS.includes(port.protocol)) return;
    const protocol = normalizeProtocol(port.protocol);
    const id = `${port.port}/${protocol}`;
    if (!listed.has(id)) listed.set(id, port);
    if (!servicePorts(service).some((live) => live.port === port.port && portProtocol(live) === protocol)) {
      problems.push(`${at}.ports[${index}]: Service ${entry.service} has no port ${id}`);
    }
  });
  return servicePorts(service).flatMap((live): PlannedPort[] => {
    const protocol = portProtocol(live);
    if (protocol !== 'TCP' && protocol !== 'UDP') {
      problems.push(
        `${at}: Service ${entry.service} port ${live.port}/${protocol} cannot be proxied (TCP and UDP only)`,
      );
      return [];
    }
    const spec = listed.get(`${live.port}/${protocol}`);
    const weight = spec === undefined ? 0 : (stepWeight ?? spec.config?.weight ?? 0);
    return [{ service: entry.service, port: live.port, protocol, weight }];
  });
}
