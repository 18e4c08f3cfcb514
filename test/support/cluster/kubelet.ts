/**
 * A kubelet (and Deployment controller) for tests against the fake apiserver, which runs no pods.
 * For every Deployment matching `labelSelector` it keeps `spec.replicas` Pods of the current
 * template (labels from the template plus `pod-template-hash`, owned by the Deployment so the
 * garbage collector takes them with it), rolls them when the template changes (the new pods first;
 * the old ones go once every new one is Ready), and writes the Deployment's status (replicas,
 * updatedReplicas, readyReplicas, availableReplicas). Each Pod's container runs as a real local
 * process: the command its image stands for here (`images`), the container's args, and its env
 * with `fieldRef`s resolved (metadata.name, metadata.namespace, status.podIP, spec.nodeName,
 * spec.serviceAccountName). What a pod's own network namespace and volumes would give it is
 * simulated:
 *   - `adminPort.env` (the port the readiness probe reaches) is set to 0 and the port the process
 *     reports (`adminPort.fromLog`) is probed instead, so pods never clash on it;
 *   - `env` adds variables to every container, or to each pod as a function of it (e.g. a port
 *     base per release and SO_REUSEPORT for the ports the pods of a test share on this host);
 *   - an emptyDir mount is a fresh directory, and an env value under its mountPath points into it;
 *   - KUBECONFIG points at the fake with the token `system:serviceaccount:<ns>:<serviceAccountName>`,
 *     so the fake's request log tells each ServiceAccount's requests apart (in a pod: its token).
 * The pod is Running with a `podIP` from `podNet` once its process starts, and Ready (condition
 * and containerStatuses) while its readiness probe (httpGet) answers 2xx. A process that exits is
 * restarted (restartCount, CrashLoopBackOff meanwhile); an image `images` does not know is
 * `ImagePullBackOff`. A deleted Pod's process gets SIGTERM (SIGKILL after 5 s) and counts as running
 * until it has exited, as a draining proxy still holds its ports.
 *
 * It is independent of the code under test: client-node informers and node:child_process only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AppsV1Api,
  CoreV1Api,
  type KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type KubernetesListObject,
  type KubernetesObject,
  type ListWatch,
  type V1Container,
  type V1Deployment,
  type V1Pod,
  type V1PodCondition,
} from '@kubernetes/client-node';
import { resolveContainerEnv } from './container-env.ts';
import { podTemplateHash } from '../fake-apiserver/simulation/template-hash.ts';
import { keepWatching, OnePassAtATime } from './watching.ts';
import { Http1KubeConfig } from '../../../src/kube/client.ts';

const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const PROBE_INTERVAL_MS = 150;
const RESTART_DELAY_MS = 1000;
const KILL_AFTER_MS = 5000;
const TEMPLATE_HASH = 'pod-template-hash';

export interface KubeletOptions {
  /** The kubelet's own access to the fake (its writes are not the pods'). */
  readonly kubeConfig: KubeConfig;
  /** The fake's URL, for the pods' kubeconfigs. */
  readonly apiUrl: string;
  /** Deployments to run, in every namespace. */
  readonly labelSelector: string;
  /** Image → the command its entrypoint is here; any other image cannot be pulled. */
  readonly images: Readonly<Record<string, readonly string[]>>;
  /** Three octets: pod IPs are `<podNet>.1`, `.2`, … */
  readonly podNet: string;
  readonly adminPort: { readonly env: string; readonly fromLog: RegExp };
  readonly env?: Readonly<Record<string, string>> | ((pod: V1Pod) => Readonly<Record<string, string>>);
}

/** One pod's process as the kubelet runs it. */
interface Running {
  readonly pod: V1Pod;
  child: ChildProcess | undefined;
  adminPort: number | undefined;
  ready: boolean;
  restarts: number;
  output: string;
  stopped: boolean;
  readonly dirs: string[];
}

export interface Kubelet {
  /** Names of the pods whose processes run now, a deleted pod's until its process has exited. */
  running(): string[];
  /** What a pod's process printed (stdout and stderr, the last 64 KiB). */
  output(pod: string): string;
  /** Kills every process and stops watching. */
  stop(): Promise<void>;
}

export async function startKubelet(options: KubeletOptions): Promise<Kubelet> {
  const kubelet = new KubeletSimulation(options);
  await kubelet.started();
  return kubelet;
}

class KubeletSimulation implements Kubelet {
  readonly #options: KubeletOptions;
  readonly #core: CoreV1Api;
  readonly #apps: AppsV1Api;
  /** The labelled Deployments, and the pods made for them (they carry a pod-template-hash). */
  readonly #watched: { readonly deployments: ListWatch<V1Deployment>; readonly pods: ListWatch<V1Pod> };
  readonly #synced: Promise<void>[] = [];
  readonly #running = new Map<string, Running>();
  /** Deleted pods whose processes are still ending (SIGTERM: a proxy drains), until they exit. */
  readonly #terminating = new Map<string, Running>();
  readonly #dir = mkdtempSync(join(tmpdir(), 'kubelet-'));
  #nextIp = 1;
  #nextPod = 0;
  /** Passes over the caches, one at a time; one racing the test (a Deployment deleted meanwhile) is run again. */
  readonly #sync = new OnePassAtATime(
    () => this.#pass(),
    () => this.#stopped,
  );
  #stopped = false;

  /** A test that dies before stop() must not leave its pods' processes running (holding ports). */
  readonly #killAllOnExit = () => {
    for (const run of [...this.#running.values(), ...this.#terminating.values()]) run.child?.kill('SIGKILL');
  };

  constructor(options: KubeletOptions) {
    process.once('exit', this.#killAllOnExit);
    this.#options = options;
    this.#core = options.kubeConfig.makeApiClient(CoreV1Api);
    this.#apps = options.kubeConfig.makeApiClient(AppsV1Api);
    const labelSelector = options.labelSelector;
    this.#watched = {
      deployments: this.#informer('/apis/apps/v1/deployments', labelSelector, () =>
        this.#apps.listDeploymentForAllNamespaces({ labelSelector }),
      ),
      pods: this.#informer('/api/v1/pods', TEMPLATE_HASH, () =>
        this.#core.listPodForAllNamespaces({ labelSelector: TEMPLATE_HASH }),
      ),
    };
  }

  async started(): Promise<void> {
    await Promise.all(this.#synced);
    this.#sync.request();
    await this.#sync.idle;
  }

  running(): string[] {
    return [...this.#running.entries(), ...this.#terminating.entries()]
      .filter(([, run]) => run.child !== undefined)
      .map(([key]) => key.split('/')[1]!)
      .sort();
  }

  output(pod: string): string {
    return [...this.#running.entries()].find(([key]) => key.endsWith(`/${pod}`))?.[1].output ?? '';
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await Promise.all([this.#watched.deployments.stop(), this.#watched.pods.stop()]);
    await this.#sync.idle;
    await Promise.all([...this.#running.values(), ...this.#terminating.values()].map((run) => this.#kill(run)));
    process.off('exit', this.#killAllOnExit);
    rmSync(this.#dir, { recursive: true, force: true });
  }

  #informer<T extends KubernetesObject>(
    path: string,
    labelSelector: string,
    list: () => Promise<KubernetesListObject<T>>,
  ): ListWatch<T> {
    const { informer, synced } = keepWatching(this.#options.kubeConfig, path, list, () => this.#sync.request(), {
      labelSelector,
      retryMs: 300,
      stopped: () => this.#stopped,
    });
    this.#synced.push(synced);
    return informer;
  }

  async #pass(): Promise<void> {
    const pods = this.#watched.pods.list().filter((pod) => pod.metadata?.deletionTimestamp == null);
    const live = new Set(pods.map(keyOf));
    // The Pods deleted (by a rollout, the garbage collector or a test): their processes end.
    for (const [key, run] of this.#running) {
      if (live.has(key)) continue;
      this.#running.delete(key);
      this.#terminating.set(key, run);
      void this.#kill(run).finally(() => this.#terminating.delete(key));
    }
    for (const deployment of this.#watched.deployments.list()) {
      if (this.#stopped || deployment.metadata?.deletionTimestamp != null) continue;
      await this.#reconcileDeployment(
        deployment,
        pods.filter((pod) => pod.metadata?.ownerReferences?.some((ref) => ref.uid === deployment.metadata?.uid)),
      );
    }
    for (const pod of pods) if (!this.#running.has(keyOf(pod))) this.#run(pod);
  }

  async #reconcileDeployment(deployment: V1Deployment, pods: V1Pod[]): Promise<void> {
    const namespace = deployment.metadata!.namespace!;
    const hash = podTemplateHash(deployment.spec?.template);
    const replicas = deployment.spec?.replicas ?? 1;
    const current = pods.filter((pod) => pod.metadata?.labels?.[TEMPLATE_HASH] === hash);
    const old = pods.filter((pod) => pod.metadata?.labels?.[TEMPLATE_HASH] !== hash);
    const ready = (list: V1Pod[]) => list.filter((pod) => this.#running.get(keyOf(pod))?.ready === true);
    for (let missing = replicas - current.length; missing > 0; missing--) await this.#createPod(deployment, hash);
    for (const extra of current.slice(replicas)) await this.#deletePod(extra);
    // maxUnavailable 0: the old pods go once the new ones serve.
    if (ready(current).length >= replicas) for (const pod of old) await this.#deletePod(pod);
    const readyCount = ready(pods).length;
    const status = {
      observedGeneration: deployment.metadata?.generation ?? 1,
      replicas: pods.length,
      updatedReplicas: Math.min(current.length, replicas),
      readyReplicas: readyCount,
      availableReplicas: readyCount,
      unavailableReplicas: Math.max(0, replicas - readyCount),
    };
    const before = deployment.status ?? {};
    if (Object.entries(status).every(([field, value]) => (before as Record<string, unknown>)[field] === value)) return;
    await this.#apps.patchNamespacedDeploymentStatus(
      { name: deployment.metadata!.name!, namespace, body: { status } },
      mergePatch,
    );
  }

  async #createPod(deployment: V1Deployment, hash: string): Promise<void> {
    const template = deployment.spec!.template;
    const name = `${deployment.metadata!.name}-${hash}-${(this.#nextPod++).toString(36).padStart(5, '0')}`;
    await this.#core.createNamespacedPod({
      namespace: deployment.metadata!.namespace!,
      body: {
        metadata: {
          name,
          labels: { ...template.metadata?.labels, [TEMPLATE_HASH]: hash },
          ownerReferences: [
            {
              apiVersion: 'apps/v1',
              kind: 'Deployment',
              name: deployment.metadata!.name!,
              uid: deployment.metadata!.uid!,
              controller: true,
            },
          ],
        },
        // Scheduled at once, on a node of its own.
        spec: { ...template.spec!, nodeName: `node-${this.#nextPod}` },
      },
    });
  }

  async #deletePod(pod: V1Pod): Promise<void> {
    try {
      await this.#core.deleteNamespacedPod({ name: pod.metadata!.name!, namespace: pod.metadata!.namespace! });
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
    }
  }

  // ----------------------------------------------------------------------------- containers

  #run(pod: V1Pod): void {
    const run: Running = {
      pod,
      child: undefined,
      adminPort: undefined,
      ready: false,
      restarts: 0,
      output: '',
      stopped: false,
      dirs: [],
    };
    this.#running.set(keyOf(pod), run);
    const podIP = `${this.#options.podNet}.${this.#nextIp++}`;
    const container = pod.spec!.containers[0]!;
    const command = this.#options.images[container.image ?? ''];
    if (command === undefined) {
      void this.#setStatus(run, podIP, {
        waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${container.image}"` },
      });
      return;
    }
    const env = this.#env(run, pod, container, podIP);
    if (typeof env === 'string') {
      void this.#setStatus(run, podIP, { waiting: { reason: 'CreateContainerConfigError', message: env } });
      return;
    }
    const start = () => {
      if (run.stopped || this.#stopped) return;
      run.adminPort = undefined;
      const child = spawn(command[0]!, [...command.slice(1), ...(container.args ?? [])], {
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      run.child = child;
      const keep = (chunk: string) => {
        run.output = (run.output + chunk).slice(-65_536);
        run.adminPort ??= Number(this.#options.adminPort.fromLog.exec(run.output)?.[1]) || undefined;
      };
      child.stdout!.setEncoding('utf8').on('data', keep);
      child.stderr!.setEncoding('utf8').on('data', keep);
      child.once('exit', (code, signal) => {
        run.child = undefined;
        if (run.stopped || this.#stopped) return;
        run.restarts++;
        run.ready = false;
        void this.#setStatus(run, podIP, {
          waiting: { reason: 'CrashLoopBackOff', message: `exited with ${signal ?? code}` },
        })
          .then(() => sleep(RESTART_DELAY_MS))
          .then(start);
      });
      void this.#setStatus(run, podIP, { running: { startedAt: new Date() } }).then(() =>
        this.#probe(run, podIP, container),
      );
    };
    start();
  }

  /** The container's env as a kubelet resolves it, plus what stands in for the pod's namespaces; a
   * string says why it cannot be resolved. */
  #env(run: Running, pod: V1Pod, container: V1Container, podIP: string): NodeJS.ProcessEnv | string {
    const fields: Record<string, string | undefined> = {
      'metadata.name': pod.metadata?.name,
      'metadata.namespace': pod.metadata?.namespace,
      'status.podIP': podIP,
      'spec.nodeName': pod.spec?.nodeName,
      'spec.serviceAccountName': pod.spec?.serviceAccountName,
    };
    const home = mkdtempSync(join(this.#dir, 'home-'));
    run.dirs.push(home);
    const account = pod.spec?.serviceAccountName ?? 'default';
    const kubeconfig = join(home, 'kubeconfig');
    writeFileSync(
      kubeconfig,
      podKubeconfig(this.#options.apiUrl, `system:serviceaccount:${pod.metadata?.namespace}:${account}`),
    );
    const resolved = resolveContainerEnv(pod, container, fields, this.#dir, run.dirs);
    if (typeof resolved === 'string') return resolved;
    const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: home, KUBECONFIG: kubeconfig, ...resolved };
    const extra = typeof this.#options.env === 'function' ? this.#options.env(pod) : this.#options.env;
    return { ...env, ...extra, [this.#options.adminPort.env]: '0' };
  }

  async #probe(run: Running, podIP: string, container: V1Container): Promise<void> {
    const path = container.readinessProbe?.httpGet?.path ?? '/';
    const child = run.child;
    while (!run.stopped && !this.#stopped && run.child === child && child !== undefined) {
      let ready = false;
      if (run.adminPort !== undefined) {
        try {
          ready = (await fetch(`http://127.0.0.1:${run.adminPort}${path}`, { signal: AbortSignal.timeout(1000) })).ok;
        } catch {
          ready = false;
        }
      }
      if (ready !== run.ready && run.child === child && !run.stopped) {
        run.ready = ready;
        await this.#setStatus(run, podIP, { running: { startedAt: new Date() } }).catch(() => undefined);
        this.#sync.request();
      }
      await sleep(PROBE_INTERVAL_MS);
    }
  }

  async #setStatus(run: Running, podIP: string, state: Record<string, unknown>): Promise<void> {
    if (run.stopped || this.#stopped) return;
    const running = state.running !== undefined;
    const condition = (type: string, on: boolean): V1PodCondition => ({
      type,
      status: on ? 'True' : 'False',
      lastTransitionTime: new Date(),
    });
    const container = run.pod.spec!.containers[0]!;
    const status = {
      phase: running || run.restarts > 0 ? 'Running' : 'Pending',
      podIP,
      podIPs: [{ ip: podIP }],
      hostIP: '127.0.0.1',
      conditions: [
        condition('PodScheduled', true),
        condition('Initialized', true),
        condition('ContainersReady', run.ready),
        condition('Ready', run.ready),
      ],
      containerStatuses: [
        {
          name: container.name,
          image: container.image,
          imageID: '',
          ready: run.ready,
          restartCount: run.restarts,
          started: running,
          state,
        },
      ],
    };
    try {
      await this.#core.patchNamespacedPodStatus(
        { name: run.pod.metadata!.name!, namespace: run.pod.metadata!.namespace!, body: { status } },
        mergePatch,
      );
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
    }
  }

  async #kill(run: Running): Promise<void> {
    run.stopped = true;
    const child = run.child;
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), KILL_AFTER_MS);
      await exited;
      clearTimeout(timer);
    }
    for (const dir of run.dirs) rmSync(dir, { recursive: true, force: true });
  }
}

function keyOf(pod: V1Pod): string {
  return `${pod.metadata?.namespace}/${pod.metadata?.name}`;
}

function podKubeconfig(server: string, user: string): string {
  const kubeConfig = new Http1KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'fake', server, skipTLSVerify: true }],
    users: [{ name: user, token: user }],
    contexts: [{ name: 'fake', cluster: 'fake', user }],
    currentContext: 'fake',
  });
  return kubeConfig.exportConfig();
}
