// What the manager renders for a CanaryRelease: deploy/standalone's proxy, made for the release,
// owned by it, configured by plain values only, and shaped by spec.proxy and --proxy-image.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Deployment, V1PodSpec } from '@kubernetes/client-node';
import { API_VERSION, KIND, LABEL_RELEASE } from '../../src/api/names.ts';
import { renderProxy, type RenderedProxy } from '../../src/manager/render.ts';
import { ANNOTATION_RENDERED, LABEL_MANAGED_BY, MANAGED_BY, PROXY_CLUSTER_ROLE } from '../../src/manager/names.ts';
import type { ManagedRelease } from '../../src/api/proxy-types.ts';
import { theOnly } from '../deploy/manifests.ts';

const canonical = (object: unknown) => JSON.stringify(object);

const IMAGE = 'registry.example/canary-l4:0.2.0';

function release(
  spec: Record<string, unknown> = {},
  metadata: Partial<ManagedRelease['metadata']> = {},
): ManagedRelease {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: 'web-v2', namespace: 'shop', uid: 'uid-7', generation: 1, ...metadata },
    spec: { services: [], ...spec },
  };
}

function rendered(from: ManagedRelease = release(), image = IMAGE): RenderedProxy {
  const result = renderProxy(from, { proxyImage: image });
  assert.ok(result.ok, `renders: ${JSON.stringify(!result.ok && result.problems)}`);
  return result.objects;
}

const podSpec = (objects: RenderedProxy): V1PodSpec => objects.deployment.spec!.template.spec!;

describe('the proxy the manager renders', () => {
  it("names every object after the release, in its namespace, labelled as the manager's and owned by the release", () => {
    const objects = rendered();
    assert.deepEqual(
      Object.values(objects).map((object) => `${object.kind} ${object.metadata?.namespace}/${object.metadata?.name}`),
      [
        'ServiceAccount shop/canary-l4-web-v2',
        'RoleBinding shop/canary-l4-web-v2',
        'Deployment shop/canary-l4-web-v2',
        'PodDisruptionBudget shop/canary-l4-web-v2',
        'Service shop/canary-l4-web-v2-metrics',
      ],
    );
    for (const object of Object.values(objects)) {
      assert.equal(object.metadata?.labels?.[LABEL_MANAGED_BY], MANAGED_BY);
      assert.equal(object.metadata?.labels?.[LABEL_RELEASE], 'web-v2');
      // The pods' identity is the manager's to delete once no pod is left, not the garbage collector's.
      assert.deepEqual(
        object.metadata?.ownerReferences,
        object.kind === 'ServiceAccount' || object.kind === 'RoleBinding'
          ? undefined
          : [{ apiVersion: API_VERSION, kind: KIND, name: 'web-v2', uid: 'uid-7', controller: true }],
      );
      assert.match(object.metadata?.annotations?.[ANNOTATION_RENDERED] ?? '', /^[0-9a-f]{16}$/);
    }
  });

  it('owns nothing while the release is being deleted: a foreground deletion must not take the proxy that hands the Services back', () => {
    for (const object of Object.values(rendered(release({}, { deletionTimestamp: '2026-01-01T00:00:00Z' }))))
      assert.equal(object.metadata?.ownerReferences, undefined);
  });

  it('runs `proxy` from --proxy-image, configured by plain values, with no kubeconfig (its ServiceAccount serves)', () => {
    const objects = rendered();
    const [container, ...others] = podSpec(objects).containers;
    assert.equal(others.length, 0);
    assert.equal(container?.image, IMAGE);
    assert.deepEqual(container?.args, ['proxy']);
    assert.equal(container?.command, undefined, "the image's entrypoint");
    assert.equal(podSpec(objects).serviceAccountName, objects.serviceAccount.metadata?.name);
    const allowedFields = new Set(['metadata.name', 'metadata.namespace', 'status.podIP']);
    for (const variable of container?.env ?? []) {
      assert.ok(
        variable.value !== undefined || allowedFields.has(variable.valueFrom?.fieldRef?.fieldPath ?? ''),
        `${variable.name} is a plain value or an allowed fieldRef`,
      );
      assert.doesNotMatch(`${variable.name}=${variable.value}`, /KUBECONFIG/);
    }
    assert.deepEqual(
      Object.fromEntries((container?.env ?? []).map((variable) => [variable.name, variable.value])).CANARY_RELEASE_NAME,
      'web-v2',
    );
    assert.ok(
      (container?.env ?? []).some(
        (variable) => variable.name === 'CANARY_RELEASE_NAMESPACE' && variable.value === 'shop',
      ),
    );
  });

  it('is deploy/standalone/deployment.yaml made for the release: same probes, pod hardening, spreading, grace period and state emptyDir', () => {
    const standalone = theOnly<V1Deployment>('Deployment', 'standalone/');
    const image = standalone.spec!.template.spec!.containers[0]!.image!;
    const objects = rendered(
      release({}, { name: standalone.metadata!.name!.replace(/^canary-l4-/, ''), namespace: 'default' }),
      image,
    );
    const normalize = (deployment: V1Deployment) => {
      const spec = structuredClone(deployment.spec!);
      const pod = spec.template.spec!;
      delete pod.serviceAccountName;
      // The manager knows the namespace; a manifest reads it from the downward API.
      pod.containers[0]!.env = pod.containers[0]!.env!.map((variable) =>
        variable.name === 'CANARY_RELEASE_NAMESPACE' ? { name: variable.name, value: '<namespace>' } : variable,
      );
      spec.template.metadata = {};
      return spec;
    };
    assert.deepEqual(normalize(objects.deployment), normalize(standalone));
    const labels = objects.deployment.spec!.template.metadata!.labels!;
    for (const [key, value] of Object.entries(standalone.spec!.template.metadata!.labels!))
      assert.equal(labels[key], value, `pod label ${key}`);
  });

  it('gives the proxy pods the labels and named ports status.takeover asks for, never in place of the two that find them', () => {
    const taken = release({}, {});
    const withTakeover: ManagedRelease = {
      ...taken,
      status: {
        takeover: {
          keys: ['app', 'app.kubernetes.io/name', LABEL_MANAGED_BY, LABEL_RELEASE, 'bad key!'],
          value: 'canary-l4.web-v2',
          namedPorts: [
            { name: 'http', containerPort: 8000, protocol: 'TCP' },
            { name: 'admin', containerPort: 9999, protocol: 'TCP' },
          ],
          movedPorts: [],
        },
      },
    };
    const template = rendered(withTakeover).deployment.spec!.template;
    assert.deepEqual(template.metadata?.labels, {
      'app.kubernetes.io/name': 'canary-l4.web-v2',
      'app.kubernetes.io/instance': 'web-v2',
      'app.kubernetes.io/component': 'proxy',
      [LABEL_MANAGED_BY]: MANAGED_BY,
      [LABEL_RELEASE]: 'web-v2',
      app: 'canary-l4.web-v2',
    });
    assert.deepEqual(template.spec?.containers[0]?.ports, [
      { name: 'admin', containerPort: 9090, protocol: 'TCP' },
      { name: 'http', containerPort: 8000, protocol: 'TCP' },
    ]);
    assert.deepEqual(
      template.spec?.containers[0]?.env?.find((variable) => variable.name === 'CANARY_L4_POD_NAME'),
      { name: 'CANARY_L4_POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      'in a pod: the proxy knows',
    );
    assert.notEqual(
      canonical(rendered(withTakeover).deployment),
      canonical(rendered(taken).deployment),
      'new labels roll the pods',
    );
  });

  it("declares a named UDP targetPort as UDP: a TCP declaration would leave the Service's UDP port resolving to nothing", () => {
    const withUdp: ManagedRelease = {
      ...release(),
      status: {
        takeover: {
          keys: ['app'],
          value: 'canary-l4.web-v2',
          movedPorts: [],
          namedPorts: [
            { name: 'dns', containerPort: 8053, protocol: 'UDP' },
            { name: 'http', containerPort: 8000, protocol: 'TCP' },
          ],
        },
      },
    };
    assert.deepEqual(podSpec(rendered(withUdp)).containers[0]?.ports, [
      { name: 'admin', containerPort: 9090, protocol: 'TCP' },
      { name: 'dns', containerPort: 8053, protocol: 'UDP' },
      { name: 'http', containerPort: 8000, protocol: 'TCP' },
    ]);
  });

  it("binds the release's ServiceAccount to the proxy ClusterRole in the release's namespace only", () => {
    const { roleBinding } = rendered();
    assert.equal(roleBinding.kind, 'RoleBinding');
    assert.deepEqual(roleBinding.roleRef, {
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'ClusterRole',
      name: PROXY_CLUSTER_ROLE,
    });
    assert.deepEqual(roleBinding.subjects, [{ kind: 'ServiceAccount', name: 'canary-l4-web-v2', namespace: 'shop' }]);
  });

  it('a PDB that lets one pod go at a time, and a metrics Service on the admin port', () => {
    const { podDisruptionBudget, metricsService, deployment } = rendered();
    assert.deepEqual(podDisruptionBudget.spec, {
      maxUnavailable: 1,
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
      selector: { matchLabels: { [LABEL_RELEASE]: 'web-v2' } },
    });
    assert.deepEqual(metricsService.spec?.selector, deployment.spec?.selector.matchLabels);
    assert.deepEqual(metricsService.spec?.ports, [{ name: 'admin', port: 9090, targetPort: 'admin', protocol: 'TCP' }]);
    assert.equal(metricsService.metadata?.labels?.['app.kubernetes.io/component'], 'metrics');
  });

  it('without spec.proxy: two replicas, the default resources, no node constraints', () => {
    const objects = rendered();
    assert.equal(objects.deployment.spec?.replicas, 2);
    assert.deepEqual(podSpec(objects).containers[0]?.resources, {
      requests: { cpu: '100m', memory: '128Mi' },
      limits: { memory: '512Mi' },
    });
    for (const field of ['nodeSelector', 'tolerations', 'priorityClassName'] as const)
      assert.equal(podSpec(objects)[field], undefined);
  });

  it('with spec.proxy: its replicas, resources (replacing the defaults), nodeSelector, tolerations and priorityClassName', () => {
    const proxy = {
      replicas: 3,
      resources: { requests: { cpu: '1' }, limits: { cpu: '2', memory: '1Gi' } },
      nodeSelector: { pool: 'edge' },
      tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'proxy', effect: 'NoSchedule' }],
      priorityClassName: 'high',
    };
    const objects = rendered(release({ proxy }));
    assert.equal(objects.deployment.spec?.replicas, 3);
    assert.deepEqual(podSpec(objects).containers[0]?.resources, proxy.resources);
    assert.deepEqual(podSpec(objects).nodeSelector, proxy.nodeSelector);
    assert.deepEqual(podSpec(objects).tolerations, proxy.tolerations);
    assert.equal(podSpec(objects).priorityClassName, 'high');
  });

  it('renders the same again for the same release (a pass that changes nothing writes nothing), and differently for another spec.proxy or image', () => {
    const digest = (objects: RenderedProxy) => objects.deployment.metadata?.annotations?.[ANNOTATION_RENDERED];
    assert.deepEqual(rendered(), rendered());
    assert.notEqual(digest(rendered(release({ proxy: { replicas: 3 } }))), digest(rendered()));
    assert.notEqual(digest(rendered(release(), 'canary-l4:0.3.0')), digest(rendered()));
    assert.equal(
      rendered(release({ proxy: { replicas: 3 } })).serviceAccount.metadata?.annotations?.[ANNOTATION_RENDERED],
      rendered().serviceAccount.metadata?.annotations?.[ANNOTATION_RENDERED],
    );
  });

  it('refuses what it cannot render, naming the field', () => {
    const long = 'r'.repeat(46);
    const tooLong = renderProxy(release({}, { name: long }), { proxyImage: IMAGE });
    assert.deepEqual(tooLong.ok ? [] : tooLong.problems, [
      `metadata.name: the proxy's objects are named after the release (Service canary-l4-<name>-metrics), so it must be at most 45 lower-case letters, digits and '-', got "${long}"`,
    ]);
    assert.equal(renderProxy(release({}, { name: 'r'.repeat(45) }), { proxyImage: IMAGE }).ok, true);
    const dotted = renderProxy(release({}, { name: 'web.v2' }), { proxyImage: IMAGE });
    assert.match(dotted.ok ? '' : dotted.problems.join(), /^metadata\.name: /);
    const badProxy = renderProxy(release({ proxy: { replicas: 0 } }), { proxyImage: IMAGE });
    assert.match(badProxy.ok ? '' : badProxy.problems.join(), /^spec\.proxy\.replicas: /);
  });
});
