/**
 * A wire-faithful, in-memory kube-apiserver on loopback for tests (and for trying canary-l4 and
 * kubectl by hand). The real `@kubernetes/client-node` and kubectl talk to it over HTTP; see
 * shared notes kubernetes-api.md §3–4 for the behaviour it follows, and README.md here for what it
 * deliberately leaves out.
 *
 * ```ts
 * const api = await startFakeApiServer();
 * const core = api.kubeConfig.makeApiClient(CoreV1Api);
 * api.faults.failNext({ verb: 'watch', resource: 'pods', code: 500, count: 1 });
 * await api.stop();
 * ```
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { FailRule } from './faults.ts';
import { makeKubeConfig, writeKubeconfigFile } from './kubeconfig.ts';
import { FakeServer, type RequestRecord } from './server.ts';

export type { FailRule } from './faults.ts';
export type { RequestRecord } from './server.ts';

export interface FakeApiServerOptions {
  /** TCP port on 127.0.0.1; 0 or absent → ephemeral. */
  port?: number;
  /** Service cluster-IP range (IPv4 CIDR). Default `127.0.10.0/24`, so tests can bind backends. */
  serviceCidr?: string;
  /** Simulate kube-controller-manager's garbage collector and namespace controller. Default true. */
  gc?: boolean;
  /** Server-side watch timeout range [min, max] in seconds when a watch has no timeoutSeconds. Default [1800, 3600]. */
  watchTimeoutSeconds?: [number, number];
  /** Interval between BOOKMARK events on watches that allow them. Default 60000. */
  bookmarkIntervalMs?: number;
  /** Where to write the kubeconfig for kubectl; default a fresh temp dir (removed on stop). */
  kubeconfigPath?: string;
}

export interface FakeFaults {
  /** Fail the next `count` (default 1) requests matching verb/resource with `code` (Status body). */
  failNext(rule: FailRule): void;
  /** Delay every request by `ms` before it is handled (0 turns it off). */
  setLatency(ms: number): void;
  /** End every open watch stream; clients re-watch from their last RV. `abrupt` resets the sockets instead. */
  dropWatches(opts?: { abrupt?: boolean }): number;
  /** Advance the compaction floor to the current RV: watches from older RVs get 410 Expired. */
  compact(): void;
  /** Close the listener and every connection; reopen on the same port after `ms`. Resolves when reopened. */
  refuseConnections(ms: number): Promise<void>;
  /** Forget pending failNext rules and latency. */
  reset(): void;
}

export interface FakeApiServer {
  /** `http://127.0.0.1:<port>` */
  url: string;
  port: number;
  /** For client-node: http + skipTLSVerify, namespace `default`. */
  kubeConfig: KubeConfig;
  /** A kubeconfig file for kubectl (`--kubeconfig`). */
  kubeconfigPath: string;
  /** Every request served, in RBAC vocabulary. */
  requests: RequestRecord[];
  /** Calls `listener` synchronously as each request is answered (e.g. to kill a client right after a
   * write); returns the function that unsubscribes it. */
  onRequest(listener: (record: RequestRecord) => void): () => void;
  faults: FakeFaults;
  /** Current global resourceVersion. */
  resourceVersion(): string;
  /** Turn the simulated garbage collector / namespace controller on or off. */
  setGc(enabled: boolean): void;
  /** Number of open watch streams. */
  openWatches(): number;
  stop(): Promise<void>;
}

export async function startFakeApiServer(opts: FakeApiServerOptions = {}): Promise<FakeApiServer> {
  const server = new FakeServer({
    serviceCidr: opts.serviceCidr ?? '127.0.10.0/24',
    gc: opts.gc ?? true,
    watch: { timeoutRange: opts.watchTimeoutSeconds ?? [1800, 3600], bookmarkIntervalMs: opts.bookmarkIntervalMs ?? 60_000 },
  });
  await server.listen(opts.port ?? 0);
  const url = `http://127.0.0.1:${server.port}`;
  let tempDir: string | undefined;
  let kubeconfigPath = opts.kubeconfigPath;
  if (!kubeconfigPath) {
    tempDir = await mkdtemp(join(tmpdir(), 'fake-apiserver-'));
    kubeconfigPath = join(tempDir, 'kubeconfig');
  }
  await writeKubeconfigFile(kubeconfigPath, url);
  let stopped: Promise<void> | undefined;
  return {
    url,
    port: server.port,
    kubeConfig: makeKubeConfig(url),
    kubeconfigPath,
    requests: server.requests,
    onRequest: (listener) => {
      server.answered.add(listener);
      return () => server.answered.delete(listener);
    },
    faults: {
      failNext: (rule) => server.faults.failNext(rule),
      setLatency: (ms) => {
        server.faults.latencyMs = ms;
      },
      dropWatches: (o) => server.watches.dropAll(o?.abrupt ?? false),
      compact: () => server.api.store.compactTo(server.api.store.resourceVersion),
      refuseConnections: (ms) => server.refuseConnections(ms),
      reset: () => server.faults.clear(),
    },
    resourceVersion: () => String(server.api.store.resourceVersion),
    setGc: (enabled) => {
      server.controllers.enabled = enabled;
    },
    openWatches: () => server.watches.count,
    stop: () =>
      (stopped ??= (async () => {
        await server.stop();
        if (tempDir) await rm(tempDir, { recursive: true, force: true });
      })()),
  };
}
