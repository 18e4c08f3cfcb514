// What the manager renders for a Gateway of canary-l4's class: the release proxy's pod running
// `canary-l4 gateway` for it, owned by it; a Service port per distinct TCP/UDP listener; the pods'
// bindings to deploy/gateway-rbac.yaml's ClusterRoles, whose rules are the contract's.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1ClusterRole } from '@kubernetes/client-node';
import type { Gateway, GatewayListener } from '../../../src/api/gateway/types.ts';
import { renderGateway, servicePorts, type RenderedGateway } from '../../../src/manager/gateway-proxies/render.ts';
import { gatewayProxyName } from '../../../src/api/gateway/names.ts';
import {
  ANNOTATION_SERVICE_TYPE,
  GATEWAY_CLUSTER_ROLE,
  GATEWAY_LEASE_ROLE,
  LABEL_GATEWAY,
} from '../../../src/manager/gateway-proxies/names.ts';
import { renderProxy } from '../../../src/manager/render.ts';
import { ANNOTATION_RENDERED, LABEL_MANAGED_BY, MANAGED_BY } from '../../../src/manager/names.ts';
import { API_VERSION, KIND } from '../../../src/api/names.ts';
import { named } from '../../deploy/manifests.ts';

const IMAGE = 'registry.example/canary-l4:0.4.0';
const TCP = (port: number, name = `tcp-${port}`): GatewayListener => ({ name, port, protocol: 'TCP' });
const UDP = (port: number, name = `udp-${port}`): GatewayListener => ({ name, port, protocol: 'UDP' });

function gateway(listeners: readonly GatewayListener[], metadata: Partial<Gateway['metadata']> = {}): Gateway {
  return {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'Gateway',
    metadata: { name: 'edge', namespace: 'shop', uid: 'uid-9', generation: 1, ...metadata },
    spec: { gatewayClassName: 'canary-l4', listeners },
  };
}

function rendered(from: Gateway): RenderedGateway {
  const result = renderGateway(from, { proxyImage: IMAGE });
  assert.ok(result.ok, `renders: ${JSON.stringify(!result.ok && result.problems)}`);
  return result.objects;
}

describe('the proxy the manager renders for a Gateway', () => {
  it("names every object canary-l4-gateway-<gateway> in its namespace (the ClusterRoleBinding by namespace and name), labelled as the manager's, owned by the Gateway", () => {
    const objects = rendered(gateway([TCP(9300)]));
    assert.deepEqual(
      Object.values(objects).map(
        (object) => `${object.kind} ${object.metadata?.namespace ?? ''}/${object.metadata?.name}`,
      ),
      [
        'ServiceAccount shop/canary-l4-gateway-edge',
        'RoleBinding shop/canary-l4-gateway-edge',
        'ClusterRoleBinding /canary-l4-gateway.shop.edge',
        'Deployment shop/canary-l4-gateway-edge',
        'PodDisruptionBudget shop/canary-l4-gateway-edge',
        'Service shop/canary-l4-gateway-edge',
      ],
    );
    for (const object of Object.values(objects)) {
      assert.equal(object.metadata?.labels?.[LABEL_MANAGED_BY], MANAGED_BY);
      assert.equal(object.metadata?.labels?.[LABEL_GATEWAY], 'edge');
      assert.match(object.metadata?.annotations?.[ANNOTATION_RENDERED] ?? '', /^[0-9a-f]{16}$/);
      // A cluster-scoped object cannot be owned by a namespaced one, and the pods' identity outlives
      // the Gateway until no pod is left: the manager removes those itself.
      assert.deepEqual(
        object.metadata?.ownerReferences,
        ['ClusterRoleBinding', 'RoleBinding', 'ServiceAccount'].includes(object.kind ?? '')
          ? undefined
          : [
              {
                apiVersion: 'gateway.networking.k8s.io/v1',
                kind: 'Gateway',
                name: 'edge',
                uid: 'uid-9',
                controller: true,
                blockOwnerDeletion: true,
              },
            ],
      );
    }
    assert.equal(objects.clusterRoleBinding.metadata?.labels?.['canary-l4.io/gateway-namespace'], 'shop');
  });

  it('binds its ServiceAccount to the gateway ClusterRole cluster-wide and to the Lease role in its namespace only', () => {
    const objects = rendered(gateway([TCP(9300)]));
    const subject = [{ kind: 'ServiceAccount', name: 'canary-l4-gateway-edge', namespace: 'shop' }];
    assert.deepEqual(
      [objects.clusterRoleBinding.roleRef.name, objects.clusterRoleBinding.subjects],
      [GATEWAY_CLUSTER_ROLE, subject],
    );
    assert.deepEqual([objects.roleBinding.roleRef.name, objects.roleBinding.subjects], [GATEWAY_LEASE_ROLE, subject]);
    assert.equal(objects.deployment.spec?.template.spec?.serviceAccountName, 'canary-l4-gateway-edge');
  });

  it('runs `canary-l4 gateway` for this Gateway in the pod a release proxy runs in: image, probes, hardening, resources, grace, PDB', () => {
    const objects = rendered(gateway([TCP(80)]));
    const pod = objects.deployment.spec!.template.spec!;
    const container = pod.containers[0]!;
    assert.equal(container.image, IMAGE);
    assert.deepEqual(container.args, [
      'gateway',
      '-n',
      'shop',
      '--gateway',
      'edge',
      '--service',
      'canary-l4-gateway-edge',
      '--leader-elect',
      '--pod-name',
      '$(POD_NAME)',
    ]);
    assert.deepEqual(
      container.env?.map((variable) => [variable.name, variable.value ?? variable.valueFrom?.fieldRef?.fieldPath]),
      [
        ['POD_NAME', 'metadata.name'],
        ['CANARY_L4_ADMIN_PORT', '9090'],
        ['CANARY_L4_DRAIN_TIMEOUT', '30'],
      ],
    );
    assert.equal(objects.deployment.spec?.replicas, 2);
    assert.deepEqual(objects.deployment.spec?.selector.matchLabels, { [LABEL_GATEWAY]: 'edge' });
    assert.deepEqual(objects.podDisruptionBudget.spec, {
      maxUnavailable: 1,
      unhealthyPodEvictionPolicy: 'AlwaysAllow',
      selector: { matchLabels: { [LABEL_GATEWAY]: 'edge' } },
    });
    // The very pod of a release's proxy, but for what it runs and who it is.
    const release = renderProxy(
      {
        apiVersion: API_VERSION,
        kind: KIND,
        metadata: { name: 'web-v2', namespace: 'shop', uid: 'u' },
        spec: { services: [] },
      },
      { proxyImage: IMAGE },
    );
    assert.ok(release.ok);
    const proxyPod = release.objects.deployment.spec!.template.spec!;
    const proxy = proxyPod.containers[0]!;
    for (const field of ['readinessProbe', 'livenessProbe', 'lifecycle', 'resources', 'securityContext'] as const)
      assert.deepEqual(container[field], proxy[field], field);
    for (const field of ['securityContext', 'terminationGracePeriodSeconds'] as const)
      assert.deepEqual(pod[field], proxyPod[field], field);
    assert.deepEqual(objects.deployment.spec?.strategy, release.objects.deployment.spec?.strategy);
    assert.deepEqual(container.readinessProbe?.httpGet, { path: '/readyz', port: 'admin' });
    // Port 80 without a capability: the namespaced sysctl the release proxies use.
    assert.deepEqual(pod.securityContext?.sysctls, [{ name: 'net.ipv4.ip_unprivileged_port_start', value: '0' }]);
    assert.deepEqual(container.ports, [{ name: 'admin', containerPort: 9090, protocol: 'TCP' }]);
  });

  const portCases: [string, GatewayListener[], string[]][] = [
    ['one TCP listener', [TCP(9300)], ['tcp-9300 9300→9300/TCP']],
    ['TCP and UDP on one port: two ports', [TCP(53), UDP(53)], ['tcp-53 53→53/TCP', 'udp-53 53→53/UDP']],
    [
      'two listeners of one (port, protocol): one port',
      [TCP(9300, 'a'), TCP(9300, 'b'), UDP(5000)],
      ['udp-5000 5000→5000/UDP', 'tcp-9300 9300→9300/TCP'],
    ],
    [
      "HTTP, HTTPS and TLS listeners are not canary-l4's: no port",
      [{ name: 'web', port: 80, protocol: 'HTTP' }, { name: 'tls', port: 443, protocol: 'TLS' }, UDP(8125)],
      ['udp-8125 8125→8125/UDP'],
    ],
    [
      'by port, then protocol',
      [UDP(9000), TCP(700), TCP(9000)],
      ['tcp-700 700→700/TCP', 'tcp-9000 9000→9000/TCP', 'udp-9000 9000→9000/UDP'],
    ],
  ];
  for (const [title, listeners, expected] of portCases) {
    it(`Service ports: ${title}`, () => {
      const ports = servicePorts(gateway(listeners));
      assert.deepEqual(
        ports.map((port) => `${port.name} ${port.port}→${port.targetPort}/${port.protocol}`),
        expected,
      );
      const service = rendered(gateway(listeners)).service!;
      assert.deepEqual(service.spec?.ports, ports);
      assert.equal(service.spec?.type, 'ClusterIP');
      assert.deepEqual(service.spec?.selector, { [LABEL_GATEWAY]: 'edge' });
    });
  }

  it('no TCP or UDP listener: no Service (a Service needs a port)', () => {
    assert.equal(rendered(gateway([{ name: 'web', port: 80, protocol: 'HTTP' }])).service, undefined);
  });

  it('a listener added changes the Service alone: the Deployment is rendered the same, so its pods do not roll', () => {
    const before = rendered(gateway([TCP(9300)]));
    const after = rendered(gateway([TCP(9300), UDP(9300)]));
    const digest = (object: { metadata?: { annotations?: Record<string, string> } }) =>
      object.metadata?.annotations?.[ANNOTATION_RENDERED];
    assert.notEqual(digest(after.service!), digest(before.service!));
    for (const kind of [
      'deployment',
      'podDisruptionBudget',
      'serviceAccount',
      'roleBinding',
      'clusterRoleBinding',
    ] as const)
      assert.equal(digest(after[kind]), digest(before[kind]), kind);
  });

  const serviceTypes: [string | undefined, string, string[]][] = [
    [undefined, 'ClusterIP', []],
    ['LoadBalancer', 'LoadBalancer', []],
    ['ClusterIP', 'ClusterIP', []],
    [
      'NodePort',
      'ClusterIP',
      [
        `metadata.annotations[${ANNOTATION_SERVICE_TYPE}]: must be ClusterIP or LoadBalancer, got "NodePort"; the Service stays ClusterIP until it is fixed`,
      ],
    ],
  ];
  for (const [annotation, type, warnings] of serviceTypes) {
    it(`the ${ANNOTATION_SERVICE_TYPE} annotation ${annotation ?? 'absent'}: a ${type} Service${warnings.length > 0 ? ', and a warning naming it' : ''}`, () => {
      const result = renderGateway(
        gateway(
          [TCP(9300)],
          annotation === undefined ? {} : { annotations: { [ANNOTATION_SERVICE_TYPE]: annotation } },
        ),
        { proxyImage: IMAGE },
      );
      assert.ok(result.ok);
      assert.equal(result.objects.service?.spec?.type, type);
      assert.deepEqual(result.warnings, warnings);
    });
  }

  const badNames = ['a'.repeat(64), 'Edge'];
  for (const name of badNames) {
    it(`a Gateway named ${JSON.stringify(name)} gets nothing, and one line naming metadata.name says why`, () => {
      const result = renderGateway(gateway([TCP(9300)], { name }), { proxyImage: IMAGE });
      assert.ok(!result.ok);
      assert.deepEqual(result.problems, [
        `metadata.name: its proxy's objects carry it as the label canary-l4.io/gateway, whose value holds at most 63 characters (lower-case letters, digits, '-' and '.'); rename the Gateway, got ${JSON.stringify(name)}`,
      ]);
    });
  }
  it('a name too long, or with dots, for a Service of its own is served: its objects take a cut name with a hash of the whole', () => {
    // The conformance suite's Gateways have names of 47 characters.
    for (const name of ['tcp-invalid-cross-namespace-backend-ref-gateway', 'edge.example', 'g'.repeat(63), '9lives']) {
      const result = renderGateway(gateway([TCP(1)], { name }), { proxyImage: IMAGE });
      assert.ok(result.ok, name);
      const proxy = result.objects.service?.metadata?.name ?? '';
      assert.match(proxy, /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/, `${proxy} is a Service name`);
      assert.equal(result.objects.deployment.metadata?.name, proxy);
      assert.equal(result.objects.deployment.spec?.selector?.matchLabels?.['canary-l4.io/gateway'], name);
    }
  });
});

describe('gatewayProxyName', () => {
  it('canary-l4-gateway-<name> while that is a Service name; else a cut name and a hash, never shared', () => {
    assert.equal(gatewayProxyName('edge'), 'canary-l4-gateway-edge');
    const long = gatewayProxyName('tcp-invalid-cross-namespace-backend-ref-gateway');
    assert.match(long, /^canary-l4-gateway-tcp-invalid-cross-namespace-backend-[0-9a-f]{8}$/);
    assert.ok(gatewayProxyName('g'.repeat(253)).length <= 63);
    assert.notEqual(gatewayProxyName('tcp-invalid-cross-namespace-backend-ref-gateway-2'), long);
    assert.notEqual(gatewayProxyName('edge.example'), gatewayProxyName('edge-example'));
    assert.match(gatewayProxyName('9lives'), /^canary-l4-gateway-9lives$/);
  });
});

describe("deploy/gateway-rbac.yaml: the gateway pods' ClusterRoles", () => {
  const grants = (name: string) =>
    (named<V1ClusterRole>('ClusterRole', name).rules ?? [])
      .flatMap((rule) =>
        (rule.apiGroups ?? []).flatMap((group) =>
          (rule.resources ?? []).flatMap((resource) =>
            rule.verbs.map((verb) => `${verb} ${group || 'core'}/${resource}`),
          ),
        ),
      )
      .sort();

  it('are what the gateway asks, and no more: cluster-wide its informers and status patches, its Lease in its namespace only', () => {
    const g = 'gateway.networking.k8s.io';
    const read = ['gatewayclasses', 'gateways', 'tcproutes', 'udproutes', 'referencegrants'];
    const statuses = ['gateways/status', 'tcproutes/status', 'udproutes/status', 'gatewayclasses/status'];
    assert.deepEqual(
      grants(GATEWAY_CLUSTER_ROLE),
      [
        ...read.flatMap((resource) => ['list', 'watch'].map((verb) => `${verb} ${g}/${resource}`)),
        ...statuses.map((resource) => `patch ${g}/${resource}`),
        ...['services', 'namespaces'].flatMap((resource) =>
          ['list', 'watch'].map((verb) => `${verb} core/${resource}`),
        ),
      ].sort(),
    );
    assert.deepEqual(grants(GATEWAY_LEASE_ROLE), [
      'create coordination.k8s.io/leases',
      'get coordination.k8s.io/leases',
      'update coordination.k8s.io/leases',
    ]);
  });
});
