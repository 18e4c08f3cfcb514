/**
 * The pods' servers, for end-to-end traffic tests against the fake apiserver's Deployment
 * simulation (which runs no processes): for every Running pod with a podIP in a namespace that
 * matches a label selector, a TCP server (UDP for UDP container ports) on `podIP:containerPort` for
 * each container port, answering with a string derived from the pod — by default its first
 * container's image, so a test sees which version answered. TCP writes the answer and ends; UDP
 * replies `<answer>:<datagram>`. A pod's servers close when it goes away, stops Running or stops
 * matching (the selector is the watch's, so a relabelled pod leaves it). A terminating pod
 * (deletionTimestamp set, still Running) is served until its object is gone, as its containers run
 * until they exit or the grace period ends: connections routed to it before kube-proxy saw the
 * deletion still get an answer. (New ones are accepted too; that kube-proxy no longer sends any
 * its way is what matters.)
 *
 * A pod can be told to misbehave, as a bad release would (for trying an automatic rollback): its first
 * container's env `FAKE_POD_FAULT` = `reset=30` resets 30 % of its TCP connections (evenly spread:
 * 3 of every 10) instead of answering; `udp-silent` receives UDP and never replies. Off unless set.
 *
 * ```ts
 * const servers = await startPodServers({ kubeConfig: api.kubeConfig, namespace: 'default', labelSelector: 'app=web' });
 * servers.listening();   // ['<pod IP>:8080/TCP', '<pod IP>:8081/UDP', …]
 * await servers.stop();
 * ```
 *
 * Independent of the code under test: client-node informers, node:net and node:dgram only.
 */
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { CoreV1Api, type KubeConfig, type ListWatch, type V1Pod } from '@kubernetes/client-node';
import { keepWatching, OnePassAtATime } from './watching.ts';

export interface PodServersOptions {
  readonly kubeConfig: KubeConfig;
  readonly namespace: string;
  /** The pods to serve for (e.g. `app=web`); default every pod of the namespace. */
  readonly labelSelector?: string;
  /** What a pod's servers answer; default its first container's image. */
  readonly answer?: (pod: V1Pod) => string;
}

export interface PodServers {
  /** `<podIP>:<port>/<TCP|UDP>` of every server listening now, sorted. */
  listening(): string[];
  /** Settles once the servers match the pods the watch has seen so far. */
  settled(): Promise<void>;
  /** Closes every server and stops watching. */
  stop(): Promise<void>;
}

/** One server as it should be: where, and for which pod with which answer. */
export interface Wanted {
  readonly ip: string;
  readonly port: number;
  readonly protocol: 'TCP' | 'UDP';
  /** The pod's uid and the answer: a new pod on a reused address, or a new answer, is a new server. */
  readonly owner: string;
  readonly answer: string;
  readonly fault: Fault;
}

/** What a pod's FAKE_POD_FAULT asks of its servers. */
export interface Fault {
  /** Percentage of TCP connections reset rather than answered. */
  readonly resetPercent: number;
  readonly udpSilent: boolean;
}

export const FAULT_ENV = 'FAKE_POD_FAULT';

function faultOf(pod: V1Pod): Fault {
  return parseFault(pod.spec?.containers[0]?.env?.find((variable) => variable.name === FAULT_ENV)?.value ?? '');
}

/** `reset=<percent>`, `udp-silent`, or anything else: no fault. */
export function parseFault(value: string): Fault {
  const reset = /^reset=(\d{1,3})$/.exec(value);
  return { resetPercent: reset ? Math.min(100, Number(reset[1])) : 0, udpSilent: value === 'udp-silent' };
}

export interface Serving {
  readonly owner: string;
  close(): Promise<void>;
}

export async function startPodServers(options: PodServersOptions): Promise<PodServers> {
  const servers = new PodServerSet(options);
  await servers.started();
  return servers;
}

class PodServerSet implements PodServers {
  readonly #answer: (pod: V1Pod) => string;
  readonly #pods: ListWatch<V1Pod>;
  readonly #synced: Promise<void>;
  readonly #serving = new Map<string, Serving>();
  /** Passes one at a time; a pass that fails to bind (an address still held) runs again shortly. */
  readonly #sync = new OnePassAtATime(
    () => this.#pass(),
    () => this.#stopped,
  );
  #stopped = false;

  constructor(options: PodServersOptions) {
    this.#answer = options.answer ?? ((pod) => pod.spec?.containers[0]?.image ?? '');
    const core = options.kubeConfig.makeApiClient(CoreV1Api);
    const { namespace, labelSelector } = options;
    const { informer, synced } = keepWatching(
      options.kubeConfig,
      `/api/v1/namespaces/${namespace}/pods`,
      () => core.listNamespacedPod({ namespace, labelSelector }),
      () => this.#sync.request(),
      { labelSelector, retryMs: 300, stopped: () => this.#stopped },
    );
    this.#pods = informer;
    this.#synced = synced;
  }

  async started(): Promise<void> {
    await this.#synced;
    await this.settled();
  }

  listening(): string[] {
    return [...this.#serving.keys()].sort();
  }

  async settled(): Promise<void> {
    this.#sync.request();
    await this.#sync.idle;
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await this.#pods.stop();
    await this.#sync.idle;
    await Promise.all([...this.#serving.values()].map((serving) => serving.close()));
    this.#serving.clear();
  }

  async #pass(): Promise<void> {
    const wanted = new Map(
      this.#pods
        .list()
        .flatMap((pod) => this.#wanted(pod))
        .map((w) => [`${w.ip}:${w.port}/${w.protocol}`, w]),
    );
    // Close first: a pod that took over an address (or a port) waits for the old server to let go.
    const closing = [...this.#serving].filter(([key, serving]) => wanted.get(key)?.owner !== serving.owner);
    for (const [key] of closing) this.#serving.delete(key);
    await Promise.all(closing.map(([, serving]) => serving.close()));
    const opening = [...wanted].filter(([key]) => !this.#serving.has(key));
    const opened = await Promise.allSettled(
      opening.map(async ([key, w]) => {
        const serving = await (w.protocol === 'TCP' ? serveTcp(w) : serveUdp(w));
        if (this.#stopped) return serving.close();
        this.#serving.set(key, serving);
      }),
    );
    const failed = opened.find((result) => result.status === 'rejected');
    if (failed) throw failed.reason;
  }

  #wanted(pod: V1Pod): Wanted[] {
    const ip = pod.status?.podIP;
    if (!ip || pod.status?.phase !== 'Running') return [];
    const answer = this.#answer(pod);
    const fault = faultOf(pod);
    const owner = `${pod.metadata?.uid}/${answer}/${JSON.stringify(fault)}`;
    return (pod.spec?.containers ?? [])
      .flatMap((container) => container.ports ?? [])
      .filter((port) => (port.protocol ?? 'TCP') !== 'SCTP')
      .map((port) => ({
        ip,
        port: port.containerPort,
        protocol: (port.protocol ?? 'TCP') as 'TCP' | 'UDP',
        owner,
        answer,
        fault,
      }));
  }
}

export async function serveTcp(w: Wanted): Promise<Serving> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => socket.destroy());
    socket.on('close', () => sockets.delete(socket));
    // Evenly spread: the n-th connection is reset when it carries the running share past a whole one.
    const n = accepted++;
    const percent = w.fault.resetPercent;
    if (Math.floor(((n + 1) * percent) / 100) > Math.floor((n * percent) / 100)) socket.resetAndDestroy();
    else socket.end(w.answer);
  });
  server.listen({ host: w.ip, port: w.port, exclusive: true });
  await Promise.race([once(server, 'listening'), once(server, 'error').then(([err]) => Promise.reject(err))]);
  return {
    owner: w.owner,
    close: () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      return closed;
    },
  };
}

export async function serveUdp(w: Wanted): Promise<Serving> {
  const socket: UdpSocket = createSocket('udp4');
  socket.on('message', (datagram, peer) => {
    if (!w.fault.udpSilent) socket.send(`${w.answer}:${datagram.toString('utf8')}`, peer.port, peer.address);
  });
  const bound = Promise.race([once(socket, 'listening'), once(socket, 'error').then(([err]) => Promise.reject(err))]);
  socket.bind({ address: w.ip, port: w.port, exclusive: true });
  try {
    await bound;
  } catch (err) {
    socket.close();
    throw err;
  }
  socket.on('error', () => undefined);
  return { owner: w.owner, close: () => new Promise<void>((resolve) => socket.close(() => resolve())) };
}
