// The original Services: what was saved on them, what state they are in, and the fields we own on
// them in each state. The annotation written before the first change is the only source for a
// restore (never the forked copy, which garbage collection may have taken: seed defect D5).

import type { V1Service, V1ServicePort } from '@kubernetes/client-node';
import { selectorContains, withoutKeys } from './selectors.ts';
import { ownerSelectorBehind, selectsProxy } from './takeover-selector.ts';
import { ANNOTATION_ORIGINAL, type Labels } from '../../api/names.ts';

export interface SavedPort {
  readonly name?: string;
  readonly port: number;
  readonly protocol: string;
  readonly targetPort: number | string;
}

export interface SavedOriginal {
  /** The release that saved it: a second release on the same Service is refused. */
  readonly release: string;
  readonly selector: Labels;
  readonly ports: readonly SavedPort[];
  /** Written in the same patch as the retarget, so a later selector change can be told from "not yet". */
  readonly retargeted: boolean;
  /**
   * How the Service was taken over. `values` (0.3): the owner's selector keys with the release's
   * values, targetPorts kept where the proxy pod listens on them; a selector the owner sets is
   * followed. Absent: by a proxy of 0.2, selector → the proxy selector, targetPorts → proxy ports;
   * kept so until the hand-back, and another selector is a hand-over.
   */
  readonly takeover?: 'values';
}

export type OriginalState =
  | { readonly kind: 'missing' }
  /** Not touched by any release. */
  | { readonly kind: 'free'; readonly service: V1Service }
  /** Selects the proxy but the saved original is gone: nothing to restore from. */
  | { readonly kind: 'lost'; readonly service: V1Service }
  | { readonly kind: 'unreadable'; readonly service: V1Service; readonly error: string }
  | { readonly kind: 'foreign'; readonly service: V1Service; readonly release: string }
  /** Saved, traffic not moved yet: the Service is still its owner's. */
  | { readonly kind: 'saved'; readonly service: V1Service; readonly saved: SavedOriginal }
  | { readonly kind: 'retargeted'; readonly service: V1Service; readonly saved: SavedOriginal }
  /** Was retargeted (the 0.2 takeover), then someone else set another selector. */
  | { readonly kind: 'hijacked'; readonly service: V1Service; readonly saved: SavedOriginal };

/** The fields of an original Service that canary-l4 owns; `annotation: null` = no saved original. */
export interface OriginalFields {
  readonly selector: Labels;
  readonly ports: readonly V1ServicePort[];
  readonly annotation: string | null;
}

export function servicePorts(service: V1Service): readonly V1ServicePort[] {
  return service.spec?.ports ?? [];
}

/** The apiserver defaults protocol to TCP and targetPort to port; do the same so comparisons hold. */
export function portProtocol(port: V1ServicePort): string {
  return port.protocol ?? 'TCP';
}

export function portIdOf(port: number, protocol: string): string {
  return `${port}/${protocol}`;
}

function savedPortOf(port: V1ServicePort): SavedPort {
  const base = { port: port.port, protocol: portProtocol(port), targetPort: port.targetPort ?? port.port };
  return port.name === undefined ? base : { name: port.name, ...base };
}

export function saveOriginal(service: V1Service, release: string): SavedOriginal {
  return {
    release,
    selector: service.spec?.selector ?? {},
    ports: servicePorts(service).map(savedPortOf),
    retargeted: false,
  };
}

/** Deterministic text (fixed key order), so equal saves compare equal as strings. */
export function formatSaved(saved: SavedOriginal): string {
  const selector = Object.fromEntries(
    Object.keys(saved.selector)
      .sort()
      .map((key) => [key, saved.selector[key]]),
  );
  return JSON.stringify({
    release: saved.release,
    retargeted: saved.retargeted,
    ...(saved.takeover === undefined ? {} : { takeover: saved.takeover }),
    selector,
    ports: saved.ports,
  });
}

type ParsedAnnotation =
  | { readonly ok: true; readonly saved: SavedOriginal }
  | { readonly ok: false; readonly error: string };

export function parseSaved(text: string): ParsedAnnotation {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: `not JSON (${(error as Error).message})` };
  }
  if (
    !isRecord(value) ||
    typeof value.release !== 'string' ||
    typeof value.retargeted !== 'boolean' ||
    !isStringMap(value.selector) ||
    !Array.isArray(value.ports) ||
    !value.ports.every(isSavedPort) ||
    (value.takeover !== undefined && value.takeover !== 'values')
  ) {
    return { ok: false, error: 'expected {release, retargeted, takeover?: "values", selector, ports}' };
  }
  const saved = { release: value.release, retargeted: value.retargeted, selector: value.selector, ports: value.ports };
  return { ok: true, saved: value.takeover === 'values' ? { ...saved, takeover: 'values' } : saved };
}

/** Proxy ports recorded for one Service: the Service port (by id) each was given to, and whether it is that port's own targetPort. */
export type ProxyPortsOf = ReadonlyMap<number, { readonly id: string; readonly targetPortKept: boolean }>;

/**
 * What state the Service is in for this release. Taken over with values (0.3), any selector is
 * the owner's wherever it differs from the takeover's: a re-apply of the manifest, drift to repair
 * and follow, never a hand-over. Taken over by a 0.2 proxy, a selector that still holds every
 * proxy label counts as selecting the proxy even with other keys beside them (what `kubectl apply`
 * leaves), and one without them is a hand-over (hijacked). The saved original in the state is
 * already brought up to date (refreshSaved).
 */
export function classifyOriginal(
  service: V1Service | undefined,
  release: string,
  proxySelector: Labels,
  proxyPorts: ProxyPortsOf,
): OriginalState {
  if (service === undefined) return { kind: 'missing' };
  const selector = service.spec?.selector;
  const legacySelectsProxy = selectorContains(selector, proxySelector);
  const text = service.metadata?.annotations?.[ANNOTATION_ORIGINAL];
  if (text === undefined)
    return selectsProxy(service, release, proxySelector) ? { kind: 'lost', service } : { kind: 'free', service };
  const parsed = parseSaved(text);
  if (!parsed.ok) return { kind: 'unreadable', service, error: parsed.error };
  if (parsed.saved.release !== release) return { kind: 'foreign', service, release: parsed.saved.release };
  const saved = refreshSaved(parsed.saved, service, proxySelector, proxyPorts);
  if (!saved.retargeted) return { kind: 'saved', service, saved };
  return saved.takeover === 'values' || legacySelectsProxy
    ? { kind: 'retargeted', service, saved }
    : { kind: 'hijacked', service, saved };
}

/**
 * The saved original brought up to date with the live Service, so that every edit of its owner is
 * followed and kept. Before the retarget the Service is still its owner's: the save follows it.
 * After, the live Service shows the owner's intent wherever it differs from what we wrote:
 * - selector keys beside the proxy labels (a re-applied manifest): the owner's whole selector now;
 * - a targetPort that is not one of our proxy ports: the owner's new targetPort;
 * - a targetPort that is one of our proxy ports: the saved one of the port that was given that
 *   proxy port, even if the port was renumbered since; so the save never holds a proxy port.
 * A port someone added is saved as they wrote it and a removed one is forgotten.
 */
export function refreshSaved(
  saved: SavedOriginal,
  service: V1Service,
  proxySelector: Labels,
  proxyPorts: ProxyPortsOf,
): SavedOriginal {
  if (!saved.retargeted) return saveOriginal(service, saved.release);
  const savedById = new Map(saved.ports.map((port) => [portIdOf(port.port, port.protocol), port]));
  const ports = servicePorts(service).map((port): SavedPort => {
    const live = savedPortOf(port);
    const recorded = typeof port.targetPort === 'number' ? proxyPorts.get(port.targetPort) : undefined;
    // A targetPort kept by the takeover is the owner's, not ours to map back (a re-apply may move it).
    const owner =
      recorded === undefined || (saved.takeover === 'values' && recorded.targetPortKept) ? undefined : recorded.id;
    if (owner === undefined) return live;
    // The save may still name the port by its old number (its update waits for the retarget): the
    // port's name, unique in a multi-port Service, outlives a renumbering.
    const before =
      savedById.get(owner) ??
      savedById.get(portIdOf(live.port, live.protocol)) ??
      saved.ports.find((item) => item.name !== undefined && item.name === live.name && item.protocol === live.protocol);
    // A proxy port with nothing saved for it: Kubernetes' own default, the port itself.
    return { ...live, targetPort: before?.targetPort ?? live.port };
  });
  const live = service.spec?.selector ?? {};
  if (saved.takeover === 'values') {
    const owner = ownerSelectorBehind(live, saved.selector, saved.release);
    return { ...saved, selector: Object.keys(owner).length > 0 ? owner : saved.selector, ports };
  }
  const ownerKeys = withoutKeys(live, proxySelector);
  const selector = Object.keys(ownerKeys).length > 0 ? ownerKeys : saved.selector;
  return { ...saved, selector, ports };
}

/** How a Service is taken over: the selector it gets, and the design written in its saved original. */
export interface Takeover {
  readonly selector: Labels;
  readonly design: SavedOriginal['takeover'];
}

/**
 * The Service taken over: the takeover's selector; each port's targetPort as `targetPortOf` says
 * (undefined: left as it is). nodePorts stay.
 */
export function retargetFields(
  service: V1Service,
  saved: SavedOriginal,
  takeover: Takeover,
  targetPortOf: (port: V1ServicePort) => number | string | undefined,
): OriginalFields {
  const ports = servicePorts(service).map((port) => {
    const targetPort = targetPortOf(port);
    return targetPort === undefined ? port : { ...port, targetPort };
  });
  const marked: SavedOriginal = {
    release: saved.release,
    retargeted: true,
    selector: saved.selector,
    ports: saved.ports,
    ...(takeover.design === undefined ? {} : { takeover: takeover.design }),
  };
  return { selector: takeover.selector, ports, annotation: formatSaved(marked) };
}

/**
 * The Service handed back: `selector` as given, the saved targetPort back on every port for which
 * `restore` says so (nodePorts and everything else as they are live), the saved original dropped —
 * all in one patch, so a crash leaves either the release's Service or the restored one, never a mix.
 */
export function releaseFields(
  service: V1Service,
  saved: SavedOriginal,
  selector: Labels,
  restore: (port: V1ServicePort) => boolean,
): OriginalFields {
  const savedById = new Map(saved.ports.map((port) => [portIdOf(port.port, port.protocol), port]));
  const ports = servicePorts(service).map((port) => {
    const original = savedById.get(portIdOf(port.port, portProtocol(port)));
    return original !== undefined && restore(port) ? { ...port, targetPort: original.targetPort } : port;
  });
  return { selector, ports, annotation: null };
}

export function liveFields(service: V1Service): OriginalFields {
  return {
    selector: service.spec?.selector ?? {},
    ports: servicePorts(service),
    annotation: service.metadata?.annotations?.[ANNOTATION_ORIGINAL] ?? null,
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isStringMap(value: unknown): value is Record<string, string> {
  return isRecord(value) && Object.values(value).every((item) => typeof item === 'string');
}

function isSavedPort(value: unknown): value is SavedPort {
  return (
    isRecord(value) &&
    typeof value.port === 'number' &&
    typeof value.protocol === 'string' &&
    (typeof value.targetPort === 'number' || typeof value.targetPort === 'string') &&
    (value.name === undefined || typeof value.name === 'string')
  );
}
