// The manifests of deploy/ fit together: the Deployment's pods are what the PDB, the metrics
// Service and (through it) the ServiceMonitor select, and what the proxy retargets the release's
// Services to; the probes reach the admin server; a SIGTERM drains before the kubelet kills; the
// pod is locked down; RBAC grants what the proxy needs and nothing else.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import type {
  V1Container, V1Deployment, V1LabelSelector, V1PodDisruptionBudget, V1Role, V1RoleBinding, V1Service, V1ServiceAccount,
} from '@kubernetes/client-node';
import { DEFAULT_ADMIN_PORT, DEFAULT_DRAIN_TIMEOUT_MS } from '../../src/defaults.ts';
import { KIND, LABEL_RELEASE } from '../../src/control/types.ts';
import { allObjects, deployDir, manifestFiles, theOnly, type KubeObject } from './manifests.ts';

const run = promisify(execFile);

interface ServiceMonitor extends KubeObject {
  spec: { selector: V1LabelSelector; endpoints: { port: string; path?: string; relabelings?: { sourceLabels?: string[]; targetLabel?: string }[] }[] };
}

const deployment = theOnly<V1Deployment>('Deployment');
const podSpec = deployment.spec?.template.spec;
const podLabels = deployment.spec?.template.metadata?.labels ?? {};
const proxy = podSpec?.containers.find((container) => container.name === 'proxy');
const release = theOnly<KubeObject>(KIND);

function envValue(container: V1Container | undefined, name: string): string | undefined {
  return container?.env?.find((variable) => variable.name === name)?.value;
}

/** Whether a matchLabels selector selects an object with these labels (an empty selector selects all, which is never meant here). */
function selects(selector: V1LabelSelector | undefined, labels: Record<string, string>): boolean {
  const required = Object.entries(selector?.matchLabels ?? {});
  assert.equal(selector?.matchExpressions, undefined, 'selectors here are matchLabels only');
  return required.length > 0 && required.every(([key, value]) => labels[key] === value);
}

/** A container port given by name or number, as a number. */
function portNumber(port: number | string | undefined): number | undefined {
  return typeof port === 'number' ? port : proxy?.ports?.find((candidate) => candidate.name === port)?.containerPort;
}

describe('deploy/ manifests', () => {
  it('every YAML file parses into API objects, and kustomization.yaml lists exactly those files', () => {
    assert.ok(allObjects().length >= 9);
    const kustomization = parse(readFileSync(new URL('kustomization.yaml', deployDir), 'utf8')) as { resources: string[] };
    assert.deepEqual([...kustomization.resources].sort(), manifestFiles());
  });

  it('holds every piece of an installation', () => {
    const kinds = allObjects().map((object) => `${object.apiVersion} ${object.kind}`).sort();
    assert.deepEqual(kinds, [
      'apiextensions.k8s.io/v1 CustomResourceDefinition',
      'apps/v1 Deployment',
      'canary-l4.io/v1alpha1 CanaryRelease',
      'monitoring.coreos.com/v1 ServiceMonitor',
      'policy/v1 PodDisruptionBudget',
      'rbac.authorization.k8s.io/v1 Role',
      'rbac.authorization.k8s.io/v1 RoleBinding',
      'v1 Service',
      'v1 ServiceAccount',
    ]);
  });

  describe('the Deployment', () => {
    it('runs the proxy of the example CanaryRelease, in its own namespace', () => {
      assert.equal(proxy?.args?.[0], 'proxy');
      assert.equal(envValue(proxy, 'CANARY_RELEASE_NAME'), release.metadata.name);
      assert.equal(proxy?.env?.find((variable) => variable.name === 'CANARY_RELEASE_NAMESPACE')?.valueFrom?.fieldRef?.fieldPath, 'metadata.namespace');
    });

    it(`labels its pods ${LABEL_RELEASE}: <release>, the proxy's default --proxy-selector, and selects them by it`, () => {
      assert.equal(podLabels[LABEL_RELEASE], release.metadata.name);
      assert.deepEqual(deployment.spec?.selector.matchLabels, { [LABEL_RELEASE]: release.metadata.name });
    });

    it('probes readiness on /readyz and liveness on /healthz, at the admin port the proxy listens on', () => {
      const adminPort = Number(envValue(proxy, 'CANARY_L4_ADMIN_PORT') ?? DEFAULT_ADMIN_PORT);
      assert.equal(proxy?.readinessProbe?.httpGet?.path, '/readyz');
      assert.equal(proxy?.livenessProbe?.httpGet?.path, '/healthz');
      assert.equal(portNumber(proxy?.readinessProbe?.httpGet?.port), adminPort);
      assert.equal(portNumber(proxy?.livenessProbe?.httpGet?.port), adminPort);
    });

    it('lets the preStop pause and the drain finish before the kubelet kills the pod', () => {
      const drainSeconds = Number(envValue(proxy, 'CANARY_L4_DRAIN_TIMEOUT') ?? DEFAULT_DRAIN_TIMEOUT_MS / 1000);
      const [sleepCommand, pauseSeconds] = proxy?.lifecycle?.preStop?.exec?.command ?? [];
      assert.equal(sleepCommand, 'sleep');
      const grace = podSpec?.terminationGracePeriodSeconds ?? 30;
      assert.ok(grace > Number(pauseSeconds) + drainSeconds, `terminationGracePeriodSeconds ${grace} <= preStop ${pauseSeconds} s + drain ${drainSeconds} s`);
    });

    it('keeps the served config in a writable emptyDir (--state-dir), so a restarted container serves before the API answers', () => {
      const dir = envValue(proxy, 'CANARY_L4_STATE_DIR');
      assert.ok(dir, 'CANARY_L4_STATE_DIR is set');
      const mount = proxy?.volumeMounts?.find((item) => item.mountPath === dir);
      assert.ok(mount, `a volume is mounted at ${dir} (the root filesystem is read-only)`);
      assert.ok(podSpec?.volumes?.find((volume) => volume.name === mount.name)?.emptyDir, 'the volume is an emptyDir');
    });

    it('keeps a serving pod during a rollout', () => {
      assert.equal(deployment.spec?.strategy?.rollingUpdate?.maxUnavailable, 0);
    });

    it('runs locked down: non-root, read-only root, no privilege escalation, no capabilities, RuntimeDefault seccomp', () => {
      const pod = podSpec?.securityContext;
      const container = proxy?.securityContext;
      assert.equal(container?.runAsNonRoot ?? pod?.runAsNonRoot, true);
      assert.notEqual(container?.runAsUser ?? pod?.runAsUser ?? 0, 0);
      assert.equal(container?.readOnlyRootFilesystem, true);
      assert.equal(container?.allowPrivilegeEscalation, false);
      assert.deepEqual(container?.capabilities, { drop: ['ALL'] }, 'proxy ports are >= 8080: not even NET_BIND_SERVICE');
      assert.equal((container?.seccompProfile ?? pod?.seccompProfile)?.type, 'RuntimeDefault');
      assert.notEqual(podSpec?.hostNetwork, true);
    });

    it('requests CPU and memory and caps memory', () => {
      assert.ok(proxy?.resources?.requests?.cpu);
      assert.ok(proxy?.resources?.requests?.memory);
      assert.ok(proxy?.resources?.limits?.memory);
    });
  });

  it('the PodDisruptionBudget covers the proxy pods', () => {
    const pdb = theOnly<V1PodDisruptionBudget>('PodDisruptionBudget');
    assert.ok(selects(pdb.spec?.selector, podLabels), 'the PDB selector matches the pod template labels');
    assert.ok(pdb.spec?.minAvailable !== undefined || pdb.spec?.maxUnavailable !== undefined);
  });

  it('Prometheus finds the admin port: ServiceMonitor → metrics Service → proxy pods', () => {
    const service = theOnly<V1Service>('Service');
    const monitor = theOnly<ServiceMonitor>('ServiceMonitor');
    assert.ok(selects(service.spec?.selector ? { matchLabels: service.spec.selector } : undefined, podLabels), 'the metrics Service selects the proxy pods');
    assert.ok(selects(monitor.spec.selector, service.metadata?.labels ?? {}), 'the ServiceMonitor selects the metrics Service');
    const [endpoint] = monitor.spec.endpoints;
    const servicePort = service.spec?.ports?.find((port) => port.name === endpoint?.port);
    assert.ok(servicePort, `the metrics Service has a port named ${endpoint?.port}`);
    assert.equal(portNumber(servicePort.targetPort), portNumber('admin'));
    assert.equal(endpoint?.path ?? '/metrics', '/metrics');
    const releaseLabel = `__meta_kubernetes_pod_label_${LABEL_RELEASE.replace(/[^a-zA-Z0-9_]/g, '_')}`;
    assert.ok(
      endpoint?.relabelings?.some((rule) => rule.sourceLabels?.includes(releaseLabel) && rule.targetLabel === 'canary_release'),
      'every series is labelled with the release of the pod it came from',
    );
  });

  it('the RoleBinding gives the Role to the ServiceAccount the Deployment runs as', () => {
    const account = theOnly<V1ServiceAccount>('ServiceAccount');
    const binding = theOnly<V1RoleBinding>('RoleBinding');
    const role = theOnly<V1Role>('Role');
    assert.equal(podSpec?.serviceAccountName, account.metadata?.name);
    assert.deepEqual(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role.metadata?.name });
    assert.deepEqual(binding.subjects?.map(({ kind, name }) => ({ kind, name })), [{ kind: 'ServiceAccount', name: account.metadata?.name }]);
  });

  // That the Role grants exactly what the proxy uses is checked where the proxy runs: test/control/ha.test.ts.
  it('the Role names no single objects (the proxy works on Services it creates)', () => {
    for (const rule of theOnly<V1Role>('Role').rules ?? []) assert.equal(rule.resourceNames, undefined);
  });
});

const kubectl = await run('kubectl', ['version', '--client'], { timeout: 15_000 }).then(() => true, () => false);

describe('kubectl kustomize deploy/', { skip: kubectl ? false : 'kubectl is not on PATH' }, () => {
  it('renders every object into one namespace, the RoleBinding subject included', async () => {
    const home = await mkdtemp(join(tmpdir(), 'kustomize-home-'));
    try {
      const { stdout } = await run('kubectl', ['kustomize', fileURLToPath(deployDir)], { env: { ...process.env, HOME: home }, timeout: 30_000 });
      const rendered = parseAllDocuments(stdout).map((document) => document.toJS() as KubeObject);
      assert.deepEqual(rendered.map((object) => `${object.kind}/${object.metadata.name}`).sort(), allObjects().map((object) => `${object.kind}/${object.metadata.name}`).sort());
      const namespaces = new Set(rendered.filter((object) => object.kind !== 'CustomResourceDefinition').map((object) => object.metadata.namespace));
      assert.equal(namespaces.size, 1, `one namespace, got ${[...namespaces].join(', ')}`);
      const binding = rendered.find((object) => object.kind === 'RoleBinding') as V1RoleBinding | undefined;
      assert.deepEqual(binding?.subjects?.map((subject) => subject.namespace), [...namespaces]);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});
