// The manifests of deploy/ fit together. The default install (deploy/) is the CRD and the manager:
// its pods are what its PDB and metrics Service select, its probes reach its admin server, it runs
// locked down, and its RBAC binds it to what it needs. A proxy Deployment — the one the manager
// renders for a release, and deploy/standalone's — has its pods labelled for the release's
// Services, probes on the admin server, a drain that ends before the kubelet kills, a locked-down
// pod and an emptyDir for --state-dir. The ServiceMonitor component finds every metrics Service.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, it } from 'node:test';
import { parse, parseAllDocuments } from 'yaml';
import type {
  V1ClusterRole,
  V1ClusterRoleBinding,
  V1Container,
  V1Deployment,
  V1LabelSelector,
  V1PodDisruptionBudget,
  V1Role,
  V1RoleBinding,
  V1Service,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import { DEFAULT_ADMIN_PORT, DEFAULT_DRAIN_TIMEOUT_MS } from '../../src/defaults.ts';
import { KIND, LABEL_RELEASE } from '../../src/api/names.ts';
import { renderProxy } from '../../src/manager/render.ts';
import { PROXY_CLUSTER_ROLE } from '../../src/manager/names.ts';
import { GATEWAY_CLUSTER_ROLE, GATEWAY_LEASE_ROLE } from '../../src/manager/gateway-proxies/names.ts';
import type { ManagedRelease } from '../../src/api/proxy-types.ts';
import { allObjects, deployDir, manifestFiles, named, theOnly, type KubeObject } from './manifests.ts';
import { requireTool } from '../support/process/required-tool.ts';

// Awaited before any suite is declared: under --test-force-exit, a suite declared after a top-level
// await never runs (the runner exits once the suites before it are done).
const kubectlAtHand = await requireTool('kubectl');

const run = promisify(execFile);
const MANAGER_NAMESPACE = 'canary-l4-system';

interface ServiceMonitor extends KubeObject {
  spec: {
    namespaceSelector?: { any?: boolean };
    selector: V1LabelSelector;
    endpoints: { port: string; path?: string; relabelings?: { sourceLabels?: string[]; targetLabel?: string }[] }[];
  };
}

const example = theOnly<ManagedRelease>(KIND);
const rendered = renderProxy(
  { ...example, metadata: { ...example.metadata, namespace: 'default', uid: 'uid-1' } },
  { proxyImage: 'canary-l4:0.1.0' },
);
assert.ok(rendered.ok, 'the example release renders');
const manager = theOnly<V1Deployment>('Deployment');
const managerContainer = manager.spec?.template.spec?.containers.find((container) => container.name === 'manager');

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
function portNumber(container: V1Container | undefined, port: number | string | undefined): number | undefined {
  return typeof port === 'number'
    ? port
    : container?.ports?.find((candidate) => candidate.name === port)?.containerPort;
}

function probesAdminPort(container: V1Container | undefined): void {
  const adminPort = Number(envValue(container, 'CANARY_L4_ADMIN_PORT') ?? DEFAULT_ADMIN_PORT);
  assert.equal(container?.readinessProbe?.httpGet?.path, '/readyz');
  assert.equal(container?.livenessProbe?.httpGet?.path, '/healthz');
  assert.equal(portNumber(container, container?.readinessProbe?.httpGet?.port), adminPort);
  assert.equal(portNumber(container, container?.livenessProbe?.httpGet?.port), adminPort);
}

function lockedDown(deployment: V1Deployment, container: V1Container | undefined): void {
  const pod = deployment.spec?.template.spec?.securityContext;
  const own = container?.securityContext;
  assert.equal(own?.runAsNonRoot ?? pod?.runAsNonRoot, true);
  assert.notEqual(own?.runAsUser ?? pod?.runAsUser ?? 0, 0);
  assert.equal(own?.readOnlyRootFilesystem, true);
  assert.equal(own?.allowPrivilegeEscalation, false);
  assert.deepEqual(own?.capabilities, { drop: ['ALL'] }, 'ports are >= 8080: not even NET_BIND_SERVICE');
  assert.equal((own?.seccompProfile ?? pod?.seccompProfile)?.type, 'RuntimeDefault');
  assert.notEqual(deployment.spec?.template.spec?.hostNetwork, true);
}

/** `verb group/resource` lines of some RBAC rules. */
function grants(rules: V1ClusterRole['rules']): string[] {
  return (rules ?? []).flatMap((rule) =>
    (rule.apiGroups ?? []).flatMap((group) =>
      (rule.resources ?? []).flatMap((resource) => rule.verbs.map((verb) => `${verb} ${group || 'core'}/${resource}`)),
    ),
  );
}

describe('deploy/: the default install, CRD and manager', () => {
  it('kustomization.yaml installs every manifest of deploy/ but the example release', () => {
    const kustomization = parse(readFileSync(new URL('kustomization.yaml', deployDir), 'utf8')) as {
      namespace: string;
      resources: string[];
    };
    assert.deepEqual(
      [...kustomization.resources].sort(),
      manifestFiles().filter((file) => file !== 'canaryrelease-example.yaml'),
    );
    assert.equal(kustomization.namespace, MANAGER_NAMESPACE);
  });

  it("holds the CRD, the manager, the proxy's and the gateway pods' ClusterRoles, and nothing per release", () => {
    const installed = allObjects().filter((object) => object.kind !== KIND);
    assert.deepEqual(installed.map((object) => `${object.apiVersion} ${object.kind}`).sort(), [
      'apiextensions.k8s.io/v1 CustomResourceDefinition',
      'apps/v1 Deployment',
      'policy/v1 PodDisruptionBudget',
      'rbac.authorization.k8s.io/v1 ClusterRole',
      'rbac.authorization.k8s.io/v1 ClusterRole',
      'rbac.authorization.k8s.io/v1 ClusterRole',
      'rbac.authorization.k8s.io/v1 ClusterRole',
      'rbac.authorization.k8s.io/v1 ClusterRoleBinding',
      'rbac.authorization.k8s.io/v1 Role',
      'rbac.authorization.k8s.io/v1 RoleBinding',
      'v1 Namespace',
      'v1 Service',
      'v1 ServiceAccount',
    ]);
    assert.equal(named<KubeObject>('Namespace', MANAGER_NAMESPACE).kind, 'Namespace');
  });

  it("runs two manager replicas, each told its own pod (its image is the proxies' default)", () => {
    assert.equal(manager.spec?.replicas, 2);
    assert.deepEqual(managerContainer?.args, ['manager']);
    const fieldOf = (name: string) =>
      managerContainer?.env?.find((variable) => variable.name === name)?.valueFrom?.fieldRef?.fieldPath;
    assert.equal(fieldOf('CANARY_L4_POD_NAME'), 'metadata.name');
    assert.equal(fieldOf('CANARY_L4_POD_NAMESPACE'), 'metadata.namespace');
  });

  it('probes the manager on /readyz and /healthz at its admin port, and locks it down', () => {
    probesAdminPort(managerContainer);
    lockedDown(manager, managerContainer);
    assert.ok(managerContainer?.resources?.requests?.memory && managerContainer.resources.limits?.memory);
  });

  it("the manager's PDB and metrics Service select its pods", () => {
    const podLabels = manager.spec?.template.metadata?.labels ?? {};
    assert.ok(selects(manager.spec?.selector, podLabels));
    assert.ok(selects(theOnly<V1PodDisruptionBudget>('PodDisruptionBudget').spec?.selector, podLabels));
    const service = theOnly<V1Service>('Service');
    assert.ok(selects({ matchLabels: service.spec?.selector }, podLabels));
    assert.equal(portNumber(managerContainer, service.spec?.ports?.[0]?.targetPort), DEFAULT_ADMIN_PORT);
  });

  it("binds the manager's ServiceAccount to its ClusterRole, and in its namespace to its Role", () => {
    const account = theOnly<V1ServiceAccount>('ServiceAccount');
    assert.equal(manager.spec?.template.spec?.serviceAccountName, account.metadata?.name);
    const clusterBinding = theOnly<V1ClusterRoleBinding>('ClusterRoleBinding');
    const binding = theOnly<V1RoleBinding>('RoleBinding');
    assert.deepEqual(clusterBinding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: 'canary-l4-manager',
    });
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: theOnly<V1Role>('Role').metadata?.name,
    });
    for (const subjects of [clusterBinding.subjects, binding.subjects]) {
      assert.deepEqual(subjects, [
        { kind: 'ServiceAccount', name: account.metadata?.name, namespace: MANAGER_NAMESPACE },
      ]);
    }
  });

  // That the rules are exactly what the manager uses is checked where it runs: test/manager/manager.test.ts.
  it("lets the manager bind the proxy's and the gateway pods' ClusterRoles without holding their rights, and grants no wildcard", () => {
    const role = named<V1ClusterRole>('ClusterRole', 'canary-l4-manager');
    const bind = role.rules?.filter((rule) => rule.verbs.includes('bind')) ?? [];
    assert.deepEqual(
      bind.map((rule) => [rule.resources, rule.resourceNames, rule.verbs]),
      [
        [['clusterroles'], [PROXY_CLUSTER_ROLE], ['bind']],
        [['clusterroles'], [GATEWAY_CLUSTER_ROLE, GATEWAY_LEASE_ROLE], ['bind']],
      ],
    );
    for (const name of [GATEWAY_CLUSTER_ROLE, GATEWAY_LEASE_ROLE])
      assert.equal(
        named<V1ClusterRole>('ClusterRole', name).kind,
        'ClusterRole',
        `deploy/ ships ${name}, which it binds`,
      );
    const everything = [...grants(role.rules), ...grants(theOnly<V1Role>('Role').rules)];
    assert.ok(
      everything.every((grant) => !grant.includes('*')),
      everything.join('; '),
    );
    for (const proxyOnly of [
      'patch canary-l4.io/canaryreleases',
      'patch core/services',
      'patch gateway.networking.k8s.io/gateways/status',
      'list gateway.networking.k8s.io/tcproutes',
      'escalate rbac.authorization.k8s.io/clusterroles',
    ]) {
      assert.ok(!everything.includes(proxyOnly), `the manager does not ${proxyOnly}`);
    }
  });
});

const standalone = theOnly<V1Deployment>('Deployment', 'standalone/');
const proxies: [string, V1Deployment][] = [
  ['deploy/standalone/deployment.yaml', standalone],
  ["the manager's proxy Deployment", rendered.objects.deployment],
];

for (const [what, deployment] of proxies) {
  describe(what, () => {
    const podSpec = deployment.spec?.template.spec;
    const podLabels = deployment.spec?.template.metadata?.labels ?? {};
    const proxy = podSpec?.containers.find((container) => container.name === 'proxy');

    it('runs `canary-l4 proxy` for the example CanaryRelease, in its namespace', () => {
      assert.equal(proxy?.args?.[0], 'proxy');
      assert.equal(envValue(proxy, 'CANARY_RELEASE_NAME'), example.metadata.name);
      const namespace = proxy?.env?.find((variable) => variable.name === 'CANARY_RELEASE_NAMESPACE');
      assert.ok(namespace?.value === 'default' || namespace?.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace');
    });

    it(`labels its pods ${LABEL_RELEASE}: <release>, the proxy's default --proxy-selector, and selects them by it`, () => {
      assert.equal(podLabels[LABEL_RELEASE], example.metadata.name);
      assert.deepEqual(deployment.spec?.selector.matchLabels, { [LABEL_RELEASE]: example.metadata.name });
    });

    it('probes readiness on /readyz and liveness on /healthz, at the admin port the proxy listens on', () =>
      probesAdminPort(proxy));

    it('lets the preStop pause and the drain finish before the kubelet kills the pod', () => {
      const drainSeconds = Number(envValue(proxy, 'CANARY_L4_DRAIN_TIMEOUT') ?? DEFAULT_DRAIN_TIMEOUT_MS / 1000);
      const [sleepCommand, pauseSeconds] = proxy?.lifecycle?.preStop?.exec?.command ?? [];
      assert.equal(sleepCommand, 'sleep');
      const grace = podSpec?.terminationGracePeriodSeconds ?? 30;
      assert.ok(
        grace > Number(pauseSeconds) + drainSeconds,
        `terminationGracePeriodSeconds ${grace} <= preStop ${pauseSeconds} s + drain ${drainSeconds} s`,
      );
    });

    it('keeps the served config in a writable emptyDir (--state-dir), so a restarted container serves before the API answers', () => {
      const dir = envValue(proxy, 'CANARY_L4_STATE_DIR');
      assert.ok(dir, 'CANARY_L4_STATE_DIR is set');
      const mount = proxy?.volumeMounts?.find((item) => item.mountPath === dir);
      assert.ok(mount, `a volume is mounted at ${dir} (the root filesystem is read-only)`);
      assert.ok(podSpec?.volumes?.find((volume) => volume.name === mount.name)?.emptyDir, 'the volume is an emptyDir');
    });

    it('keeps a serving pod during a rollout, and spreads its pods over nodes', () => {
      assert.equal(deployment.spec?.strategy?.rollingUpdate?.maxUnavailable, 0);
      const spread =
        podSpec?.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.podAffinityTerm;
      assert.equal(spread?.topologyKey, 'kubernetes.io/hostname');
      assert.ok(selects(spread?.labelSelector, podLabels));
    });

    it('runs locked down: non-root, read-only root, no privilege escalation, no capabilities, RuntimeDefault seccomp', () =>
      lockedDown(deployment, proxy));

    it('requests CPU and memory and caps memory', () => {
      assert.ok(proxy?.resources?.requests?.cpu);
      assert.ok(proxy?.resources?.requests?.memory);
      assert.ok(proxy?.resources?.limits?.memory);
    });
  });
}

describe('deploy/standalone: one release without the manager', () => {
  const podLabels = standalone.spec?.template.metadata?.labels ?? {};

  it('the PodDisruptionBudget and the metrics Service cover the proxy pods', () => {
    assert.ok(selects(theOnly<V1PodDisruptionBudget>('PodDisruptionBudget', 'standalone/').spec?.selector, podLabels));
    const service = theOnly<V1Service>('Service', 'standalone/');
    assert.ok(selects({ matchLabels: service.spec?.selector }, podLabels));
    assert.equal(
      portNumber(standalone.spec?.template.spec?.containers[0], service.spec?.ports?.[0]?.targetPort),
      DEFAULT_ADMIN_PORT,
    );
  });

  it("binds the ServiceAccount the Deployment runs as to the proxy's ClusterRole, in the release's namespace", () => {
    const account = theOnly<V1ServiceAccount>('ServiceAccount', 'standalone/');
    const binding = theOnly<V1RoleBinding>('RoleBinding', 'standalone/');
    assert.equal(standalone.spec?.template.spec?.serviceAccountName, account.metadata?.name);
    assert.deepEqual(binding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: PROXY_CLUSTER_ROLE,
    });
    assert.deepEqual(
      binding.subjects?.map(({ kind, name }) => ({ kind, name })),
      [{ kind: 'ServiceAccount', name: account.metadata?.name }],
    );
    assert.equal(
      named<V1ClusterRole>('ClusterRole', PROXY_CLUSTER_ROLE).kind,
      'ClusterRole',
      'deploy/ ships the ClusterRole it binds',
    );
  });

  it("the proxy's ClusterRole names no single objects (the proxy works on Services it creates)", () => {
    for (const rule of named<V1ClusterRole>('ClusterRole', PROXY_CLUSTER_ROLE).rules ?? [])
      assert.equal(rule.resourceNames, undefined);
  });
});

describe('deploy/monitoring: the optional ServiceMonitor', () => {
  const monitor = theOnly<ServiceMonitor>('ServiceMonitor', 'monitoring/');

  it("finds the manager's metrics Service and every proxy's, in every namespace, on their admin port", () => {
    assert.equal(monitor.spec.namespaceSelector?.any, true);
    const [endpoint] = monitor.spec.endpoints;
    assert.equal(endpoint?.path ?? '/metrics', '/metrics');
    const services: [string, V1Service, V1Container | undefined][] = [
      ["the manager's", theOnly<V1Service>('Service'), managerContainer],
      [
        "a managed proxy's",
        rendered.objects.metricsService,
        rendered.objects.deployment.spec?.template.spec?.containers[0],
      ],
      [
        "a standalone proxy's",
        theOnly<V1Service>('Service', 'standalone/'),
        standalone.spec?.template.spec?.containers[0],
      ],
    ];
    for (const [whose, service, container] of services) {
      assert.ok(
        selects(monitor.spec.selector, service.metadata?.labels ?? {}),
        `the ServiceMonitor selects ${whose} metrics Service`,
      );
      const port = service.spec?.ports?.find((item) => item.name === endpoint?.port);
      assert.equal(
        portNumber(container, port?.targetPort),
        DEFAULT_ADMIN_PORT,
        `${whose} metrics Service has the port ${endpoint?.port}`,
      );
    }
  });

  it('labels every series with the release of the pod it came from', () => {
    const releaseLabel = `__meta_kubernetes_pod_label_${LABEL_RELEASE.replace(/[^a-zA-Z0-9_]/g, '_')}`;
    const relabelings = monitor.spec.endpoints.flatMap((endpoint) => endpoint.relabelings ?? []);
    assert.ok(
      relabelings.some((rule) => rule.sourceLabels?.includes(releaseLabel) && rule.targetLabel === 'canary_release'),
    );
  });
});

describe('kubectl kustomize', kubectlAtHand, () => {
  const kustomize = async (dir: string): Promise<KubeObject[]> => {
    const home = await mkdtemp(join(tmpdir(), 'kustomize-home-'));
    try {
      const { stdout } = await run('kubectl', ['kustomize', dir], {
        env: { ...process.env, HOME: home },
        timeout: 30_000,
      });
      return parseAllDocuments(stdout).map((document) => document.toJS() as KubeObject);
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  };
  const namespacesOf = (objects: KubeObject[]) =>
    new Set(
      objects
        .filter(
          (object) =>
            !['CustomResourceDefinition', 'Namespace', 'ClusterRole', 'ClusterRoleBinding'].includes(object.kind),
        )
        .map((object) => object.metadata.namespace),
    );

  it('deploy/ renders the manager into canary-l4-system, without a ServiceMonitor', async () => {
    const objects = await kustomize(fileURLToPath(deployDir));
    assert.deepEqual(
      objects.map((object) => `${object.kind}/${object.metadata.name}`).sort(),
      allObjects()
        .filter((object) => object.kind !== KIND)
        .map((object) => `${object.kind}/${object.metadata.name}`)
        .sort(),
    );
    assert.deepEqual([...namespacesOf(objects)], [MANAGER_NAMESPACE]);
  });

  it('an overlay with the monitoring component adds the ServiceMonitor', async () => {
    const overlay = await mkdtemp(join(tmpdir(), 'overlay-'));
    try {
      // kustomize takes relative paths only.
      const base = relative(overlay, fileURLToPath(deployDir));
      await writeFile(
        join(overlay, 'kustomization.yaml'),
        `resources: [${base}]\ncomponents: [${join(base, 'monitoring')}]\n`,
      );
      const objects = await kustomize(overlay);
      assert.deepEqual(
        objects.filter((object) => object.kind === 'ServiceMonitor').map((object) => object.metadata.namespace),
        [MANAGER_NAMESPACE],
      );
    } finally {
      await rm(overlay, { recursive: true, force: true });
    }
  });

  it("deploy/standalone renders one release's proxy into one namespace, the RoleBinding subject included", async () => {
    const objects = await kustomize(fileURLToPath(new URL('standalone/', deployDir)));
    assert.deepEqual(
      objects.map((object) => `${object.kind}/${object.metadata.name}`).sort(),
      allObjects('standalone/')
        .map((object) => `${object.kind}/${object.metadata.name}`)
        .sort(),
    );
    const namespaces = namespacesOf(objects);
    assert.equal(namespaces.size, 1);
    const binding = objects.find((object) => object.kind === 'RoleBinding') as V1RoleBinding | undefined;
    assert.deepEqual(
      binding?.subjects?.map((subject) => subject.namespace),
      [...namespaces],
    );
  });
});
