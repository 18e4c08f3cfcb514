// Where the Kubernetes clients come from. `--kubeconfig FILE` wins; without it, in a pod, the
// in-cluster service account; elsewhere the usual KUBECONFIG / ~/.kube/config order.
import { CoordinationV1Api, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';

export interface KubeClients {
  readonly kubeConfig: KubeConfig;
  readonly core: CoreV1Api;
  readonly custom: CustomObjectsApi;
  readonly coordination: CoordinationV1Api;
}

export function loadKubeConfig(file: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  if (file !== undefined) kc.loadFromFile(file);
  else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else kc.loadFromDefault();
  if (kc.getCurrentCluster() === null) {
    throw new Error(
      `no Kubernetes cluster configured${file ? ` in --kubeconfig ${file}` : ''}: pass --kubeconfig FILE, set KUBECONFIG, or run in a pod`,
    );
  }
  return kc;
}

export function makeClients(kubeConfig: KubeConfig): KubeClients {
  return {
    kubeConfig,
    core: kubeConfig.makeApiClient(CoreV1Api),
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
    coordination: kubeConfig.makeApiClient(CoordinationV1Api),
  };
}
