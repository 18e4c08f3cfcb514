/** Fixtures the fake-apiserver tests began and other suites share: client-node over HTTP, waits, kubectl. */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before } from 'node:test';
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
  ApiextensionsV1Api,
  loadYaml,
  type V1CustomResourceDefinition,
  type V1Pod,
  Watch,
} from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { type FakeApiServer, startFakeApiServer, type FakeApiServerOptions } from '../fake-apiserver/index.ts';

export const CR = { group: 'canary-l4.io', version: 'v1alpha1', plural: 'canaryreleases' } as const;

export const canaryCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'canaryreleases.canary-l4.io' },
  spec: {
    group: 'canary-l4.io',
    scope: 'Namespaced',
    names: { plural: 'canaryreleases', singular: 'canaryrelease', kind: 'CanaryRelease', shortNames: ['cr'] },
    versions: [
      {
        name: 'v1alpha1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      },
    ],
  },
};

export async function installCrd(kc: KubeConfig): Promise<void> {
  // loadYaml makes the typed object the client serializes: a plain one would lose its x-kubernetes-* keys.
  await kc
    .makeApiClient(ApiextensionsV1Api)
    .createCustomResourceDefinition({ body: loadYaml<V1CustomResourceDefinition>(JSON.stringify(canaryCrd)) });
}

/** A fake apiserver with the CanaryRelease CRD installed, and clients for it. */
export async function startFakeWithCrd(options?: FakeApiServerOptions) {
  const api = await startFakeApiServer(options);
  await installCrd(api.kubeConfig);
  return { api, ...clients(api.kubeConfig) };
}

export function clients(kc: KubeConfig) {
  return { core: kc.makeApiClient(CoreV1Api), custom: kc.makeApiClient(CustomObjectsApi) };
}

/** Await a rejected client-node call and return its status code and parsed Status body. */
export async function apiError(p: Promise<unknown>): Promise<{ code: number; body: any }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ApiException)
      return { code: e.code, body: typeof e.body === 'string' ? JSON.parse(e.body) : e.body };
    throw e;
  }
  throw new Error('expected the call to fail');
}

/** What a TCP server says before it ends the connection; rejects when nothing listens or it resets. */
export function tcpAnswer(ip: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const socket = connect({ host: ip, port }, () => undefined);
    socket.setEncoding('utf8').on('data', (chunk: string) => (text += chunk));
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
    socket.setTimeout(2000, () => socket.destroy(new Error(`no answer from ${ip}:${port}`)));
  });
}

/** Whether nothing listens on ip:port (the connection is refused). */
export const refused = (ip: string, port: number): Promise<boolean> =>
  tcpAnswer(ip, port).then(
    () => false,
    (e: NodeJS.ErrnoException) => e.code === 'ECONNREFUSED',
  );

/**
 * A Deployment's pods as a list then a watch from its resourceVersion (so no synthetic ADDED events
 * build the set up), calling `check` with the pods after every event.
 */
export function watchPods(
  api: FakeApiServer,
  app: string,
  check: (pods: V1Pod[], event: { type: string; pod: V1Pod; at: number }) => void,
) {
  const pods = new Map<string, V1Pod>();
  const failures: Error[] = [];
  let abort: AbortController | undefined;
  const labelSelector = `app=${app}`;
  const started = (async () => {
    const list = await api.kubeConfig
      .makeApiClient(CoreV1Api)
      .listNamespacedPod({ namespace: 'default', labelSelector });
    for (const pod of list.items) pods.set(pod.metadata!.name!, pod);
    abort = await new Watch(api.kubeConfig).watch(
      '/api/v1/namespaces/default/pods',
      { labelSelector, resourceVersion: list.metadata?.resourceVersion },
      (type, pod: V1Pod) => {
        if (type === 'DELETED') pods.delete(pod.metadata!.name!);
        else pods.set(pod.metadata!.name!, pod);
        try {
          check([...pods.values()], { type, pod, at: performance.now() });
        } catch (e) {
          failures.push(e as Error);
        }
      },
      () => undefined,
    );
  })();
  return {
    started,
    pods: () => [...pods.values()],
    /** Stops watching and throws the first failed check. */
    end: () => {
      abort?.abort();
      if (failures[0]) throw failures[0];
    },
  };
}

export function svc(name: string, extra: Record<string, any> = {}): any {
  return {
    metadata: { name, labels: { app: name }, ...(extra.metadata ?? {}) },
    spec: { selector: { app: name }, ports: [{ name: 'http', port: 80 }], ...(extra.spec ?? {}) },
  };
}

const execFileAsync = promisify(execFile);

/** A fake apiserver and kubectl bound to it, for the tests of a describe block (set in its before hook). */
export function fakeWithKubectl(options?: FakeApiServerOptions): {
  readonly api: FakeApiServer;
  readonly kubectl: Kubectl;
} {
  const context = {} as { api: FakeApiServer; kubectl: Kubectl };
  before(async () => {
    context.api = await startFakeApiServer(options);
    context.kubectl = await kubectlFor(context.api);
  });
  after(async () => {
    await context.api?.stop();
    await context.kubectl?.cleanup();
  });
  return context;
}

export interface Kubectl {
  /** Runs kubectl against the fake; resolves with stdout, rejects (with stderr) on a non-zero exit. */
  (...args: string[]): Promise<string>;
  /** The same, resolving with stdout and stderr (where kubectl prints the server's warnings). */
  run(...args: string[]): Promise<{ stdout: string; stderr: string }>;
  /** Resolves with stdout, for a command that waits longer than the usual 30 s (kubectl drain). */
  within(timeoutMs: number, ...args: string[]): Promise<string>;
  /** kubectl's HOME, a fresh temp dir; manifests go here too. */
  readonly home: string;
  /** Writes `objects` as a YAML manifest into home and returns its path. */
  manifest(file: string, ...objects: unknown[]): Promise<string>;
  /** Removes home. */
  cleanup(): Promise<void>;
}

/** kubectl bound to an API server (its admin kubeconfig), with its own HOME and discovery cache so runs never share state. */
export async function kubectlFor(api: { readonly kubeconfigPath: string }): Promise<Kubectl> {
  const home = await mkdtemp(join(tmpdir(), 'kubectl-home-'));
  const bounded = (timeout: number, args: string[]) =>
    execFileAsync('kubectl', ['--kubeconfig', api.kubeconfigPath, '--cache-dir', join(home, 'cache'), ...args], {
      env: { ...process.env, HOME: home, KUBECONFIG: api.kubeconfigPath },
      timeout,
    });
  const run = (...args: string[]) => bounded(30_000, args);
  const kubectl = async (...args: string[]) => (await run(...args)).stdout;
  return Object.assign(kubectl, {
    run,
    within: async (timeoutMs: number, ...args: string[]) => (await bounded(timeoutMs, args)).stdout,
    home,
    manifest: async (file: string, ...objects: unknown[]) => {
      const path = join(home, file);
      await writeFile(path, objects.map((o) => stringify(o)).join('---\n'));
      return path;
    },
    cleanup: () => rm(home, { recursive: true, force: true }),
  });
}
