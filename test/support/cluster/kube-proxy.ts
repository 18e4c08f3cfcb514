/**
 * A kube-proxy for end-to-end tests. It watches the Services of one namespace (or every namespace)
 * and, for every Service whose `spec.clusterIP` is a loopback address, listens on `clusterIP:port`
 * for each of its TCP and UDP ports, opening and closing listeners as Services and ports come and
 * go. Endpoints are resolved per new connection (per new session for UDP) from the watch caches,
 * as iptables rules would be, from one of two sources:
 *   - `endpoints: 'endpointslices'` (a real control plane): the EndpointSlices labelled with the
 *     Service's name that the EndpointSlice controller writes, as kube-proxy reads them: the slice
 *     port of the Service port's name and protocol, the endpoints whose `ready` is not false, or,
 *     when none is, the `serving` terminating ones (kube-proxy's terminating fallback);
 *   - `endpoints: 'pods'` (the default; the fake apiserver has no EndpointSlice controller): pods
 *     matching the selector (equality; an empty selector matches nothing), not terminating, with a
 *     podIP and Ready=True, the targetPort resolved per pod.
 * Round robin among them. No endpoint, or an upstream that refuses, resets the client (kube-proxy's
 * REJECT). Established connections keep their endpoint whatever the Service does next (conntrack).
 *
 * It is independent of the code under test: client-node informers, node:net and node:dgram only.
 *
 * ```ts
 * const proxy = await startKubeProxy({ kubeConfig: api.kubeConfig, namespace: 'default' });
 * // a Service with clusterIP <ip> and port 80 → connect to <ip>:80
 * proxy.counters('web', 80);   // { accepted, rejectedNoEndpoints, upstreamFailed }
 * await proxy.stop();
 * ```
 */
import dgram from 'node:dgram';
import net from 'node:net';
import {
  CoreV1Api,
  DiscoveryV1Api,
  type KubeConfig,
  type KubernetesListObject,
  type KubernetesObject,
  type ListWatch,
  type V1EndpointSlice,
  type V1Pod,
  type V1Service,
  type V1ServicePort,
} from '@kubernetes/client-node';
import { isPodReady } from './pods.ts';
import { keepWatching, OnePassAtATime } from './watching.ts';

export interface KubeProxyOptions {
  kubeConfig: KubeConfig;
  /** The namespace whose Services it serves; every namespace when absent. */
  namespace?: string;
  /** Where endpoints come from (above). Default `pods`. */
  endpoints?: 'pods' | 'endpointslices';
  /** A UDP session ends after this long without a datagram either way. Default 30 000. */
  udpIdleTimeoutMs?: number;
}

export type L4Protocol = 'TCP' | 'UDP';

/** Per Service port. */
export interface PortCounters {
  /** TCP connections / UDP sessions sent on to an endpoint. */
  accepted: number;
  /** TCP connections reset / UDP datagrams dropped because no endpoint was ready. */
  rejectedNoEndpoints: number;
  /** Accepted ones whose upstream failed to connect (TCP) or errored (UDP); the client was reset. */
  upstreamFailed: number;
}

export interface KubeProxy {
  /** `clusterIP:port/PROTOCOL` of every open listener, sorted. */
  listeners(): string[];
  /** The counters of one Service port (all zero if it saw no traffic). */
  counters(service: string, port: number, protocol?: L4Protocol): PortCounters;
  /** Why the last bind of a listener failed (e.g. EADDRINUSE), by listener; retried on the next change. */
  readonly bindErrors: ReadonlyMap<string, Error>;
  /** Closes every listener, connection and session, and stops watching. */
  stop(): Promise<void>;
}

/** Starts watching; resolves once both caches are filled and the listeners they call for are open. */
export async function startKubeProxy(options: KubeProxyOptions): Promise<KubeProxy> {
  const proxy = new KubeProxySimulation(options);
  await proxy.started();
  return proxy;
}

interface Endpoint {
  host: string;
  port: number;
}

/** The Service port a listener stands for: one `clusterIP:port/PROTOCOL`. */
interface Frontend {
  ip: string;
  port: number;
  protocol: L4Protocol;
}

interface Listener {
  /** Stops listening (synchronously: the address is free when it returns). */
  close(): void;
}

interface UdpSession {
  readonly endpoint: Endpoint;
  forward(datagram: Buffer): void;
  end(): void;
}

const frontendKey = (f: Frontend) => `${f.ip}:${f.port}/${f.protocol}`;
const LOOPBACK_V4 = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const INFORMER_RETRY_MS = 500;

class KubeProxySimulation implements KubeProxy {
  readonly bindErrors = new Map<string, Error>();
  readonly #namespace: string | undefined;
  readonly #udpIdleTimeoutMs: number;
  readonly #services: ListWatch<V1Service>;
  /** Endpoints are read when a connection comes, so changes of these need no work now. */
  readonly #endpointSource: {
    readonly informer: ListWatch<V1Pod> | ListWatch<V1EndpointSlice>;
    endpoints(svc: V1Service, port: V1ServicePort, protocol: L4Protocol): Endpoint[];
  };
  readonly #synced: Promise<void>[] = [];
  readonly #listeners = new Map<string, Listener>();
  readonly #counters = new Map<string, PortCounters>();
  readonly #nextEndpoint = new Map<string, number>();
  /** Every proxied socket, so stop() can end them (connections outlive their listener otherwise). */
  readonly #sockets = new Set<net.Socket | dgram.Socket>();
  readonly #sync = new OnePassAtATime(
    () => this.#syncListeners(),
    () => this.#stopped,
  );
  #stopped = false;

  constructor(options: KubeProxyOptions) {
    this.#namespace = options.namespace;
    this.#udpIdleTimeoutMs = options.udpIdleTimeoutMs ?? 30_000;
    const core = options.kubeConfig.makeApiClient(CoreV1Api);
    const ns = options.namespace;
    const path = (group: string, resource: string) =>
      `${group}${ns === undefined ? '' : `/namespaces/${ns}`}/${resource}`;
    this.#services = this.#informer(
      options.kubeConfig,
      path('/api/v1', 'services'),
      () => (ns === undefined ? core.listServiceForAllNamespaces() : core.listNamespacedService({ namespace: ns })),
      () => this.#resync(),
    );
    if (options.endpoints === 'endpointslices') {
      const discovery = options.kubeConfig.makeApiClient(DiscoveryV1Api);
      const slices = this.#informer(
        options.kubeConfig,
        path('/apis/discovery.k8s.io/v1', 'endpointslices'),
        () =>
          ns === undefined
            ? discovery.listEndpointSliceForAllNamespaces()
            : discovery.listNamespacedEndpointSlice({ namespace: ns }),
        () => {},
      );
      this.#endpointSource = {
        informer: slices,
        endpoints: (svc, port, protocol) => sliceEndpoints(slices.list(svc.metadata!.namespace), svc, port, protocol),
      };
    } else {
      const pods = this.#informer(
        options.kubeConfig,
        path('/api/v1', 'pods'),
        () => (ns === undefined ? core.listPodForAllNamespaces() : core.listNamespacedPod({ namespace: ns })),
        () => {},
      );
      this.#endpointSource = {
        informer: pods,
        endpoints: (svc, port, protocol) => podEndpoints(pods.list(svc.metadata!.namespace), svc, port, protocol),
      };
    }
  }

  async started(): Promise<void> {
    await Promise.all(this.#synced);
    this.#resync();
    await this.#sync.idle;
  }

  listeners(): string[] {
    return [...this.#listeners.keys()].sort();
  }

  counters(service: string, port: number, protocol: L4Protocol = 'TCP'): PortCounters {
    return {
      ...(this.#counters.get(`${service}:${port}/${protocol}`) ?? {
        accepted: 0,
        rejectedNoEndpoints: 0,
        upstreamFailed: 0,
      }),
    };
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await Promise.all([this.#services.stop(), this.#endpointSource.informer.stop()]);
    await this.#sync.idle;
    for (const listener of this.#listeners.values()) listener.close();
    this.#listeners.clear();
    for (const s of this.#sockets) s instanceof net.Socket ? s.destroy() : closeQuietly(s);
  }

  #informer<T extends KubernetesObject>(
    kubeConfig: KubeConfig,
    path: string,
    list: () => Promise<KubernetesListObject<T>>,
    onChange: () => void,
  ): ListWatch<T> {
    const { informer, synced } = keepWatching(kubeConfig, path, list, onChange, {
      retryMs: INFORMER_RETRY_MS,
      stopped: () => this.#stopped,
    });
    this.#synced.push(synced);
    return informer;
  }

  // ----------------------------------------------------------------------------- listeners

  /** Brings the listeners in line with the Services; runs one pass at a time, again if asked meanwhile. */
  #resync(): void {
    this.#sync.request();
  }

  async #syncListeners(): Promise<void> {
    const wanted = new Map<string, Frontend>();
    for (const svc of this.#services.list(this.#namespace)) {
      const ip = svc.spec?.clusterIP;
      if (!ip || !LOOPBACK_V4.test(ip)) continue;
      for (const p of svc.spec?.ports ?? []) {
        const protocol = p.protocol ?? 'TCP';
        if (protocol === 'TCP' || protocol === 'UDP')
          wanted.set(frontendKey({ ip, port: p.port, protocol }), { ip, port: p.port, protocol });
      }
    }
    for (const [key, listener] of this.#listeners) {
      if (wanted.has(key)) continue;
      this.#listeners.delete(key);
      listener.close();
    }
    for (const [key, frontend] of wanted) {
      if (this.#listeners.has(key) || this.#stopped) continue;
      try {
        this.#listeners.set(
          key,
          frontend.protocol === 'TCP' ? await this.#listenTcp(frontend) : await this.#listenUdp(frontend),
        );
        this.bindErrors.delete(key);
      } catch (e) {
        this.bindErrors.set(key, e as Error);
      }
    }
  }

  async #listenTcp(frontend: Frontend): Promise<Listener> {
    const server = net.createServer({ allowHalfOpen: true }, (client) => this.#proxyTcp(frontend, client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: frontend.ip, port: frontend.port }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    // The port closes at once; established connections carry on (conntrack), so do not wait for them.
    return { close: () => void server.close() };
  }

  async #listenUdp(frontend: Frontend): Promise<Listener> {
    const socket = dgram.createSocket('udp4');
    const sessions = new Map<string, UdpSession>();
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind({ address: frontend.ip, port: frontend.port }, () => {
        socket.off('error', reject);
        resolve();
      });
    });
    socket.on('error', () => {}); // a failed send to one client must not end the listener
    socket.on('message', (datagram, client) => {
      const id = `${client.address}:${client.port}`;
      let session = sessions.get(id);
      // kube-proxy flushes the conntrack entries of UDP endpoints that went away: a client (or a
      // reused client port) must not stay pinned to a pod that is no longer an endpoint.
      if (session && !this.#isEndpoint(frontend, session.endpoint)) session.end();
      session = sessions.get(id);
      if (!session) {
        const route = this.#route(frontend);
        if (!route) return;
        session = this.#openUdpSession(socket, client, route, () => sessions.delete(id));
        sessions.set(id, session);
      }
      session.forward(datagram);
    });
    return {
      close: () => {
        // Replies leave from the listening socket, so its sessions end with it.
        for (const session of [...sessions.values()]) session.end();
        socket.close();
      },
    };
  }

  // ----------------------------------------------------------------------------- routing

  /** The endpoint for a new connection or session, counted; `undefined` when there is none. */
  #route(frontend: Frontend): { endpoint: Endpoint; counters: PortCounters } | undefined {
    const svc = this.#services.list(this.#namespace).find((s) => s.spec?.clusterIP === frontend.ip);
    const servicePort = svc?.spec?.ports?.find(
      (p) => p.port === frontend.port && (p.protocol ?? 'TCP') === frontend.protocol,
    );
    if (!svc || !servicePort) return undefined; // the Service is going; its listener is about to close
    const key = `${svc.metadata!.name}:${frontend.port}/${frontend.protocol}`;
    let counters = this.#counters.get(key);
    if (!counters) this.#counters.set(key, (counters = { accepted: 0, rejectedNoEndpoints: 0, upstreamFailed: 0 }));
    const endpoints = this.#endpoints(svc, servicePort, frontend.protocol);
    if (endpoints.length === 0) {
      counters.rejectedNoEndpoints++;
      return undefined;
    }
    const turn = this.#nextEndpoint.get(key) ?? 0;
    this.#nextEndpoint.set(key, turn + 1);
    counters.accepted++;
    return { endpoint: endpoints[turn % endpoints.length]!, counters };
  }

  /** Whether `endpoint` is still one of the frontend's endpoints. */
  #isEndpoint(frontend: Frontend, endpoint: Endpoint): boolean {
    const svc = this.#services.list(this.#namespace).find((s) => s.spec?.clusterIP === frontend.ip);
    const servicePort = svc?.spec?.ports?.find(
      (p) => p.port === frontend.port && (p.protocol ?? 'TCP') === frontend.protocol,
    );
    return (
      svc !== undefined &&
      servicePort !== undefined &&
      this.#endpoints(svc, servicePort, frontend.protocol).some(
        (item) => item.host === endpoint.host && item.port === endpoint.port,
      )
    );
  }

  #endpoints(svc: V1Service, servicePort: V1ServicePort, protocol: L4Protocol): Endpoint[] {
    return this.#endpointSource.endpoints(svc, servicePort, protocol);
  }

  // ----------------------------------------------------------------------------- data

  #proxyTcp(frontend: Frontend, client: net.Socket): void {
    this.#track(client);
    client.on('error', () => {});
    const route = this.#route(frontend);
    if (!route) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect({ host: route.endpoint.host, port: route.endpoint.port, allowHalfOpen: true });
    this.#track(upstream);
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      client.pipe(upstream);
      upstream.pipe(client);
    });
    // A reset or error on one side resets the other; pipe() carries each side's FIN (half-close).
    upstream.on('error', () => {
      if (!connected) route.counters.upstreamFailed++;
      resetIfOpen(client);
    });
    client.on('error', () => resetIfOpen(upstream));
    // A side closed without a clean end both ways (destroyed) would leave the other open for good.
    for (const [socket, other] of [
      [client, upstream],
      [upstream, client],
    ] as const)
      socket.once('close', () => {
        if (!(socket.readableEnded && socket.writableFinished)) other.destroy();
      });
  }

  /** A session for `client`: its own upstream socket, connected to the endpoint picked for it. */
  #openUdpSession(
    listener: dgram.Socket,
    client: dgram.RemoteInfo,
    route: { endpoint: Endpoint; counters: PortCounters },
    onEnd: () => void,
  ): UdpSession {
    const upstream = dgram.createSocket('udp4');
    this.#track(upstream);
    const pending: Buffer[] = [];
    let connected = false;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      clearTimeout(idle);
      onEnd();
      closeQuietly(upstream);
    };
    const idle = setTimeout(end, this.#udpIdleTimeoutMs);
    upstream.on('error', () => {
      route.counters.upstreamFailed++;
      end();
    });
    upstream.on('message', (reply) => {
      idle.refresh();
      listener.send(reply, client.port, client.address);
    });
    upstream.connect(route.endpoint.port, route.endpoint.host, () => {
      connected = true;
      for (const datagram of pending.splice(0)) upstream.send(datagram);
    });
    const forward = (datagram: Buffer) => {
      idle.refresh();
      if (connected) upstream.send(datagram);
      else pending.push(datagram);
    };
    return { endpoint: route.endpoint, forward, end };
  }

  #track(socket: net.Socket | dgram.Socket): void {
    this.#sockets.add(socket);
    socket.once('close', () => this.#sockets.delete(socket));
  }
}

/** Ready, non-terminating pods the selector matches, by pod name, with the port the Service targets. */
function podEndpoints(
  pods: readonly V1Pod[],
  svc: V1Service,
  servicePort: V1ServicePort,
  protocol: L4Protocol,
): Endpoint[] {
  const selector = Object.entries(svc.spec?.selector ?? {});
  if (selector.length === 0) return [];
  const endpoints: Array<Endpoint & { pod: string }> = [];
  for (const pod of pods) {
    const labels = pod.metadata?.labels ?? {};
    const host = pod.status?.podIP;
    // A terminating pod goes at once, even while still Ready: the endpoints controller drops it as
    // soon as deletionTimestamp is set, though its containers may still answer for a while.
    if (!selector.every(([k, v]) => labels[k] === v) || pod.metadata?.deletionTimestamp || !host || !isPodReady(pod))
      continue;
    const port = targetPortOf(pod, servicePort, protocol);
    if (port !== undefined) endpoints.push({ host, port, pod: pod.metadata!.name! });
  }
  return endpoints.sort((a, b) => a.pod.localeCompare(b.pod));
}

/**
 * The Service port's endpoints as kube-proxy reads the EndpointSlices: ready ones, or, when none is
 * ready, the serving ones that are terminating; sorted by address.
 */
function sliceEndpoints(
  slices: readonly V1EndpointSlice[],
  svc: V1Service,
  servicePort: V1ServicePort,
  protocol: L4Protocol,
): Endpoint[] {
  const ready: Endpoint[] = [];
  const terminating: Endpoint[] = [];
  for (const slice of slices) {
    if (slice.metadata?.labels?.['kubernetes.io/service-name'] !== svc.metadata?.name || slice.addressType !== 'IPv4')
      continue;
    const port = slice.ports?.find(
      (p) => (p.name ?? '') === (servicePort.name ?? '') && (p.protocol ?? 'TCP') === protocol,
    )?.port;
    if (port === undefined || port === null) continue;
    for (const endpoint of slice.endpoints ?? []) {
      const host = endpoint.addresses[0];
      if (host === undefined) continue;
      if (endpoint.conditions?.ready !== false) ready.push({ host, port });
      else if (endpoint.conditions?.serving === true && endpoint.conditions.terminating === true)
        terminating.push({ host, port });
    }
  }
  const chosen = ready.length > 0 ? ready : terminating;
  return chosen.sort((a, b) => a.host.localeCompare(b.host, 'en', { numeric: true }));
}

/** A numeric targetPort as is; a named one is the pod's container port of that name and protocol. */
function targetPortOf(pod: V1Pod, servicePort: V1ServicePort, protocol: L4Protocol): number | undefined {
  const target = servicePort.targetPort ?? servicePort.port;
  if (typeof target === 'number') return target;
  for (const container of pod.spec?.containers ?? [])
    for (const p of container.ports ?? [])
      if (p.name === target && (p.protocol ?? 'TCP') === protocol) return p.containerPort;
  return undefined;
}

function resetIfOpen(socket: net.Socket): void {
  if (!socket.destroyed) socket.resetAndDestroy();
}

/** dgram throws when a socket is closed twice; a session and stop() may both close one. */
function closeQuietly(socket: dgram.Socket): void {
  try {
    socket.close();
  } catch {
    // already closed
  }
}
