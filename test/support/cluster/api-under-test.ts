/**
 * The API server an end-to-end test runs against, chosen by one switch: the fake kube-apiserver
 * (the default: instant, with its fault injection and request log), or, with
 * `CANARY_TEST_API=real` (what `npm run test:cluster` sets), a real control plane started for the
 * test file (test/cluster/), with its node simulation. The same test runs on either; what only the
 * fake can do (`fake`) or only the real one has (`real`) is there for the tests that need it, and a
 * test that needs one says so by skipping on the other (`onlyOnFake`).
 *
 * Pods a test plays the kubelet for itself (creates, then writes their status) live in a pod network
 * of its own: `podNet(pods.prefix)` is that network on the fake (any loopback address) and
 * `198.18.91` on the real API, whose EndpointSlices refuse loopback addresses; such pods are bound to
 * a node of their own (`handNode`), registered and kept Ready, whose pods nothing runs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { KubeConfig } from '@kubernetes/client-node';
import { startRealCluster, type RealCluster } from '../../cluster/cluster.ts';
import { registerNode, type RegisteredNode } from '../../cluster/node/node.ts';
import { POD_NETWORK_PREFIX } from '../../cluster/pod-network.ts';
import {
  startFakeApiServer,
  type FakeApiServer,
  type FakeApiServerOptions,
  type RequestRecord,
} from '../fake-apiserver/index.ts';

/** Whether this run's end-to-end tests run against a real control plane. (Not a CANARY_L4_ variable:
 * the commands read those as flags, and refuse one they do not know.) */
export const REAL_API = process.env.CANARY_TEST_API === 'real';

/**
 * Whether the tests that start a cluster of their own on a real control plane (test/cluster/*.test.ts)
 * give it two real nodes (network namespaces, the real kube-proxy: `npm run test:cluster -- --real-node`)
 * instead of the simulated node and kube-proxy.
 */
export const REAL_NODE = process.env.CANARY_TEST_NODE === 'real';

/** `{ skip }` for a test that only the fake can run (its faults, its request log), with the reason. */
export function onlyOnFake(reason: string): { skip: string | false } {
  return { skip: REAL_API ? `fake apiserver only: ${reason}` : false };
}

/**
 * A suite's timeout: `ms` on the fake; on a real control plane, which the suite's before hook
 * starts (and may build), two more minutes.
 */
export function suiteTimeout(ms: number): number {
  return REAL_API ? ms + 120_000 : ms;
}

export interface ApiUnderTest {
  readonly url: string;
  /** Cluster-admin on the real API; anything on the fake. */
  readonly kubeConfig: KubeConfig;
  /** The same, for kubectl. */
  readonly kubeconfigPath: string;
  /** The fake's own hooks; undefined on a real control plane. */
  readonly fake: FakeApiServer | undefined;
  /** The real cluster; undefined on the fake. */
  readonly real: RealCluster | undefined;
  /**
   * Every request answered so far, in RBAC's words: the fake's request log, or the real server's
   * audit log (a watch counts from when it started). `user` is the token on the fake, the user name
   * (a ServiceAccount's `system:serviceaccount:<ns>:<name>`) on the real API.
   */
  requests(): RequestRecord[];
  /** The node the test's own pods are bound to (real API); undefined on the fake, which schedules nothing. */
  readonly handNode: string | undefined;
  /** A test's pod network (three octets, loopback on the fake) as this API can publish it. */
  podNet(fakeNet: string): string;
  stop(): Promise<void>;
}

export const HAND_NODE = 'canary-l4-hand-node';

/** The fake, or a real control plane with `serviceCidr` (its node's pods in `198.18.<third octet of the CIDR>`). */
export async function startApiUnderTest(
  serviceCidr: string,
  fakeOptions: Omit<FakeApiServerOptions, 'serviceCidr'> = {},
): Promise<ApiUnderTest> {
  if (!REAL_API) {
    const fake = await startFakeApiServer({ serviceCidr, ...fakeOptions });
    return {
      url: fake.url,
      kubeConfig: fake.kubeConfig,
      kubeconfigPath: fake.kubeconfigPath,
      fake,
      real: undefined,
      handNode: undefined,
      requests: () => fake.requests,
      podNet: (fakeNet) => fakeNet,
      stop: () => fake.stop(),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'canary-l4-cluster-'));
  const podSubnet = Number(serviceCidr.split('.')[2]);
  let real: RealCluster;
  try {
    real = await startRealCluster({ dir, serviceCidr, podSubnet, removeDir: true });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  let hand: RegisteredNode;
  try {
    hand = await registerNode(real.kubeConfig, HAND_NODE, `${real.podNet}.254`);
  } catch (err) {
    await real.stop();
    throw err;
  }
  return {
    url: real.plane.url,
    kubeConfig: real.kubeConfig,
    kubeconfigPath: real.plane.kubeconfigPath,
    fake: undefined,
    real,
    handNode: HAND_NODE,
    podNet: (fakeNet) => `${POD_NETWORK_PREFIX}.${fakeNet.split('.')[2]}`,
    requests: () =>
      real.plane.auditEvents().map((event) => ({
        verb: event.verb,
        group: event.objectRef?.apiGroup ?? '',
        resource: event.objectRef?.resource ?? '',
        subresource: event.objectRef?.subresource ?? '',
        namespace: event.objectRef?.namespace ?? '',
        name: event.objectRef?.name ?? '',
        user: event.user.username,
        ...(event.objectRef === undefined ? { nonResourceURL: event.requestURI } : {}),
        method: '',
        code: event.responseStatus?.code ?? 0,
      })),
    async stop() {
      hand.stop();
      await real.stop();
    },
  };
}
