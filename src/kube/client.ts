// Where the Kubernetes clients come from. `--kubeconfig FILE` wins; without it, in a pod, the
// in-cluster service account; elsewhere the usual KUBECONFIG / ~/.kube/config order.
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  Observable,
  type ConfigurationOptions,
  type ObservableMiddleware,
  type RequestContext,
} from '@kubernetes/client-node';
import { type Dispatcher, getGlobalDispatcher } from 'undici';
import { ConfigError } from '../errors.ts';

/** Per-call options of the generated API clients (headers, deadlines), as client-node types them. */
export type CallOptions = ConfigurationOptions<ObservableMiddleware>;

export interface KubeClients {
  readonly kubeConfig: KubeConfig;
  readonly core: CoreV1Api;
  readonly apps: AppsV1Api;
  readonly custom: CustomObjectsApi;
  readonly coordination: CoordinationV1Api;
}

/** Every request dispatched with HTTP/2 refused: undici's Agent then offers only http/1.1 in TLS's ALPN. */
const http1Only: Dispatcher.DispatcherComposeInterceptor = (dispatch) => (options, handler) =>
  dispatch({ ...options, allowH2: false } as Dispatcher.DispatchOptions, handler);

/**
 * A KubeConfig whose requests (API calls, watches) speak HTTP/1.1 to the API server. client-node 2
 * (undici 8) offers HTTP/2 by default; on Node 26.10 a client HTTP/2 session was seen looping in its
 * native send (Http2Session::SendPendingData) at full CPU until the process ran out of memory
 * (8 GiB in 100 s), in 3 of 7 runs of a test whose proxy stopped beside a stopping API server.
 * HTTP/1.1 costs a connection per watch, which the API server expects of any client.
 */
export class Http1KubeConfig extends KubeConfig {
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    // Without TLS settings of its own (a CA the system trusts) client-node leaves undici's global one.
    context.setDispatcher((context.getDispatcher() ?? getGlobalDispatcher()).compose(http1Only));
  }
}

export function loadKubeConfig(file: string | undefined): KubeConfig {
  const kc = new Http1KubeConfig();
  if (file !== undefined) {
    try {
      kc.loadFromFile(file);
    } catch (err) {
      throw new ConfigError(`--kubeconfig ${file}`, [`cannot be read as a kubeconfig: ${(err as Error).message}`]);
    }
  } else if (process.env.KUBERNETES_SERVICE_HOST) kc.loadFromCluster();
  else {
    try {
      kc.loadFromDefault();
    } catch (err) {
      const where = process.env.KUBECONFIG ? `KUBECONFIG=${process.env.KUBECONFIG}` : '~/.kube/config';
      throw new ConfigError(where, [
        `cannot be read as a kubeconfig: ${(err as Error).message}; pass --kubeconfig FILE or set KUBECONFIG`,
      ]);
    }
  }
  const source = file === undefined ? 'kubeconfig' : `--kubeconfig ${file}`;
  const cluster = kc.getCurrentCluster();
  if (cluster === null) {
    throw new ConfigError(source, [
      'no Kubernetes cluster configured: pass --kubeconfig FILE, set KUBECONFIG, or run in a pod',
    ]);
  }
  // client-node refuses plain http unless told to skip TLS checks; say so now, not on every call.
  if (cluster.server.startsWith('http:') && !cluster.skipTLSVerify) {
    throw new ConfigError(source, [
      `cluster ${cluster.name} (${cluster.server}) is plain http: set insecure-skip-tls-verify: true on it in the kubeconfig to allow that`,
    ]);
  }
  return kc;
}

export function makeClients(kubeConfig: KubeConfig): KubeClients {
  return {
    kubeConfig,
    core: kubeConfig.makeApiClient(CoreV1Api),
    apps: kubeConfig.makeApiClient(AppsV1Api),
    custom: kubeConfig.makeApiClient(CustomObjectsApi),
    coordination: kubeConfig.makeApiClient(CoordinationV1Api),
  };
}

/**
 * Options that bound an API call: it is aborted after `timeoutMs`, or at once when `cancel` aborts
 * (shutdown), so a hung apiserver can neither stall the work loop nor keep the process from exiting.
 */
export function boundedCall(cancel: AbortSignal, timeoutMs: number): CallOptions {
  const deadline: ObservableMiddleware = {
    pre: (request: RequestContext) => {
      request.setSignal(AbortSignal.any([cancel, AbortSignal.timeout(timeoutMs)]));
      return new Observable(Promise.resolve(request));
    },
    post: (response) => new Observable(Promise.resolve(response)),
  };
  return { middleware: [deadline], middlewareMergeStrategy: 'append' };
}
