/**
 * A real Kubernetes control plane on loopback, as envtest runs one, plus the controllers: etcd, then
 * kube-apiserver (its own CA and serving certificate, ServiceAccount signing keys, one static
 * cluster-admin token, `--authorization-mode=Node,RBAC`, a loopback Service CIDR whose cluster IPs
 * the kube-proxy simulation listens on), kube-controller-manager (every default controller, each
 * with its own ServiceAccount's credentials) and kube-scheduler. Each component logs to
 * `<dir>/logs/<name>.log`; `<dir>/kubeconfig` is cluster-admin. `stop()` ends every process (SIGTERM,
 * then SIGKILL) and leaves no process or port behind.
 *
 * ```ts
 * const plane = await startControlPlane({ dir, serviceCidr: addresses.cidr });
 * plane.kubeconfigPath;   // kubectl --kubeconfig … version → Server Version: v1.37.2
 * await plane.stop();
 * ```
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { get as httpsGet } from 'node:https';
import { freePort } from '../support/net/free-ports.ts';
import { ensureBinaries, type Component } from './build.ts';
import { NODE_CIDR_MASK } from './network/plan.ts';
import { makePki, type Pki } from './pki.ts';
import { Processes } from './processes.ts';

export interface ControlPlaneOptions {
  /** Where the data, credentials, logs and kubeconfig go (made if missing). */
  readonly dir: string;
  /** The Service CIDR: loopback, so that the kube-proxy simulation can listen on every cluster IP (a real node's: any). */
  readonly serviceCidr: string;
  /**
   * Where kube-apiserver listens (127.0.0.1 by default): a real node's network namespaces reach it on
   * the host's address in their node network, which is then also the `kubernetes` Service's endpoint.
   */
  readonly bindAddress?: string;
  /** The pods' addresses: the controller-manager then gives each Node a podCIDR of it (a /24). */
  readonly clusterCidr?: string;
  /** A line per step (building, starting, ready). */
  readonly log?: (line: string) => void;
}

export interface ControlPlane {
  /** `https://<bind address>:<port>`. */
  readonly url: string;
  readonly kubeconfigPath: string;
  /** Cluster-admin (system:masters). */
  readonly adminToken: string;
  readonly caPem: string;
  readonly serviceCidr: string;
  readonly kubernetesVersion: string;
  /** What a component wrote to its log, the last `bytes`. */
  logTail(component: Component, bytes?: number): string;
  /** Freezes kube-apiserver (SIGSTOP) for `ms`: an outage in which connections hang, as a hung or partitioned API's do. */
  freezeApiServer(ms: number): Promise<void>;
  /** kube-apiserver's audit log: every request answered so far (Metadata level), oldest first. */
  auditEvents(): AuditEvent[];
  stop(): Promise<void>;
}

/** One line of the audit log, as much of it as the tests read. */
export interface AuditEvent {
  readonly verb: string;
  readonly user: { readonly username: string };
  readonly objectRef?: {
    readonly resource?: string;
    readonly subresource?: string;
    readonly namespace?: string;
    readonly name?: string;
    readonly apiGroup?: string;
  };
  readonly requestURI: string;
  readonly responseStatus?: { readonly code?: number };
  /** RFC 3339 with microseconds, UTC: they sort as strings. */
  readonly requestReceivedTimestamp: string;
  /** When the response was complete. */
  readonly stageTimestamp: string;
}

/**
 * Every request at Metadata level (who, which verb on what, and the answer's code) once answered;
 * a watch also once it has started (it is answered only when it ends).
 */
const AUDIT_POLICY = JSON.stringify({
  apiVersion: 'audit.k8s.io/v1',
  kind: 'Policy',
  omitStages: ['RequestReceived'],
  rules: [{ level: 'Metadata' }],
});

const READY_TIMEOUT_MS = 120_000;

/** The first address of an IPv4 CIDR (the `kubernetes` Service's cluster IP). */
function firstAddress(cidr: string): string {
  const [network] = cidr.split('/');
  const octets = network!.split('.').map(Number);
  octets[3] = octets[3]! + 1;
  return octets.join('.');
}

export function kubeconfigYaml(server: string, caPem: string, user: string, token: string, namespace?: string): string {
  const context = { cluster: 'canary-l4-cluster', user, ...(namespace === undefined ? {} : { namespace }) };
  return JSON.stringify(
    {
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [
        {
          name: 'canary-l4-cluster',
          cluster: { server, 'certificate-authority-data': Buffer.from(caPem).toString('base64') },
        },
      ],
      users: [{ name: user, user: { token } }],
      contexts: [{ name: 'canary-l4-cluster', context }],
      'current-context': 'canary-l4-cluster',
    },
    null,
    2,
  );
}

export async function startControlPlane(options: ControlPlaneOptions): Promise<ControlPlane> {
  const log = options.log ?? (() => {});
  const binaries = await ensureBinaries(log);
  mkdirSync(join(options.dir, 'logs'), { recursive: true });
  const bindAddress = options.bindAddress ?? '127.0.0.1';
  const pki = await makePki(join(options.dir, 'pki'), [firstAddress(options.serviceCidr), bindAddress]);
  const [etcdClient, etcdPeer, apiPort] = [await freePort(), await freePort(), await freePort(bindAddress)];
  const url = `https://${bindAddress}:${apiPort}`;
  const kubeconfigPath = join(options.dir, 'kubeconfig');
  writeFileSync(kubeconfigPath, kubeconfigYaml(url, pki.caPem, 'canary-l4-admin', pki.adminToken), { mode: 0o600 });
  const audit = { policy: join(options.dir, 'audit-policy.json'), log: join(options.dir, 'logs', 'audit.log') };
  writeFileSync(audit.policy, AUDIT_POLICY);
  const processes = new Processes(binaries, options.dir);
  try {
    processes.start('etcd', etcdArgs(options.dir, etcdClient, etcdPeer));
    await waitUntil('etcd', processes, async () => (await fetch(`http://127.0.0.1:${etcdClient}/health`)).ok);
    processes.start('kube-apiserver', [
      ...apiserverArgs(pki, etcdClient, bindAddress, apiPort, options.serviceCidr),
      '--audit-policy-file',
      audit.policy,
      '--audit-log-path',
      audit.log,
      '--audit-log-format',
      'json',
      '--audit-log-mode',
      'blocking',
    ]);
    const ok = (path: string) => answersOk(`${url}${path}`, pki.caPem, pki.adminToken);
    await waitUntil('kube-apiserver', processes, () => ok('/readyz'));
    processes.start('kube-controller-manager', [
      ...controllerManagerArgs(pki, kubeconfigPath, options.serviceCidr),
      ...(options.clusterCidr === undefined
        ? []
        : [
            '--allocate-node-cidrs',
            '--cluster-cidr',
            options.clusterCidr,
            '--node-cidr-mask-size',
            String(NODE_CIDR_MASK),
          ]),
    ]);
    processes.start('kube-scheduler', ['--kubeconfig', kubeconfigPath, '--secure-port', '0', '--leader-elect=false']);
    // Pods can be made once the ServiceAccount controller has made `default` (ServiceAccount admission needs it).
    await waitUntil('kube-controller-manager', processes, () =>
      ok('/api/v1/namespaces/default/serviceaccounts/default'),
    );
  } catch (err) {
    await processes.stopAll();
    throw err;
  }
  log(`control plane up: kube-apiserver ${binaries.kubernetesVersion} at ${url}, etcd ${binaries.etcdVersion}`);
  return {
    url,
    kubeconfigPath,
    adminToken: pki.adminToken,
    caPem: pki.caPem,
    serviceCidr: options.serviceCidr,
    kubernetesVersion: binaries.kubernetesVersion,
    logTail: (component, bytes) => processes.tail(component, bytes),
    auditEvents: () => readAudit(audit.log),
    freezeApiServer: (ms) => processes.freeze('kube-apiserver', ms),
    stop: () => processes.stopAll(),
  };
}

function etcdArgs(dir: string, client: number, peer: number): string[] {
  const clientUrl = `http://127.0.0.1:${client}`;
  const peerUrl = `http://127.0.0.1:${peer}`;
  return [
    '--name',
    'canary-l4',
    '--data-dir',
    join(dir, 'etcd'),
    '--listen-client-urls',
    clientUrl,
    '--advertise-client-urls',
    clientUrl,
    '--listen-peer-urls',
    peerUrl,
    '--initial-advertise-peer-urls',
    peerUrl,
    '--initial-cluster',
    `canary-l4=${peerUrl}`,
    // A test cluster: losing the last writes in a power cut costs nothing, and fsync costs seconds on a busy disk.
    '--unsafe-no-fsync',
    '--log-level',
    'warn',
  ];
}

function apiserverArgs(pki: Pki, etcdClient: number, bindAddress: string, port: number, serviceCidr: string): string[] {
  const issuer = 'https://kubernetes.default.svc.cluster.local';
  return [
    '--etcd-servers',
    `http://127.0.0.1:${etcdClient}`,
    '--bind-address',
    bindAddress,
    '--advertise-address',
    bindAddress,
    '--secure-port',
    String(port),
    // On loopback, the `kubernetes` Service's endpoint would be 127.0.0.1, which EndpointSlices refuse.
    ...(bindAddress === '127.0.0.1' ? ['--endpoint-reconciler-type', 'none'] : []),
    '--tls-cert-file',
    pki.servingCert,
    '--tls-private-key-file',
    pki.servingKey,
    '--client-ca-file',
    pki.caCert,
    '--token-auth-file',
    pki.tokenFile,
    '--authorization-mode',
    'Node,RBAC',
    '--anonymous-auth=false',
    '--service-account-issuer',
    issuer,
    '--api-audiences',
    issuer,
    '--service-account-key-file',
    pki.serviceAccountPublicKey,
    '--service-account-signing-key-file',
    pki.serviceAccountKey,
    '--service-cluster-ip-range',
    serviceCidr,
    '--allow-privileged=true',
    '--profiling=false',
    '--v=1',
  ];
}

function controllerManagerArgs(pki: Pki, kubeconfig: string, serviceCidr: string): string[] {
  return [
    '--kubeconfig',
    kubeconfig,
    '--secure-port',
    '0',
    '--leader-elect=false',
    // Each controller acts as its own ServiceAccount, bound by the bootstrap RBAC roles, as in a real cluster.
    '--use-service-account-credentials',
    '--service-account-private-key-file',
    pki.serviceAccountKey,
    '--root-ca-file',
    pki.caCert,
    '--service-cluster-ip-range',
    serviceCidr,
    '--profiling=false',
    '--v=1',
  ];
}

function readAudit(path: string): AuditEvent[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return [];
  }
  // The last line may be half written.
  return text
    .split('\n')
    .filter(Boolean)
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as AuditEvent];
      } catch {
        return [];
      }
    });
}

/** Whether a GET of `url` (the cluster's CA, the admin token) answers 2xx within 2 s. */
function answersOk(url: string, ca: string, token: string): Promise<boolean> {
  return new Promise((resolve) => {
    const request = httpsGet(url, { ca, headers: { authorization: `Bearer ${token}` }, timeout: 2000 }, (response) => {
      response.resume();
      resolve((response.statusCode ?? 0) >= 200 && (response.statusCode ?? 0) < 300);
    });
    request.once('error', () => resolve(false));
    request.once('timeout', () => request.destroy());
  });
}

async function waitUntil(component: Component, processes: Processes, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const exited = processes.exited(component);
    if (exited !== undefined)
      throw new Error(`${component} exited (${exited}) while starting:\n${processes.tail(component, 3000)}`);
    try {
      if (await check()) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline)
      throw new Error(
        `${component} was not ready within ${READY_TIMEOUT_MS / 1000} s:\n${processes.tail(component, 3000)}`,
      );
    await sleep(200);
  }
}
