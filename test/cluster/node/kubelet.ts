/**
 * A kubelet for the real control plane, which has none: it registers a Node (node.ts), and runs
 * every Pod the scheduler binds to it as local processes, one per container:
 *   - the command its image stands for here (`images`), with the container's command/args and env
 *     (`value`, and the `fieldRef`s metadata.name/namespace/uid, spec.nodeName,
 *     spec.serviceAccountName, status.podIP/hostIP);
 *   - an address of its own in the pod network (`podNet`: `<podNet>.2`, `.3`, …, reused once free):
 *     on a real node (`netns`) in a network namespace of the pod's own, where its processes run and
 *     bind every address (`0.0.0.0`) as in a cluster; on the host otherwise, where the image's
 *     `env(podIP)` tells its process to bind the pod's address;
 *   - the pod's ServiceAccount identity: a token from the TokenRequest API, bound to the pod, in a
 *     kubeconfig (`KUBECONFIG`) for the API, so RBAC sees the pod's ServiceAccount;
 *   - an emptyDir is a fresh directory, a secret or configMap volume a directory of its files
 *     (volumes.ts), and an env value under a mountPath points into it.
 * Status is written as the kubelet writes it: Running with podIP and hostIP once the containers start,
 * Ready while the readiness probe (httpGet or tcpSocket, at podIP, with the probe's own
 * periodSeconds, failureThreshold, successThreshold and initialDelaySeconds; no probe: Ready once
 * started) passes; a liveness probe that fails its threshold restarts the container; a container
 * that exits is restarted with back-off (CrashLoopBackOff meanwhile); an image `images` does not
 * know is ImagePullBackOff. A deleted Pod (deletionTimestamp set) runs its preStop exec hook, then
 * gets SIGTERM, SIGKILL when its grace period (deletionGracePeriodSeconds) ends, and once every
 * process has exited the kubelet removes the Pod (delete, grace 0, uid precondition).
 *
 * It is independent of the code under test: client-node informers and node:child_process only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
  type ListWatch,
  type V1Container,
  type V1ContainerStatus,
  type V1Pod,
  type V1Probe,
} from '@kubernetes/client-node';
import { resolveContainerEnv } from '../../support/cluster/container-env.ts';
import { keepWatching, OnePassAtATime } from '../../support/cluster/watching.ts';
import { kubeconfigYaml } from '../control-plane.ts';
import { registerNode, type RegisteredNode } from './node.ts';
import { writeObjectVolumes } from './volumes.ts';

const strategicMerge = setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch);
const RESTART_BACKOFF_MS = [1000, 2000, 4000, 8000, 10_000];
const TOKEN_SECONDS = 3600;
/** How often a volume whose Secret or ConfigMap is missing is tried again. */
const VOLUME_RETRY_MS = 2000;

export interface Image {
  readonly command: readonly string[];
  /** Env that makes the process bind `bindAddress` (its pod's address on the host, `0.0.0.0` in a namespace of its own). */
  readonly env?: (bindAddress: string, container: V1Container) => Readonly<Record<string, string>>;
}

/** A real node's network (test/cluster/network/real-network.ts), as its kubelet uses it. */
export interface NodeNetns {
  /** The node's address: the Node's InternalIP and its pods' hostIP. */
  readonly nodeIP: string;
  /** Waits for the Node's podCIDR (the controller-manager allocates it) and routes it to the node: its /24's three octets. */
  podNet(): Promise<string>;
  /** A network namespace of the pod's own with `ip`: its name, and how to remove it once its processes have ended. */
  openPod(ip: string): Promise<{ readonly netns: string; close(): Promise<void> }>;
}

export interface NodeKubeletOptions {
  /** The kubelet's own access to the API (the admin here: the Node authorizer's rules are not the point). */
  readonly kubeConfig: KubeConfig;
  /** The API as pods reach it, for their kubeconfigs. */
  readonly server: { readonly url: string; readonly caPem: string };
  readonly nodeName: string;
  /** Three octets in the pod network; the node is `.1`, pods `.2` onwards. Unused with `netns` (the Node's podCIDR's). */
  readonly podNet: string;
  /** Pods in network namespaces of their own on this real node's network, instead of addresses on the host. */
  readonly netns?: NodeNetns;
  /** By image; `undefined`: it cannot be pulled. */
  readonly images: (image: string) => Image | undefined;
  /** Where each container's output also goes, as `<namespace>_<pod>_<container>.log` (kubectl logs needs a kubelet's API, which this has not). */
  readonly logDir?: string;
}

export interface NodeKubelet {
  readonly nodeName: string;
  /** `namespace/name` of the pods whose processes run now, a deleted pod's until every process has exited. */
  running(): string[];
  /** What a pod's containers printed (stdout and stderr, the last 64 KiB each, in container order). */
  output(namespace: string, pod: string): string;
  /** SIGKILLs the processes of a pod's containers, as a crash would: the kubelet restarts them (restartPolicy Always). */
  crash(namespace: string, pod: string): void;
  /** Kills every process, stops heartbeats and watching (the Node stays, as a stopped kubelet's does). */
  stop(): Promise<void>;
}

export async function startNodeKubelet(options: NodeKubeletOptions): Promise<NodeKubelet> {
  const kubelet = new Kubelet(options);
  await kubelet.started();
  return kubelet;
}

/** One container of a running pod. */
interface Container {
  readonly spec: V1Container;
  child: ChildProcess | undefined;
  ready: boolean;
  started: boolean;
  restarts: number;
  state: V1ContainerStatus['state'];
  output: string;
}

/** One pod, from its first sight to its removal. */
interface PodRun {
  readonly key: string;
  readonly uid: string;
  pod: V1Pod;
  readonly podIP: string;
  /** The pod's network namespace, on a real node, once made. */
  sandbox: { readonly netns: string; close(): Promise<void> } | undefined;
  readonly containers: Container[];
  readonly dirs: string[];
  /** The secret and configMap volumes, by name: the directories holding their files. */
  volumes: Record<string, string>;
  terminating: Promise<void> | undefined;
  stopped: boolean;
  statusWrite: Promise<void>;
  lastStatus: string;
}

class Kubelet implements NodeKubelet {
  readonly nodeName: string;
  readonly #options: NodeKubeletOptions;
  readonly #core: CoreV1Api;
  readonly #pods: ListWatch<V1Pod>;
  readonly #synced: Promise<void>;
  readonly #runs = new Map<string, PodRun>();
  readonly #dir = mkdtempSync(join(tmpdir(), 'canary-l4-kubelet-'));
  readonly #sync = new OnePassAtATime(
    () => this.#pass(),
    () => this.#stopped,
  );
  #node: RegisteredNode | undefined;
  #podNet: string;
  #stopped = false;
  readonly #killAllOnExit = () => {
    for (const run of this.#runs.values()) for (const container of run.containers) container.child?.kill('SIGKILL');
  };

  constructor(options: NodeKubeletOptions) {
    this.#options = options;
    this.nodeName = options.nodeName;
    this.#podNet = options.podNet;
    if (options.logDir !== undefined) mkdirSync(options.logDir, { recursive: true });
    this.#core = options.kubeConfig.makeApiClient(CoreV1Api);
    process.once('exit', this.#killAllOnExit);
    const fieldSelector = `spec.nodeName=${options.nodeName}`;
    const { informer, synced } = keepWatching(
      options.kubeConfig,
      '/api/v1/pods',
      () => this.#core.listPodForAllNamespaces({ fieldSelector }),
      () => this.#sync.request(),
      { fieldSelector, retryMs: 300, stopped: () => this.#stopped },
    );
    this.#pods = informer;
    this.#synced = synced;
  }

  async started(): Promise<void> {
    this.#node = await registerNode(this.#options.kubeConfig, this.nodeName, this.#nodeIP);
    if (this.#options.netns !== undefined) this.#podNet = await this.#options.netns.podNet();
    await this.#synced;
    this.#sync.request();
    await this.#sync.idle;
  }

  running(): string[] {
    return [...this.#runs.values()]
      .filter((run) => run.containers.some((container) => container.child !== undefined))
      .map((run) => run.key)
      .sort();
  }

  output(namespace: string, pod: string): string {
    return (
      this.#runs
        .get(`${namespace}/${pod}`)
        ?.containers.map((container) => container.output)
        .join('') ?? ''
    );
  }

  crash(namespace: string, pod: string): void {
    const run = this.#runs.get(`${namespace}/${pod}`);
    if (run === undefined) throw new Error(`no pod ${namespace}/${pod} runs on ${this.nodeName}`);
    for (const container of run.containers) container.child?.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#node?.stop();
    await this.#pods.stop();
    await this.#sync.idle;
    await Promise.all([...this.#runs.values()].map((run) => this.#killPod(run, 2)));
    process.off('exit', this.#killAllOnExit);
    rmSync(this.#dir, { recursive: true, force: true });
  }

  get #nodeIP(): string {
    return this.#options.netns?.nodeIP ?? `${this.#options.podNet}.1`;
  }

  // ----------------------------------------------------------------------------- pods

  async #pass(): Promise<void> {
    const seen = new Set<string>();
    for (const pod of this.#pods.list()) {
      const key = `${pod.metadata!.namespace}/${pod.metadata!.name}`;
      seen.add(key);
      let run = this.#runs.get(key);
      if (run !== undefined && run.uid !== pod.metadata!.uid) {
        // A new pod of the same name: the old one's processes end first.
        await this.#killPod(run, 0);
        run = undefined;
      }
      if (run === undefined) {
        if (pod.metadata?.deletionTimestamp != null || isTerminal(pod)) continue;
        this.#startPod(pod, key);
        continue;
      }
      run.pod = pod;
      if (pod.metadata?.deletionTimestamp != null && run.terminating === undefined) {
        run.terminating = this.#terminate(
          run,
          pod.metadata.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30,
        );
      }
    }
    // Gone without a graceful deletion (a forced delete): the processes end at once.
    for (const [key, run] of this.#runs)
      if (!seen.has(key) && run.terminating === undefined) run.terminating = this.#killPod(run, 2);
  }

  #freeIp(): string {
    // An address stays taken until its pod is gone from the API, not only its processes: the
    // EndpointSlices may still name a terminating pod's address.
    const used = new Set([...this.#runs.values()].map((run) => run.podIP));
    for (const pod of this.#pods.list()) if (pod.status?.podIP !== undefined) used.add(pod.status.podIP);
    for (let host = 2; host <= 250; host++) if (!used.has(`${this.#podNet}.${host}`)) return `${this.#podNet}.${host}`;
    throw new Error(`pod network ${this.#podNet}.0/24 is full`);
  }

  #startPod(pod: V1Pod, key: string): void {
    const run: PodRun = {
      key,
      uid: pod.metadata!.uid!,
      pod,
      podIP: this.#freeIp(),
      sandbox: undefined,
      dirs: [],
      volumes: {},
      terminating: undefined,
      stopped: false,
      statusWrite: Promise.resolve(),
      lastStatus: '',
      containers: pod.spec!.containers.map((spec) => ({
        spec,
        child: undefined,
        ready: false,
        started: false,
        restarts: 0,
        state: { waiting: { reason: 'ContainerCreating' } },
        output: '',
      })),
    };
    this.#runs.set(key, run);
    void (async () => {
      let env: NodeJS.ProcessEnv;
      try {
        env = await this.#podEnv(run);
      } catch (err) {
        for (const container of run.containers)
          container.state = { waiting: { reason: 'CreateContainerConfigError', message: (err as Error).message } };
        this.#writeStatus(run);
        return;
      }
      if (!(await this.#mountVolumes(run))) return;
      if (this.#options.netns !== undefined) {
        try {
          run.sandbox = await this.#options.netns.openPod(run.podIP);
        } catch (err) {
          for (const container of run.containers)
            container.state = { waiting: { reason: 'ContainerCreating', message: (err as Error).message } };
          this.#writeStatus(run);
          return;
        }
        // Stopped while its namespace was being made: nothing else will remove it.
        if (run.stopped) await run.sandbox.close();
      }
      for (const container of run.containers) this.#startContainer(run, container, env);
      this.#writeStatus(run);
    })();
  }

  /**
   * The pod's secret and configMap volumes written (volumes.ts); until their objects exist the pod stays
   * ContainerCreating with the mount's error and the kubelet retries, as the real one does (a Deployment is often
   * applied before its Secret). False when the pod stopped meanwhile.
   */
  async #mountVolumes(run: PodRun): Promise<boolean> {
    for (;;) {
      if (run.stopped || this.#stopped) return false;
      try {
        run.volumes = await writeObjectVolumes(this.#core, run.pod, this.#dir, run.dirs);
        return true;
      } catch (err) {
        for (const container of run.containers)
          container.state = { waiting: { reason: 'ContainerCreating', message: (err as Error).message } };
        this.#writeStatus(run);
        await sleep(VOLUME_RETRY_MS);
      }
    }
  }

  /** What every container of the pod shares: the pod's identity, HOME, and its kubeconfig. */
  async #podEnv(run: PodRun): Promise<NodeJS.ProcessEnv> {
    const pod = run.pod;
    const home = mkdtempSync(join(this.#dir, 'pod-'));
    run.dirs.push(home);
    const account = pod.spec?.serviceAccountName ?? 'default';
    const namespace = pod.metadata!.namespace!;
    const token = await this.#core.createNamespacedServiceAccountToken({
      name: account,
      namespace,
      body: {
        spec: {
          audiences: [],
          expirationSeconds: TOKEN_SECONDS,
          boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata!.name!, uid: run.uid },
        },
      },
    });
    const kubeconfig = join(home, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      kubeconfigYaml(
        this.#options.server.url,
        this.#options.server.caPem,
        `system:serviceaccount:${namespace}:${account}`,
        token.status?.token ?? '',
        namespace,
      ),
      { mode: 0o600 },
    );
    return { PATH: process.env.PATH, HOME: home, KUBECONFIG: kubeconfig };
  }

  /** The container's env as a kubelet resolves it; throws naming what it cannot resolve. */
  #containerEnv(run: PodRun, container: V1Container, podEnv: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    const pod = run.pod;
    const fields: Record<string, string | undefined> = {
      'metadata.name': pod.metadata?.name,
      'metadata.namespace': pod.metadata?.namespace,
      'metadata.uid': run.uid,
      'spec.nodeName': pod.spec?.nodeName,
      'spec.serviceAccountName': pod.spec?.serviceAccountName ?? 'default',
      'status.podIP': run.podIP,
      'status.hostIP': this.#nodeIP,
    };
    const resolved = resolveContainerEnv(pod, container, fields, this.#dir, run.dirs, run.volumes);
    if (typeof resolved === 'string') throw new Error(resolved);
    return { ...podEnv, ...resolved };
  }

  #startContainer(run: PodRun, container: Container, podEnv: NodeJS.ProcessEnv): void {
    const image = this.#options.images(container.spec.image ?? '');
    if (image === undefined) {
      container.state = {
        waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${container.spec.image}"` },
      };
      return;
    }
    let env: NodeJS.ProcessEnv;
    try {
      const bindAddress = run.sandbox === undefined ? run.podIP : '0.0.0.0';
      env = { ...this.#containerEnv(run, container.spec, podEnv), ...image.env?.(bindAddress, container.spec) };
    } catch (err) {
      container.state = { waiting: { reason: 'CreateContainerConfigError', message: (err as Error).message } };
      return;
    }
    const start = () => {
      if (run.stopped || this.#stopped) return;
      // The image's entrypoint, unless the container's command replaces it; args after either.
      const argv = this.#inPod(run, [...(container.spec.command ?? image.command), ...(container.spec.args ?? [])]);
      const child = spawn(argv[0]!, argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
      container.child = child;
      container.started = true;
      container.ready = false;
      container.state = { running: { startedAt: new Date() } };
      const file =
        this.#options.logDir === undefined
          ? undefined
          : join(
              this.#options.logDir,
              `${run.pod.metadata!.namespace}_${run.pod.metadata!.name}_${container.spec.name}.log`,
            );
      const keep = (chunk: string) => {
        container.output = (container.output + chunk).slice(-65_536);
        if (file !== undefined) appendFileSync(file, chunk);
      };
      child.stdout!.setEncoding('utf8').on('data', keep);
      child.stderr!.setEncoding('utf8').on('data', keep);
      child.once('error', (err) => keep(`${err.message}\n`));
      child.once('exit', (code, signal) => {
        container.child = undefined;
        container.ready = false;
        container.started = false;
        const finished = new Date();
        if (run.stopped || this.#stopped) {
          container.state = {
            terminated: {
              exitCode: code ?? (signal === 'SIGKILL' ? 137 : 143),
              reason: code === 0 ? 'Completed' : 'Error',
              finishedAt: finished,
            },
          };
          return;
        }
        container.restarts++;
        container.state = {
          waiting: {
            reason: 'CrashLoopBackOff',
            message: `back-off restarting failed container ${container.spec.name}: exited with ${signal ?? code}`,
          },
        };
        this.#writeStatus(run);
        void sleep(RESTART_BACKOFF_MS[Math.min(container.restarts - 1, RESTART_BACKOFF_MS.length - 1)]).then(start);
      });
      this.#writeStatus(run);
      void this.#probeLoop(run, container, child);
    };
    start();
  }

  /** Readiness and liveness, as the kubelet runs them, for as long as this process lives. */
  async #probeLoop(run: PodRun, container: Container, child: ChildProcess): Promise<void> {
    const readiness = container.spec.readinessProbe;
    const liveness = container.spec.livenessProbe;
    const alive = () => container.child === child && !run.stopped && !this.#stopped;
    if (readiness === undefined) {
      container.ready = true;
      this.#writeStatus(run);
    }
    const streaks = { readyPass: 0, readyFail: 0, liveFail: 0 };
    const started = Date.now();
    const tick = 100;
    const due = {
      readiness: started + (readiness?.initialDelaySeconds ?? 0) * 1000,
      liveness: started + (liveness?.initialDelaySeconds ?? 0) * 1000,
    };
    while (alive()) {
      const now = Date.now();
      if (readiness !== undefined && now >= due.readiness) {
        due.readiness = now + (readiness.periodSeconds ?? 10) * 1000;
        const ok = await this.#probe(run, container.spec, readiness);
        if (!alive()) return;
        streaks.readyPass = ok ? streaks.readyPass + 1 : 0;
        streaks.readyFail = ok ? 0 : streaks.readyFail + 1;
        const ready = container.ready
          ? streaks.readyFail < (readiness.failureThreshold ?? 3)
          : streaks.readyPass >= (readiness.successThreshold ?? 1);
        if (ready !== container.ready) {
          container.ready = ready;
          this.#writeStatus(run);
        }
      }
      if (liveness !== undefined && now >= due.liveness) {
        due.liveness = now + (liveness.periodSeconds ?? 10) * 1000;
        const ok = await this.#probe(run, container.spec, liveness);
        if (!alive()) return;
        streaks.liveFail = ok ? 0 : streaks.liveFail + 1;
        if (streaks.liveFail >= (liveness.failureThreshold ?? 3)) {
          container.output += `[kubelet simulation] liveness probe failed ${streaks.liveFail} times: restarting\n`;
          child.kill('SIGTERM');
          return;
        }
      }
      await sleep(tick);
    }
  }

  async #probe(run: PodRun, container: V1Container, probe: V1Probe): Promise<boolean> {
    const timeoutMs = (probe.timeoutSeconds ?? 1) * 1000;
    const portOf = (port: number | string | undefined) =>
      typeof port === 'number' ? port : container.ports?.find((p) => p.name === port)?.containerPort;
    if (probe.httpGet !== undefined) {
      const port = portOf(probe.httpGet.port as number | string);
      if (port === undefined) return false;
      try {
        const response = await fetch(`http://${run.podIP}:${port}${probe.httpGet.path ?? '/'}`, {
          signal: AbortSignal.timeout(timeoutMs),
        });
        await response.body?.cancel();
        return response.status >= 200 && response.status < 400;
      } catch {
        return false;
      }
    }
    if (probe.tcpSocket !== undefined) {
      const port = portOf(probe.tcpSocket.port as number | string);
      if (port === undefined) return false;
      return new Promise((resolve) => {
        const socket = connect({ host: run.podIP, port, timeout: timeoutMs }, () => {
          socket.destroy();
          resolve(true);
        });
        socket.once('error', () => resolve(false));
        socket.once('timeout', () => {
          socket.destroy();
          resolve(false);
        });
      });
    }
    // exec and grpc probes are not simulated: they pass.
    return true;
  }

  // ----------------------------------------------------------------------------- status

  /** Writes the pod's status (one write at a time, in order; an unchanged status is not written). */
  #writeStatus(run: PodRun): void {
    run.statusWrite = run.statusWrite
      .then(async () => {
        if (this.#stopped) return;
        const status = this.#status(run);
        const text = JSON.stringify(status, (key, value) =>
          key.endsWith('Time') || key === 'startedAt' || key === 'finishedAt' ? undefined : value,
        );
        if (text === run.lastStatus) return;
        try {
          await this.#core.patchNamespacedPodStatus(
            {
              name: run.pod.metadata!.name!,
              namespace: run.pod.metadata!.namespace!,
              body: { metadata: { uid: run.uid }, status },
            },
            strategicMerge,
          );
          run.lastStatus = text;
        } catch (err) {
          if ((err as { code?: number }).code !== 404 && (err as { code?: number }).code !== 409) throw err;
        }
      })
      .catch(() => undefined);
  }

  #status(run: PodRun): object {
    const before = run.pod.status?.conditions ?? [];
    const now = new Date();
    const condition = (type: string, on: boolean) => {
      const status = on ? 'True' : 'False';
      const previous = before.find((c) => c.type === type);
      return {
        type,
        status,
        lastProbeTime: null,
        lastTransitionTime: previous?.status === status ? previous.lastTransitionTime : now,
      };
    };
    const ready = run.containers.every((container) => container.ready);
    // A deleted pod whose containers have all exited ends in a terminal phase, as the kubelet puts it.
    const exited =
      run.terminating !== undefined && run.containers.every((container) => container.state?.terminated !== undefined);
    const phase = exited
      ? run.containers.every((container) => container.state?.terminated?.exitCode === 0)
        ? 'Succeeded'
        : 'Failed'
      : // Running once a container has started, for good: a pod's phase never goes back to Pending.
        run.pod.status?.phase === 'Running' ||
          run.containers.some((container) => container.started || container.restarts > 0)
        ? 'Running'
        : 'Pending';
    return {
      phase,
      hostIP: this.#nodeIP,
      hostIPs: [{ ip: this.#nodeIP }],
      podIP: run.podIP,
      podIPs: [{ ip: run.podIP }],
      startTime: run.pod.status?.startTime ?? now,
      conditions: [
        condition('PodReadyToStartContainers', true),
        condition('Initialized', true),
        condition('ContainersReady', ready),
        condition('Ready', ready),
        condition('PodScheduled', true),
      ],
      containerStatuses: run.containers.map((container) => ({
        name: container.spec.name,
        image: container.spec.image,
        imageID: '',
        containerID: container.child === undefined ? undefined : `canary-l4-process://${container.child.pid}`,
        ready: container.ready,
        started: container.started,
        restartCount: container.restarts,
        state: container.state,
      })),
    };
  }

  // ----------------------------------------------------------------------------- ending

  /** A graceful deletion: preStop hooks, SIGTERM, SIGKILL at the end of the grace period; then the pod is removed. */
  async #terminate(run: PodRun, graceSeconds: number): Promise<void> {
    const deadline = Date.now() + graceSeconds * 1000;
    await Promise.all(
      run.containers.map(async (container) => {
        const command = container.spec.lifecycle?.preStop?.exec?.command;
        if (command === undefined || container.child === undefined) return;
        const argv = this.#inPod(run, command);
        const hook = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore' });
        const timer = setTimeout(() => hook.kill('SIGKILL'), Math.max(0, deadline - Date.now()));
        await new Promise((resolve) => hook.once('exit', resolve).once('error', resolve));
        clearTimeout(timer);
      }),
    );
    await this.#killPod(run, Math.max(0, (deadline - Date.now()) / 1000));
    this.#writeStatus(run);
    await run.statusWrite;
    // Until the API takes it (or this kubelet stops): a pod left terminating would hold its address.
    while (!this.#stopped) {
      try {
        // In the body: kube-apiserver ignores the query's gracePeriodSeconds when a body comes with it.
        await this.#core.deleteNamespacedPod({
          name: run.pod.metadata!.name!,
          namespace: run.pod.metadata!.namespace!,
          body: { gracePeriodSeconds: 0, preconditions: { uid: run.uid } },
        });
        return;
      } catch (err) {
        const code = (err as { code?: number }).code;
        if (code === 404 || code === 409) return;
        await sleep(500);
      }
    }
  }

  /** Ends every process of the pod: SIGTERM, then SIGKILL after `graceSeconds`; forgets the pod. */
  async #killPod(run: PodRun, graceSeconds: number): Promise<void> {
    run.stopped = true;
    await Promise.all(
      run.containers.map(async (container) => {
        const child = container.child;
        if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceSeconds * 1000);
        await exited;
        clearTimeout(timer);
      }),
    );
    for (const dir of run.dirs) rmSync(dir, { recursive: true, force: true });
    await run.sandbox?.close();
    if (this.#runs.get(run.key) === run) this.#runs.delete(run.key);
  }

  /** `argv` run in the pod's network namespace, if it has one (`ip netns exec` execs it in place: the pid is the process's). */
  #inPod(run: PodRun, argv: readonly string[]): string[] {
    return run.sandbox === undefined ? [...argv] : ['ip', 'netns', 'exec', run.sandbox.netns, ...argv];
  }
}

function isTerminal(pod: V1Pod): boolean {
  return pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed';
}
