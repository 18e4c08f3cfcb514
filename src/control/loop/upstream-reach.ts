// Whether this pod reaches what it sends a Service's traffic to. A copy's cluster IP works from a
// pod only once kube-proxy on the pod's node has written its rules, each node in its own time: on a
// real node (two nodes, the real kube-proxy), a new Service's cluster IP gave no answer at all until
// its rules were written, then refused every connection for about a second (a reject rule: no
// endpoints yet), then passed them to its pods. A proxy taken over meanwhile would fail or reset its
// first clients. So a proxy pod that no Service sends traffic to yet becomes Ready (and may be taken
// over) only once each TCP upstream of its config has answered from here as it will serve: accepted
// where a Ready pod is behind it, accepted or refused where none is (its endpoints are empty). UDP
// gives no such answer; an address with UDP ports only is not waited for.

import net from 'node:net';
import type { L4Config } from '../../config/types.ts';

/** How long one probe waits for an answer; an address that gives none is asked again on the next pass. */
export const PROBE_TIMEOUT_MS = 1_000;

/** What a TCP connect met: a listener, a refusal, or nothing within the timeout (or an error on the way). */
export type Answer = 'accepted' | 'refused' | 'silent';

export type Probe = (host: string, port: number, timeoutMs: number) => Promise<Answer>;

export class UpstreamReach {
  readonly #probe: Probe;
  /** Addresses that accepted once: their rules and endpoints are on this node, and stay while the copy does. */
  readonly #accepted = new Set<string>();

  constructor(probe: Probe = probeTcp) {
    this.#probe = probe;
  }

  /**
   * The TCP upstreams of `config` not yet answering from here as they will serve, each asked once
   * more now (one port per address): `host:port silent`, or `host:port refused` where
   * `hasReadyPods(host)` says a Ready pod is behind it.
   */
  async unready(config: L4Config, hasReadyPods: (host: string) => boolean): Promise<string[]> {
    const asked = new Map<string, number>();
    for (const listener of config.listeners) {
      if (listener.protocol !== 'tcp') continue;
      for (const backend of listener.backends) {
        if (!this.#accepted.has(backend.host) && !asked.has(backend.host)) asked.set(backend.host, backend.port);
      }
    }
    const results = await Promise.all(
      [...asked].map(async ([host, port]) => {
        const answer = await this.#probe(host, port, PROBE_TIMEOUT_MS);
        if (answer === 'accepted') this.#accepted.add(host);
        const enough = answer === 'accepted' || (answer === 'refused' && !hasReadyPods(host));
        return enough ? undefined : `${host}:${port} ${answer}`;
      }),
    );
    return results.filter((unready) => unready !== undefined);
  }
}

/** A TCP connect to `host:port`, closed at once. */
export function probeTcp(host: string, port: number, timeoutMs: number): Promise<Answer> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: timeoutMs });
    const end = (answer: Answer) => {
      socket.destroy();
      resolve(answer);
    };
    socket.once('connect', () => end('accepted'));
    socket.once('timeout', () => end('silent'));
    socket.once('error', (err: NodeJS.ErrnoException) => end(err.code === 'ECONNREFUSED' ? 'refused' : 'silent'));
  });
}
