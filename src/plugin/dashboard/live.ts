// The dashboard's live view: a watch on the CanaryReleases (one namespace, or all) with the user's
// kubeconfig, so whatever changes them (kubectl, a GitOps sync, the proxy's own analysis) reaches
// the pages at once. Changes close together are told once: the pages re-read the whole list.

import type { KubeConfig, KubernetesObject } from '@kubernetes/client-node';
import pino from 'pino';
import { makeClients } from '../../kube/client.ts';
import { startInformer } from '../../kube/informer.ts';
import { describeError } from '../../kube/patch.ts';
import { GROUP, PLURAL, VERSION } from '../../api/names.ts';
import type { ManagedRelease } from '../../api/proxy-types.ts';

/** Changes within this long are told together: well under the second the pages have. */
const COALESCE_MS = 50;

export interface LiveReleases {
  list(): readonly ManagedRelease[];
  readonly synced: Promise<void>;
  /** Called after every change (a burst once); returns the unsubscribe. */
  subscribe(listener: () => void): () => void;
  stop(): Promise<void>;
}

/**
 * `namespace` undefined: every namespace (--all-namespaces). Lists once first: a kubeconfig that may
 * not list them fails here with the API's answer, not in a watch that retries in the background.
 */
export async function watchReleases(kubeConfig: KubeConfig, namespace: string | undefined): Promise<LiveReleases> {
  const { custom } = makeClients(kubeConfig);
  const listeners = new Set<() => void>();
  let pending: NodeJS.Timeout | undefined;
  const changed = () => {
    if (pending !== undefined) return;
    pending = setTimeout(() => {
      pending = undefined;
      for (const listener of listeners) listener();
    }, COALESCE_MS);
  };
  const base = `/apis/${GROUP}/${VERSION}`;
  const list = () =>
    namespace === undefined
      ? custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL })
      : custom.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL });
  try {
    await list();
  } catch (err) {
    throw new Error(
      `cannot list CanaryReleases ${namespace === undefined ? 'in every namespace' : `in namespace ${namespace}`}: ${describeError(err)}`,
    );
  }
  const informer = startInformer<KubernetesObject>({
    kubeConfig,
    path: namespace === undefined ? `${base}/${PLURAL}` : `${base}/namespaces/${namespace}/${PLURAL}`,
    list,
    onChange: changed,
    // The watch's restarts are the informer's to report; a dashboard prints only its warnings.
    log: pino({ level: 'warn' }, pino.destination(2)),
    staleAfterMs: 10 * 60_000,
    watchTimeoutSeconds: 300,
    maxBackoffMs: 3_000,
  });
  return {
    // Custom objects are plain JSON: the client's Date-typed metadata is only its typing.
    list: () => informer.list() as unknown as readonly ManagedRelease[],
    synced: informer.synced,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async stop() {
      clearTimeout(pending);
      listeners.clear();
      await informer.stop();
    },
  };
}
