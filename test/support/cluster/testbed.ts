// A small cluster for end-to-end tests of a release with real traffic as clients see it: the API
// under test (the fake, or a real control plane: test/support/cluster/api-under-test.ts), a kube-proxy
// simulation that routes every Service's cluster IP to its endpoints (the Ready pods its selector
// matches on the fake; the real EndpointSlices on a real API: test/support/cluster/kube-proxy.ts), pods
// played by named backends on their own addresses in the test's pod network, the proxy's own pod,
// kubectl, and clients that keep connecting to a Service and count what answered. Used by the
// never-strand tests and the soak.

import dgram from 'node:dgram';
import type { V1Container, V1ContainerPort, V1Service } from '@kubernetes/client-node';
import { API_VERSION, defaultProxySelector, KIND, type Labels } from '../../../src/api/names.ts';
import { renderProxy } from '../../../src/manager/render.ts';
import type { ManagedRelease } from '../../../src/api/proxy-types.ts';
import { askName, startNamedBackend, udpAsk, type TcpBackend } from '../net/backends.ts';
import { kubectlFor, type Kubectl } from './api-fixtures.ts';
import type { FakeApiServerOptions } from '../fake-apiserver/index.ts';
import { startKubeProxy, type KubeProxy } from './kube-proxy.ts';
import { Pods } from './pods.ts';
import { getRelease, getService, NAMESPACE, startCluster, startUdpNamed, type Cluster } from './release-cluster.ts';
import { takeoverValue } from '../../../src/control/service/takeover-selector.ts';
import { takeoverLabels } from '../../../src/api/labels.ts';
import { sleep, waitFor } from '../wait.ts';

export type Protocol = 'TCP' | 'UDP';

export interface PodPort {
  readonly port: number;
  readonly protocol?: Protocol;
  /** The container port's name, which a Service's named targetPort resolves to. */
  readonly name?: string;
}

export interface Testbed {
  readonly cluster: Cluster;
  readonly kubeProxy: KubeProxy;
  readonly pods: Pods;
  readonly kubectl: Kubectl;
  /** The test's pod network as the API publishes it (three octets). */
  readonly podNet: string;
  /** A Ready pod at the next pod IP whose backends answer `answer` on each port (TCP: the text; UDP: `answer:<datagram>`). */
  startPod(name: string, labels: Labels, ports: readonly PodPort[], answer?: string, ready?: boolean): Promise<string>;
  /**
   * The pod of a proxy (in-process or a child), labelled for the release, at `podIP` (default
   * 127.0.0.1 on the fake, where a proxy on this host listens; `<podNet>.250` on a real API, whose
   * EndpointSlices refuse loopback addresses: a proxy listening on every address answers TCP there,
   * but answers UDP from the address the kernel picks, so a UDP test gives the proxy that podIP). It plays the manager's part for the labels: it
   * starts with `keys` taken over (default none: the manager's first rendering knows no Service)
   * and then carries whatever status.takeover asks, as the manager's rollout would give it. Its
   * container ports are the manager's rendering: the proxy's admin port and the named targetPorts.
   */
  startProxyPod(release: string, options?: { name?: string; podIP?: string; keys?: readonly string[] }): Promise<void>;
  /** Stops the backends of a pod (the pod object stays: a crashed container). */
  stopPodBackends(name: string): Promise<void>;
  clusterIp(service: string): Promise<string>;
  stop(): Promise<void>;
}

/** `podNet` is three octets, a loopback range's `prefix`: pods get `.1`, `.2`, … */
export async function startTestbed(
  serviceCidr: string,
  fakePodNet: string,
  fake: Omit<FakeApiServerOptions, 'serviceCidr'> = {},
): Promise<Testbed> {
  const cluster = await startCluster(serviceCidr, fake);
  const podNet = cluster.api.podNet(fakePodNet);
  const kubeProxy = await startKubeProxy({
    kubeConfig: cluster.api.kubeConfig,
    namespace: NAMESPACE,
    endpoints: cluster.api.real === undefined ? 'pods' : 'endpointslices',
  });
  const pods = new Pods(cluster.api.kubeConfig, NAMESPACE, cluster.api.handNode);
  const kubectl = await kubectlFor(cluster.api);
  const backends = new Map<string, (() => Promise<void>)[]>();
  const followers: Follower[] = [];
  let next = 1;
  return {
    cluster,
    kubeProxy,
    pods,
    kubectl,
    podNet,
    async startPod(name, labels, ports, answer = name, ready = true) {
      const podIP = `${podNet}.${next++}`;
      const closers: (() => Promise<void>)[] = [];
      for (const { port, protocol = 'TCP' } of ports) {
        if (protocol === 'UDP') closers.push(await startUdpNamed(answer, podIP, port));
        else {
          const backend: TcpBackend = await startNamedBackend(answer, podIP, port);
          closers.push(() => backend.close());
        }
      }
      backends.set(name, closers);
      await pods.create({
        name,
        labels: { ...labels },
        ports: ports.map(({ port, protocol = 'TCP', name: portName }) => ({
          ...(portName === undefined ? {} : { name: portName }),
          containerPort: port,
          protocol,
        })),
      });
      await pods.setStatus(name, { phase: 'Running', podIP, ready });
      return podIP;
    },
    async startProxyPod(
      release,
      {
        name = `canary-l4-${release}`,
        podIP = cluster.api.real === undefined ? '127.0.0.1' : `${podNet}.250`,
        keys = [],
      } = {},
    ) {
      const labelsFor = (wanted: readonly string[]) => ({
        ...takeoverLabels({ keys: [...wanted], value: takeoverValue(release) }),
        ...defaultProxySelector(release),
      });
      // The manager's first rendering, before status.takeover (the release may not exist yet: its uid only names the owner).
      const ports = renderedPorts({
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: release, namespace: NAMESPACE, uid: 'not-yet-created' },
      });
      await pods.createReady({ name, labels: labelsFor(keys), containers: [proxyContainer(ports)], podIP });
      followers.push(followTakeover(cluster, pods, release, { name, podIP }, labelsFor));
    },
    async stopPodBackends(name) {
      await Promise.all((backends.get(name) ?? []).map((close) => close()));
      backends.delete(name);
    },
    async clusterIp(service) {
      const found: V1Service | undefined = await getService(cluster, service);
      const ip = found?.spec?.clusterIP;
      if (ip === undefined) throw new Error(`Service ${service} has no cluster IP`);
      return ip;
    },
    async stop() {
      for (const follower of followers) follower.stop();
      await Promise.all(followers.map((follower) => follower.done));
      await kubeProxy.stop();
      await Promise.all([...backends.values()].flat().map((close) => close()));
      await kubectl.cleanup();
      await cluster.stop();
    },
  };
}

/** A Running, Ready pod whose server the test starts itself (a canary that can be told to go bad, or refuse). */
export async function podAt(
  bed: Testbed,
  name: string,
  labels: Labels,
  podIP: string,
  port: number,
  protocol: Protocol,
): Promise<void> {
  await bed.pods.create({ name, labels, ports: [{ containerPort: port, protocol }] });
  await bed.pods.setStatus(name, { phase: 'Running', podIP, ready: true });
}

/** What the proxy pods run; only their ports matter here. */
const PROXY_IMAGE = 'canary-l4:test';

function proxyContainer(ports: V1ContainerPort[]): V1Container {
  return { name: 'proxy', image: PROXY_IMAGE, ports };
}

/** The proxy container's ports as the manager renders them for the release. */
function renderedPorts(release: ManagedRelease): V1ContainerPort[] {
  const rendered = renderProxy(release, { proxyImage: PROXY_IMAGE });
  if (!rendered.ok)
    throw new Error(`the manager cannot render release ${release.metadata.name}: ${rendered.problems.join('; ')}`);
  return rendered.objects.deployment.spec?.template.spec?.containers[0]?.ports ?? [];
}

interface Follower {
  stop(): void;
  readonly done: Promise<void>;
}

/**
 * The manager's part for one proxy pod: its labels and named container ports follow
 * status.takeover of the release (the manager renders them into the pod template, its admin port
 * among the ports, and rolls the pods). New labels are put on the pod in place; new ports, which a
 * pod cannot change, come with a new pod at the same address, Ready before the old one goes (the
 * rollout's surge), as its end result.
 */
function followTakeover(
  cluster: Cluster,
  pods: Pods,
  release: string,
  pod: { name: string; podIP: string },
  labelsFor: (keys: readonly string[]) => Labels,
): Follower {
  let stopped = false;
  let applied = '';
  let current = pod.name;
  let generation = 0;
  const done = (async () => {
    while (!stopped) {
      try {
        const found = await getRelease(cluster, release);
        const takeover = found?.status?.takeover;
        const wanted = JSON.stringify([takeover?.keys ?? [], takeover?.namedPorts ?? []]);
        if (takeover !== undefined && wanted !== applied) {
          const live = await cluster.core.readNamespacedPod({ name: current, namespace: NAMESPACE });
          const labels = labelsFor(takeover.keys);
          const ports = renderedPorts(found!);
          const samePorts = JSON.stringify(live.spec?.containers[0]?.ports ?? []) === JSON.stringify(ports);
          if (samePorts) {
            const dropped = Object.keys(live.metadata?.labels ?? {}).filter((key) => !(key in labels));
            await pods.relabel(current, { ...Object.fromEntries(dropped.map((key) => [key, null])), ...labels });
          } else {
            const next = `${pod.name}-${++generation}`;
            // A fresh container: the live one carries what admission added (a real API's token volume mount), which a new pod may not name.
            await pods.createReady({ name: next, labels, containers: [proxyContainer(ports)], podIP: pod.podIP });
            await pods.delete(current);
            current = next;
          }
          applied = wanted;
        }
      } catch (error) {
        // The release or the pod not there (yet, or any more), or a conflict: the next round sees.
        // Another answer of the API is the testbed's own mistake, said rather than retried in silence
        // (no answer at all is the API server stopping at the end of a test).
        const code = (error as { code?: unknown }).code;
        if (typeof code === 'number' && code !== 404 && code !== 409)
          console.error(
            `testbed: proxy pod ${current} cannot follow status.takeover: ${(error as { body?: string }).body ?? String(error)}`,
          );
      }
      await sleep(25);
    }
  })();
  return {
    stop: () => {
      stopped = true;
    },
    done,
  };
}

export interface Attempt {
  /** When it started and when it ended, in milliseconds since the traffic started. */
  readonly at: number;
  readonly end: number;
  /** Who answered, or undefined when the connection or flow failed. */
  readonly answer: string | undefined;
  readonly error?: string;
}

export interface Traffic {
  readonly attempts: readonly Attempt[];
  /** Answers by name, and `failed`. */
  counts(from?: number): Record<string, number>;
  /** Attempts that failed, after `from` ms. */
  failures(from?: number): Attempt[];
  /** Milliseconds since the traffic started. */
  now(): number;
  stop(): Promise<void>;
}

export interface TrafficOptions {
  readonly pauseMs?: number;
  readonly maxAttempts?: number;
  readonly maxMs?: number;
  readonly udpTimeoutMs?: number;
  /** UDP: every datagram from this one source port, so all are one flow (one conntrack entry), as a long-lived client's are. */
  readonly udpSourcePort?: number;
}

/** One connection (TCP) or flow (UDP) to `host:port`: the name of who answered; rejects when none did. */
async function askOnce(
  host: string,
  port: number,
  protocol: Protocol,
  options: { udpTimeoutMs?: number | undefined; socket?: dgram.Socket | undefined } = {},
): Promise<string> {
  if (protocol === 'TCP') {
    // A connection closed before any answer (a process that died with it accepted) failed too.
    const answer = await askName(port, host);
    if (answer === '') throw new Error('closed without an answer');
    return answer;
  }
  const timeoutMs = options.udpTimeoutMs ?? 1000;
  const [reply] = await udpAsk(port, 'ping', {
    host,
    timeoutMs,
    ...(options.socket === undefined ? {} : { socket: options.socket }),
  });
  if (reply === undefined) throw new Error(`no UDP reply within ${timeoutMs} ms`);
  return reply.slice(0, reply.indexOf(':'));
}

/**
 * Waits until `host:port` answers, as a client sees a Service come up: the kube-proxy routes it only
 * once its endpoints are published (on a real API the EndpointSlice controller's write, which a
 * loaded machine delays by seconds). Traffic whose every failure counts starts after this.
 */
export async function waitForAnswer(
  host: string,
  port: number,
  protocol: Protocol,
  timeoutMs = 20_000,
): Promise<string> {
  // waitFor returns only a truthy value: a name.
  return (await waitFor(
    () => askOnce(host, port, protocol).catch(() => undefined),
    `${host}:${port}/${protocol} to answer`,
    timeoutMs,
  ))!;
}

/**
 * A client that keeps opening new connections (TCP) or new flows (UDP, one datagram from a fresh
 * socket, or from the one `udpSourcePort` socket; no reply within `udpTimeoutMs` fails it) to
 * `host:port`, one at a time with `pauseMs` between them, until stopped, `maxAttempts` or `maxMs`
 * (bounded, so a test that fails before stopping it cannot keep the process alive).
 */
export function startTraffic(
  host: () => string,
  port: number,
  protocol: Protocol,
  options: TrafficOptions = {},
): Traffic {
  const attempts: Attempt[] = [];
  const started = Date.now();
  let stopped = false;
  const flow = options.udpSourcePort === undefined ? undefined : dgram.createSocket('udp4').bind(options.udpSourcePort);
  const ask = () => askOnce(host(), port, protocol, { udpTimeoutMs: options.udpTimeoutMs, socket: flow });
  const loop = (async () => {
    const deadline = started + (options.maxMs ?? 60_000);
    while (!stopped && attempts.length < (options.maxAttempts ?? 100_000) && Date.now() < deadline) {
      const at = Date.now() - started;
      try {
        const answer = await ask();
        attempts.push({ at, end: Date.now() - started, answer });
      } catch (err) {
        attempts.push({ at, end: Date.now() - started, answer: undefined, error: (err as Error).message });
      }
      await sleep(options.pauseMs ?? 5);
    }
    flow?.close();
  })();
  return trafficOf(
    attempts,
    () => Date.now() - started,
    async () => {
      stopped = true;
      await loop;
    },
  );
}

/** A Traffic over `attempts` as they are made (here, or reported by a client elsewhere). */
export function trafficOf(attempts: Attempt[], now: () => number, stop: () => Promise<void>): Traffic {
  return {
    attempts,
    counts: (from = 0) => {
      const counts: Record<string, number> = {};
      for (const attempt of attempts) {
        if (attempt.at < from) continue;
        const key = attempt.answer ?? 'failed';
        counts[key] = (counts[key] ?? 0) + 1;
      }
      return counts;
    },
    failures: (from = 0) => attempts.filter((attempt) => attempt.at >= from && attempt.answer === undefined),
    now,
    stop,
  };
}
