// `proxy`: one CanaryRelease. The data plane serves on every replica; a Lease elects the one that
// writes to the API. Loaded only by the `proxy` command, so `serve` and `demo` never pay for the
// Kubernetes client.
import type { L4Config } from '../config/types.ts';
import { Controller } from '../control/index.ts';
import type { PortWeightOverride } from '../api/proxy-flags.ts';
import type { Labels } from '../api/names.ts';
import { loadKubeConfig, makeClients } from '../kube/client.ts';
import type { Runtime, RuntimeOptions } from '../runtime/runtime.ts';
import { startControllerProcess, type LoopContext } from './controller-process.ts';
import { loadServedConfig, saveServedConfig, type StateOwner } from '../runtime/state-dir.ts';

export interface ProxyOptions {
  readonly runtime: RuntimeOptions;
  readonly kubeconfig: string | undefined;
  readonly namespace: string;
  readonly release: string;
  readonly proxySelector: Labels;
  readonly portBase: number;
  readonly weightOverrides: readonly PortWeightOverride[];
  readonly handBackGraceMs: number;
  readonly resyncMs: number;
  readonly requestTimeoutMs: number;
  readonly drainMs: number;
  /** undefined: no leader election (a single replica, or one writer guaranteed some other way). */
  readonly leaseDurationMs: number | undefined;
  /** Where the last served L4 config is kept, to serve it at once after a restart; undefined: nowhere. */
  readonly stateDir: string | undefined;
  /** The proxy runs in a pod of its own (--pod-name). */
  readonly inPod: boolean;
  /** --listen-address; undefined: every address. */
  readonly listenHost: string | undefined;
}

export async function runProxy(options: ProxyOptions): Promise<void> {
  const { namespace, release } = options;
  const clients = makeClients(loadKubeConfig(options.kubeconfig));
  const owner: StateOwner = { namespace, release };
  await startControllerProcess({
    runtime: options.runtime,
    lease: {
      coordination: clients.coordination,
      namespace,
      name: `canary-l4-${release}`,
      durationMs: options.leaseDurationMs,
    },
    drainMs: options.drainMs,
    loop: async (context) => {
      const { runtime } = context;
      if (options.stateDir !== undefined) await serveSavedConfig(runtime, options.stateDir, owner);
      return new Controller({
        runtime,
        clients,
        namespace,
        release,
        reconcile: {
          proxySelector: options.proxySelector,
          portBase: options.portBase,
          weightOverrides: options.weightOverrides,
          handBackGraceMs: options.handBackGraceMs,
          inPod: options.inPod,
          reservedPorts: new Set(runtime.adminPort === 0 ? [] : [runtime.adminPort]),
          ...(options.listenHost === undefined ? {} : { listenHost: options.listenHost }),
        },
        resyncMs: options.resyncMs,
        requestTimeoutMs: options.requestTimeoutMs,
        isLeader: context.isLeader,
        identity: context.identity,
        onServed: options.stateDir === undefined ? undefined : keepServedConfig(runtime, options.stateDir, owner),
        onReleaseFinished: endWhenOver(context, release),
      });
    },
    started: {
      fields: {
        namespace,
        release,
        proxySelector: options.proxySelector,
        portBase: options.portBase,
        weightOverrides: options.weightOverrides,
        inPod: options.inPod,
      },
      message: 'proxy started',
    },
  });
}

/**
 * A release that is over never runs again (a new release is a new CanaryRelease). Run by hand, the
 * proxy exits; in a pod it stays, since the pod would only be restarted: the manager deletes its
 * proxy Deployment once the phase is set, and a standalone one is for its owner to delete. Said once.
 */
function endWhenOver({ runtime, stop }: LoopContext, release: string): (phase: 'Adopted' | 'Deprecated') => void {
  let ended = false;
  return (phase) => {
    if (ended) return;
    ended = true;
    if (process.env.KUBERNETES_SERVICE_HOST !== undefined) {
      runtime.log.info(
        { phase },
        `release ${release} is ${phase}; nothing left to serve; staying up until this pod's Deployment is deleted (a pod that exits is restarted)`,
      );
      return;
    }
    runtime.log.info({ phase }, `release ${release} is ${phase}; nothing left to serve; exiting`);
    void stop()
      .catch((err: Error) => runtime.log.error({ err }, 'error while stopping'))
      .then(() => process.exit(0));
  };
}

/**
 * Before the API is asked anything: serve the config the previous incarnation served, so the
 * Services retargeted to this pod keep working while the apiserver is unreachable. Reconcile
 * replaces it as soon as the caches are filled.
 */
async function serveSavedConfig(runtime: Runtime, dir: string, owner: StateOwner): Promise<void> {
  const loaded = await loadServedConfig(dir, owner);
  if (loaded.kind === 'none') return;
  if (loaded.kind === 'ignored') {
    runtime.log.warn({ stateDir: dir, problem: loaded.problem }, 'ignoring the saved config in --state-dir');
    return;
  }
  try {
    await runtime.applyConfig(loaded.config);
  } catch (err) {
    runtime.log.warn(
      { stateDir: dir, error: (err as Error).message },
      'the saved config in --state-dir cannot be served; waiting for the API',
    );
    return;
  }
  runtime.setReady(true);
  runtime.log.info(
    { stateDir: dir, savedAt: loaded.savedAt, listeners: loaded.config.listeners.length },
    'serving the config saved in --state-dir until the API answers',
  );
}

/** Saves each config the data plane takes, one write at a time, the newest winning. */
function keepServedConfig(runtime: Runtime, dir: string, owner: StateOwner): (config: L4Config) => void {
  let writing: Promise<void> = Promise.resolve();
  let failing = false;
  return (config) => {
    writing = writing
      .then(() => saveServedConfig(dir, owner, config))
      .then(
        () => {
          if (failing) runtime.log.info({ stateDir: dir }, 'saving the served config in --state-dir works again');
          failing = false;
        },
        (err: Error) => {
          if (!failing)
            runtime.log.error(
              { stateDir: dir, error: err.message },
              'cannot save the served config in --state-dir; a restart will wait for the API',
            );
          failing = true;
        },
      );
  };
}
