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
 * // or from anywhere: curl -XPOST $URL/_fake/faults/fail-next -d '{"verb":"watch","resource":"pods","code":500}'
 * await api.stop();
 * ```
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import type { FakeFaults } from './faults/faults.ts';
import { makeKubeConfig, writeKubeconfigFile } from './wire/kubeconfig.ts';
import { FakeServer, type RequestRecord } from './server.ts';
import { loopbackRange } from '../net/loopback-ranges.ts';

const defaultServiceNet = loopbackRange(import.meta.url);
const defaultPodNet = loopbackRange(import.meta.url, 1);

export type { FailRule, FakeFaults } from './faults/faults.ts';
export type { RequestRecord } from './server.ts';

export interface FakeApiServerOptions {
  /** TCP port on 127.0.0.1; 0 or absent → ephemeral. */
  port?: number;
  /** Service cluster-IP range (IPv4 CIDR). Default DEFAULT_SERVICE_CIDR, so tests can bind backends. */
  serviceCidr?: string;
  /** Simulate kube-controller-manager's garbage collector and namespace controller. Default true. */
  gc?: boolean;
  /** Server-side watch timeout range [min, max] in seconds when a watch has no timeoutSeconds. Default [1800, 3600]. */
  watchTimeoutSeconds?: [number, number];
  /** Interval between BOOKMARK events on watches that allow them. Default 60000. */
  bookmarkIntervalMs?: number;
  /** Where to write the kubeconfig for kubectl; default a fresh temp dir (removed on stop). */
  kubeconfigPath?: string;
  /**
   * Simulate the Deployment and ReplicaSet controllers, the scheduler and the kubelet (README.md
   * here): ReplicaSets and Pods for every Deployment, rollouts, statuses. Off when absent.
   */
  simulateDeployments?: SimulateDeploymentsOptions;
}

export interface SimulateDeploymentsOptions {
  /** From Running to Ready, as if a readiness probe passed after this long. Default 1000. */
  podReadyDelayMs?: number;
  /** Where pod IPs come from (IPv4, /8–/30). Default DEFAULT_POD_CIDR, so tests can bind on them. */
  podCidr?: string;
  /**
   * A deleted pod's containers stop after its grace period or this long, whichever is shorter;
   * until then it is terminating (deletionTimestamp set, not Ready, still Running). Default 1000.
   */
  podTerminationMs?: number;
}

export const DEFAULT_POD_READY_DELAY_MS = 1000;
/** The Service range of a fake started without one: for files that bind no address in it. */
export const DEFAULT_SERVICE_CIDR = defaultServiceNet.cidr;
/** The simulated pods' range of a fake started without one: for files that bind no address in it. */
export const DEFAULT_POD_CIDR = defaultPodNet.cidr;
export const DEFAULT_POD_TERMINATION_MS = 1000;

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
  const simulate = opts.simulateDeployments;
  const podReadyDelayMs = simulate?.podReadyDelayMs ?? DEFAULT_POD_READY_DELAY_MS;
  if (!Number.isFinite(podReadyDelayMs) || podReadyDelayMs < 0)
    throw new Error(`invalid podReadyDelayMs: ${podReadyDelayMs}`);
  const podTerminationMs = simulate?.podTerminationMs ?? DEFAULT_POD_TERMINATION_MS;
  if (!Number.isFinite(podTerminationMs) || podTerminationMs < 0)
    throw new Error(`invalid podTerminationMs: ${podTerminationMs}`);
  const server = new FakeServer({
    serviceCidr: opts.serviceCidr ?? DEFAULT_SERVICE_CIDR,
    gc: opts.gc ?? true,
    watch: {
      timeoutRange: opts.watchTimeoutSeconds ?? [1800, 3600],
      bookmarkIntervalMs: opts.bookmarkIntervalMs ?? 60_000,
    },
    simulateDeployments: simulate && {
      podReadyDelayMs,
      podCidr: simulate.podCidr ?? DEFAULT_POD_CIDR,
      podTerminationMs,
    },
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
    faults: server.controls,
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
