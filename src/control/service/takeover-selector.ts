// The takeover selector: a Service under a release keeps exactly the keys of its owner's selector,
// each given a value only the release's proxy pods carry. A re-apply of the owner's manifest then
// puts the owner's values back (client-side apply) or the owner's whole selector (server-side
// apply, replace): either way the Service selects the app's own pods, never nothing, until the
// proxy takes it back.

import { createHash } from 'node:crypto';
import type { V1Pod, V1Service } from '@kubernetes/client-node';
import { livePods, readyPods, selectorContains, selectorMatches } from './selectors.ts';
import type { Labels } from '../../api/names.ts';
import type { NamedProxyPort } from '../../api/status-types.ts';

const MAX_LABEL_VALUE = 63;
const PREFIX = 'canary-l4.';
/** Hex digits of the hash that stands for the part of a long release name cut off. */
const HASH_LENGTH = 10;

/**
 * The value every takeover key gets: `canary-l4.<release>`, a valid label value (at most 63
 * characters, alphanumeric at both ends; release names are DNS subdomains, so every character is
 * allowed). A longer name is cut and ends in a hash of the whole one, so it stays unique and the
 * same on every replica.
 */
export function takeoverValue(release: string): string {
  const whole = `${PREFIX}${release}`;
  if (whole.length <= MAX_LABEL_VALUE) return whole;
  const hash = createHash('sha256').update(release).digest('hex').slice(0, HASH_LENGTH);
  const kept = whole.slice(0, MAX_LABEL_VALUE - HASH_LENGTH - 1).replace(/[^A-Za-z0-9]+$/, '');
  return `${kept}-${hash}`;
}

/** The owner's selector keys, each with the release's takeover value. */
export function takeoverSelector(ownerSelector: Labels, release: string): Labels {
  const value = takeoverValue(release);
  return Object.fromEntries(
    Object.keys(ownerSelector)
      .sort()
      .map((key) => [key, value]),
  );
}

/** A selector taken over by the release: at least one key, every value the release's. */
export function isTakeoverSelector(selector: Labels | undefined, release: string): boolean {
  const values = Object.values(selector ?? {});
  const value = takeoverValue(release);
  return values.length > 0 && values.every((item) => item === value);
}

/**
 * The owner's selector behind a live one: each key the owner set keeps its value; a key that still
 * holds the takeover value (a re-apply that did not mention it, a partial patch) takes the saved
 * one; a key with neither is dropped. So a re-apply that changes the owner's selector (values,
 * keys added or removed) is followed, and the takeover value never reaches the saved original.
 */
export function ownerSelectorBehind(live: Labels, saved: Labels, release: string): Labels {
  const value = takeoverValue(release);
  const owner: Record<string, string> = {};
  for (const [key, item] of Object.entries(live)) {
    if (item !== value) owner[key] = item;
    else if (saved[key] !== undefined) owner[key] = saved[key];
  }
  return owner;
}

/** The Service sends its traffic to the release's proxy pods: taken over with values, or by a 0.2 proxy (the proxy selector among its keys). */
export function selectsProxy(service: V1Service | undefined, release: string, proxySelector: Labels): boolean {
  const selector = service?.spec?.selector;
  return isTakeoverSelector(selector, release) || selectorContains(selector, proxySelector);
}

/** Every key of these selectors, sorted: the proxy pods carry each with the takeover value. */
export function takeoverKeys(selectors: readonly Labels[]): string[] {
  return [...new Set(selectors.flatMap((selector) => Object.keys(selector)))].sort();
}

/** Whether the proxy pods can serve a Service taken over with `selector`. */
export type ProxyPodReadiness = { readonly ready: true } | { readonly ready: false; readonly why: string };

/**
 * A Service is taken over only once a proxy pod it would select is Ready (the same rule as the
 * hand-back's), and only while no live proxy pod lacks its labels or the named ports it targets:
 * such a pod is of an older rendering (a proxy of the old design during an upgrade, or a rollout
 * that has not finished), and a takeover it cannot serve must not begin under it.
 */
export function proxyPodsReady(
  selector: Labels,
  proxySelector: Labels,
  pods: readonly V1Pod[],
  namedPorts: readonly NamedProxyPort[] = [],
): ProxyPodReadiness {
  const proxies = livePods(pods).filter((pod) => selectorMatches(proxySelector, pod.metadata?.labels));
  const declares = (pod: V1Pod) =>
    namedPorts.every(
      (named) =>
        pod.spec?.containers.some((container) =>
          container.ports?.some(
            (port) =>
              port.name === named.name &&
              port.containerPort === named.containerPort &&
              (port.protocol ?? 'TCP') === named.protocol,
          ),
        ) === true,
    );
  const lacking = proxies
    .filter((pod) => !selectorMatches(selector, pod.metadata?.labels) || !declares(pod))
    .map((pod) => pod.metadata?.name ?? '<unnamed>');
  if (lacking.length > 0)
    return {
      ready: false,
      why: `proxy pods ${lacking.join(', ')} do not carry its labels${namedPorts.length === 0 ? '' : ' and named ports'} yet`,
    };
  if (readyPods(proxies).length === 0) return { ready: false, why: 'no proxy pod carrying its labels is Ready yet' };
  return { ready: true };
}
