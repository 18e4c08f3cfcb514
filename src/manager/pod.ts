// The proxy Deployment both kinds of proxy the manager keeps share (a CanaryRelease's, a Gateway's):
// the rollout that never leaves a Service without an endpoint, the hardened pod, the anti-affinity,
// the probes on the admin port, the preStop pause, the grace period that covers the drain, the
// default resources; and the PodDisruptionBudget beside it. Pure. What differs (the command, its
// env, the labels, the placement) is the caller's.

import type {
  V1ContainerPort,
  V1Deployment,
  V1EnvVar,
  V1PodDisruptionBudget,
  V1ResourceRequirements,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import { DEFAULT_ADMIN_PORT, DEFAULT_DRAIN_TIMEOUT_MS } from '../defaults.ts';
import { PROXY_ADMIN_PORT_NAME, type Labels } from '../api/names.ts';
import type { ProxySpec } from '../api/proxy-types.ts';

/** The preStop pause that lets kube-proxy drop the pod from the Services' endpoints first. */
const PRE_STOP_SECONDS = 5;
/** preStop, the control loop's stop (at most 5 s) and the drain, with room to exit. */
const GRACE_SECONDS = PRE_STOP_SECONDS + 5 + DEFAULT_DRAIN_TIMEOUT_MS / 1000 + 10;
const DEFAULT_RESOURCES: V1ResourceRequirements = {
  requests: { cpu: '100m', memory: '128Mi' },
  // No CPU limit: throttling a proxy adds latency to every connection through it.
  limits: { memory: '512Mi' },
};

/** What one proxy Deployment is made of. */
export interface ProxyPod {
  /** Finds the pods (the Deployment's, the PDB's selector). */
  readonly selector: Labels;
  readonly podLabels: Labels;
  readonly serviceAccountName: string;
  readonly image: string;
  readonly args: readonly string[];
  /** All of it, in order (proxyCommonEnv() among it): a reordering would roll every proxy. */
  readonly env: readonly V1EnvVar[];
  /** Besides the admin port. */
  readonly ports: readonly V1ContainerPort[];
  readonly placement: ProxySpec;
  readonly volumes?: readonly { readonly volume: V1Volume; readonly mount: V1VolumeMount }[];
}

export function proxyDeploymentSpec(pod: ProxyPod): V1Deployment['spec'] {
  const volumes = pod.volumes ?? [];
  const { placement } = pod;
  return {
    replicas: placement.replicas,
    revisionHistoryLimit: 3,
    // The new pod listens on every proxy port before an old one drains: the Services always have an endpoint.
    strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } },
    selector: { matchLabels: { ...pod.selector } },
    template: {
      metadata: { labels: { ...pod.podLabels } },
      spec: {
        serviceAccountName: pod.serviceAccountName,
        // Two replicas on one node would fail together.
        affinity: {
          podAntiAffinity: {
            preferredDuringSchedulingIgnoredDuringExecution: [
              {
                weight: 100,
                podAffinityTerm: {
                  topologyKey: 'kubernetes.io/hostname',
                  labelSelector: { matchLabels: { ...pod.selector } },
                },
              },
            ],
          },
        },
        terminationGracePeriodSeconds: GRACE_SECONDS,
        // The proxy listens on the Services' own ports, 80 as well, without any capability (a safe,
        // namespaced sysctl: it opens no port of the node). NET_BIND_SERVICE would not do: a
        // capability added to a container that runs as non-root is not in its process's effective
        // set (Kubernetes sets no ambient capabilities).
        securityContext: {
          runAsNonRoot: true,
          runAsUser: 1000,
          runAsGroup: 1000,
          seccompProfile: { type: 'RuntimeDefault' },
          sysctls: [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }],
        },
        ...(placement.nodeSelector === undefined ? {} : { nodeSelector: { ...placement.nodeSelector } }),
        ...(placement.tolerations === undefined
          ? {}
          : { tolerations: placement.tolerations.map((toleration) => ({ ...toleration })) }),
        ...(placement.priorityClassName === undefined ? {} : { priorityClassName: placement.priorityClassName }),
        containers: [
          {
            name: 'proxy',
            image: pod.image,
            args: [...pod.args],
            env: [...pod.env],
            ports: [{ name: PROXY_ADMIN_PORT_NAME, containerPort: DEFAULT_ADMIN_PORT, protocol: 'TCP' }, ...pod.ports],
            readinessProbe: { httpGet: { path: '/readyz', port: 'admin' }, periodSeconds: 5, failureThreshold: 2 },
            livenessProbe: {
              httpGet: { path: '/healthz', port: 'admin' },
              periodSeconds: 10,
              timeoutSeconds: 3,
              failureThreshold: 3,
            },
            lifecycle: { preStop: { exec: { command: ['sleep', String(PRE_STOP_SECONDS)] } } },
            resources: placement.resources === undefined ? DEFAULT_RESOURCES : { ...placement.resources },
            ...(volumes.length === 0 ? {} : { volumeMounts: volumes.map(({ mount }) => ({ ...mount })) }),
            securityContext: {
              allowPrivilegeEscalation: false,
              readOnlyRootFilesystem: true,
              capabilities: { drop: ['ALL'] },
            },
          },
        ],
        ...(volumes.length === 0 ? {} : { volumes: volumes.map(({ volume }) => ({ ...volume })) }),
      },
    },
  };
}

/** What every proxy is told: its admin port (the probes') and how long it drains. */
export function proxyCommonEnv(): V1EnvVar[] {
  return [
    { name: 'CANARY_L4_ADMIN_PORT', value: String(DEFAULT_ADMIN_PORT) },
    { name: 'CANARY_L4_DRAIN_TIMEOUT', value: String(DEFAULT_DRAIN_TIMEOUT_MS / 1000) },
  ];
}

/**
 * One pod at a time: with two replicas never the last one; with one, a node drain still proceeds
 * (a PDB that can never be satisfied blocks the cluster's upgrades).
 */
export function proxyDisruptionBudgetSpec(selector: Labels): V1PodDisruptionBudget['spec'] {
  return { maxUnavailable: 1, unhealthyPodEvictionPolicy: 'AlwaysAllow', selector: { matchLabels: { ...selector } } };
}
