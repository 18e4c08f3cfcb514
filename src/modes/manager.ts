// `manager`: the cluster controller. For every CanaryRelease of the watched namespaces it keeps the
// proxy (Deployment, PodDisruptionBudget, metrics Service, ServiceAccount, RoleBinding) and reports
// it in status.proxy. Run with several replicas: a Lease elects the one that writes. Loaded only by
// the `manager` command.
import { CoordinationV1Api, type KubeConfig, type V1Container } from '@kubernetes/client-node';
import { ConfigError } from '../errors.ts';
import { boundedCall, loadKubeConfig } from '../kube/client.ts';
import { describeError } from '../kube/patch.ts';
import { makeManagerApis, type ManagerApis } from '../manager/apply.ts';
import { ManagerController } from '../manager/controller.ts';
import type { RuntimeOptions } from '../runtime/runtime.ts';
import { startControllerProcess } from './controller-process.ts';

export const MANAGER_LEASE = 'canary-l4-manager';

export interface ManagerOptions {
  readonly runtime: RuntimeOptions;
  readonly kubeconfig: string | undefined;
  /** Empty: every namespace. */
  readonly namespaces: readonly string[];
  /** undefined: the image of the manager's own container (its pod, --pod-name). */
  readonly proxyImage: string | undefined;
  /** The manager's own pod, when it runs in one. */
  readonly pod: { readonly name: string | undefined; readonly namespace: string | undefined };
  readonly resyncMs: number;
  readonly requestTimeoutMs: number;
  /** undefined: no leader election. */
  readonly leaseDurationMs: number | undefined;
}

export async function runManager(options: ManagerOptions): Promise<void> {
  const kubeConfig = loadKubeConfig(options.kubeconfig);
  const apis = makeManagerApis(kubeConfig);
  const proxyImage = options.proxyImage ?? (await ownImage(apis, options.pod, options.requestTimeoutMs));
  await startControllerProcess({
    runtime: options.runtime,
    ...(options.pod.name === undefined ? {} : { identity: options.pod.name }),
    lease: {
      coordination: kubeConfig.makeApiClient(CoordinationV1Api),
      namespace: options.pod.namespace ?? contextNamespace(kubeConfig),
      name: MANAGER_LEASE,
      durationMs: options.leaseDurationMs,
    },
    // The manager serves no traffic: nothing to drain.
    drainMs: 0,
    loop: ({ runtime, identity, isLeader }) =>
      new ManagerController({
        log: runtime.log,
        registry: runtime.registry,
        kubeConfig,
        apis,
        namespaces: options.namespaces,
        settings: { proxyImage },
        resyncMs: options.resyncMs,
        requestTimeoutMs: options.requestTimeoutMs,
        isLeader,
        identity,
        onSynced: () => runtime.setReady(true),
      }),
    started: {
      fields: { namespaces: options.namespaces.length === 0 ? 'all' : options.namespaces, proxyImage },
      message: 'manager started',
    },
  });
}

/** The namespace of the kubeconfig's current context, as kubectl would use it. */
function contextNamespace(kubeConfig: KubeConfig): string {
  return kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace ?? 'default';
}

/**
 * The image of the manager's own container, read from its pod: the proxies run the same version as
 * the manager that made them, so changing the manager's image upgrades every proxy.
 */
async function ownImage(apis: ManagerApis, pod: ManagerOptions['pod'], timeoutMs: number): Promise<string> {
  if (pod.name === undefined || pod.namespace === undefined) {
    throw new ConfigError('--proxy-image', [
      "required unless --pod-name and --pod-namespace name the manager's own pod (whose image the proxies then run)",
    ]);
  }
  let containers: V1Container[];
  try {
    containers =
      (
        await apis.core.readNamespacedPod(
          { name: pod.name, namespace: pod.namespace },
          boundedCall(new AbortController().signal, timeoutMs),
        )
      ).spec?.containers ?? [];
  } catch (err) {
    throw new ConfigError(`--pod-name ${pod.name}`, [
      `cannot read the manager's own pod in ${pod.namespace} to learn its image (${describeError(err)}); pass --proxy-image`,
    ]);
  }
  const own =
    containers.find((container) => container.args?.[0] === 'manager') ??
    (containers.length === 1 ? containers[0] : undefined);
  if (own?.image === undefined)
    throw new ConfigError(`--pod-name ${pod.name}`, ['no container of that pod runs `manager`; pass --proxy-image']);
  return own.image;
}
