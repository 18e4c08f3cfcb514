// A Gateway and its world → the L4 config canary-l4 serves and the statuses it writes, as the Gateway
// API spec asks (attachment, weighted backendRefs, refused shares, every condition), table by table.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import type { Gateway, L4Route, ReferenceGrant } from '../../../src/api/gateway/types.ts';
import { forgetGateway, type GatewayWorld, planGateway } from '../../../src/gateway/model/resolve.ts';

const NOW = '2026-12-03T12:00:00Z';
const LATER = '2026-12-03T12:05:00Z';

function gateway(listeners: Gateway['spec']['listeners'], extra: Partial<Gateway['spec']> = {}): Gateway {
  return {
    metadata: { name: 'l4', namespace: 'infra', generation: 3 },
    spec: { gatewayClassName: 'canary-l4', listeners, ...extra },
  };
}

const TCP_AND_UDP = gateway([
  { name: 'tcp', protocol: 'TCP', port: 9300 },
  { name: 'udp', protocol: 'UDP', port: 9301 },
]);

function route(
  kind: L4Route['kind'],
  name: string,
  parentRefs: L4Route['spec']['parentRefs'],
  backendRefs: NonNullable<L4Route['spec']['rules'][number]['backendRefs']>,
  metadata: Partial<L4Route['metadata']> = {},
): L4Route {
  return {
    kind,
    metadata: { name, namespace: 'infra', generation: 1, creationTimestamp: '2026-12-01T00:00:00Z', ...metadata },
    spec: { parentRefs, rules: [{ backendRefs }] },
  };
}

function service(namespace: string, name: string, clusterIP: string, ports: [number, 'TCP' | 'UDP'][]): V1Service {
  return {
    metadata: { name, namespace },
    spec: { clusterIP, ports: ports.map(([port, protocol]) => ({ port, protocol })) },
  };
}

const SERVICES = new Map(
  [
    service('infra', 'v1', '10.96.0.1', [
      [3000, 'TCP'],
      [3000, 'UDP'],
    ]),
    service('infra', 'v2', '10.96.0.2', [
      [3000, 'TCP'],
      [3000, 'UDP'],
    ]),
    service('apps', 'other', '10.96.0.3', [[3000, 'TCP']]),
    service('infra', 'headless', 'None', [[3000, 'TCP']]),
  ].map((s) => [`${s.metadata?.namespace}/${s.metadata?.name}`, s]),
);

function world(overrides: Partial<GatewayWorld>): GatewayWorld {
  return {
    gateway: TCP_AND_UDP,
    routes: [],
    services: SERVICES,
    grants: [],
    namespaceLabels: new Map<string, Record<string, string>>([
      ['infra', {}],
      ['apps', { team: 'apps' }],
    ]),
    addresses: [{ type: 'IPAddress', value: '10.96.1.1' }],
    listenHost: undefined,
    reservedPorts: new Set([9090]),
    unbindable: new Map(),
    now: NOW,
    ...overrides,
  };
}

const EIGHTY_TWENTY = [
  { name: 'v1', port: 3000, weight: 80 },
  { name: 'v2', port: 3000, weight: 20 },
];

function conditions(list: readonly { type: string; status: string; reason: string }[] | undefined) {
  return Object.fromEntries((list ?? []).map((c) => [c.type, `${c.status} ${c.reason}`]));
}

function parentsOf(plan: ReturnType<typeof planGateway>, key: string) {
  return plan.routes.get(key)?.parents ?? [];
}

describe('a Gateway with a TCP and a UDP listener, an 80/20 TCPRoute and UDPRoute', () => {
  const plan = planGateway(
    world({
      routes: [
        route('TCPRoute', 'tcp', [{ name: 'l4', sectionName: 'tcp' }], EIGHTY_TWENTY),
        route('UDPRoute', 'udp', [{ name: 'l4', sectionName: 'udp' }], EIGHTY_TWENTY),
      ],
    }),
  );

  it('serves each listener on its port, split 80/20 between the Services’ cluster IPs', () => {
    assert.deepEqual(
      plan.config.listeners.map((l) => [
        l.name,
        l.protocol,
        l.listen.port,
        l.backends.map((b) => [b.name, b.host, b.port, b.weight]),
      ]),
      [
        [
          'tcp',
          'tcp',
          9300,
          [
            ['v1.infra.3000', '10.96.0.1', 3000, 80],
            ['v2.infra.3000', '10.96.0.2', 3000, 20],
          ],
        ],
        [
          'udp',
          'udp',
          9301,
          [
            ['v1.infra.3000', '10.96.0.1', 3000, 80],
            ['v2.infra.3000', '10.96.0.2', 3000, 20],
          ],
        ],
      ],
    );
  });

  it('Gateway Accepted and Programmed at its generation, with its address; each listener with one route', () => {
    assert.deepEqual(conditions(plan.status.conditions), { Accepted: 'True Accepted', Programmed: 'True Programmed' });
    assert.ok(plan.status.conditions?.every((c) => c.observedGeneration === 3 && c.lastTransitionTime === NOW));
    assert.deepEqual(plan.status.addresses, [{ type: 'IPAddress', value: '10.96.1.1' }]);
    assert.deepEqual(
      plan.status.listeners?.map((l) => [l.name, l.attachedRoutes, l.supportedKinds, conditions(l.conditions)]),
      ['tcp', 'udp'].map((name) => [
        name,
        1,
        [{ group: 'gateway.networking.k8s.io', kind: name === 'tcp' ? 'TCPRoute' : 'UDPRoute' }],
        {
          Accepted: 'True Accepted',
          Conflicted: 'False NoConflicts',
          ResolvedRefs: 'True ResolvedRefs',
          Programmed: 'True Programmed',
        },
      ]),
    );
  });

  it('each route: one parent entry, our controllerName, the parentRef spelled out, Accepted and ResolvedRefs', () => {
    const [parent] = parentsOf(plan, 'TCPRoute/infra/tcp');
    assert.deepEqual(parent?.parentRef, {
      group: 'gateway.networking.k8s.io',
      kind: 'Gateway',
      namespace: 'infra',
      name: 'l4',
      sectionName: 'tcp',
    });
    assert.equal(parent?.controllerName, 'canary-l4.io/gateway-controller');
    assert.deepEqual(conditions(parent?.conditions), { Accepted: 'True Accepted', ResolvedRefs: 'True ResolvedRefs' });
    assert.ok(parent?.conditions.every((c) => c.observedGeneration === 1));
  });
});

describe('backendRefs that cannot be resolved keep their share, refused', () => {
  const cases: [string, L4Route['spec']['rules'][number]['backendRefs'], ReferenceGrant[], string, RegExp][] = [
    [
      'a missing Service',
      [
        { name: 'v1', port: 3000, weight: 80 },
        { name: 'gone', port: 3000, weight: 20 },
      ],
      [],
      'BackendNotFound',
      /infra\/gone does not exist/,
    ],
    [
      'a port the Service lacks',
      [
        { name: 'v1', port: 3000, weight: 80 },
        { name: 'v2', port: 4000, weight: 20 },
      ],
      [],
      'BackendNotFound',
      /has no TCP port 4000/,
    ],
    [
      'a headless Service',
      [
        { name: 'v1', port: 3000, weight: 80 },
        { name: 'headless', port: 3000, weight: 20 },
      ],
      [],
      'BackendNotFound',
      /no cluster IP \(headless\)/,
    ],
    [
      'another namespace without a ReferenceGrant',
      [
        { name: 'v1', port: 3000, weight: 80 },
        { name: 'other', namespace: 'apps', port: 3000, weight: 20 },
      ],
      [],
      'RefNotPermitted',
      /a ReferenceGrant in apps must allow TCPRoutes from infra/,
    ],
    [
      'a kind that is not a Service',
      [
        { name: 'v1', port: 3000, weight: 80 },
        { group: 'example.com', kind: 'Bucket', name: 'b', port: 3000, weight: 20 },
      ],
      [],
      'InvalidKind',
      /example.com\/Bucket infra\/b: canary-l4 routes to Services only/,
    ],
  ];
  for (const [what, backendRefs, grants, reason, message] of cases) {
    it(`${what}: ResolvedRefs=False ${reason}, its 20 refused, the 80 served`, () => {
      const plan = planGateway(
        world({ grants, routes: [route('TCPRoute', 'r', [{ name: 'l4', sectionName: 'tcp' }], backendRefs ?? [])] }),
      );
      const [parent] = parentsOf(plan, 'TCPRoute/infra/r');
      const resolved = parent?.conditions.find((c) => c.type === 'ResolvedRefs');
      assert.equal(`${resolved?.status} ${resolved?.reason}`, `False ${reason}`);
      assert.match(resolved?.message ?? '', message);
      assert.match(resolved?.message ?? '', /its share of the traffic is refused/);
      assert.equal(conditions(parent?.conditions).Accepted, 'True Accepted', 'still attached');
      const backends = plan.config.listeners[0]?.backends ?? [];
      assert.deepEqual(
        backends.map((b) => [b.weight, b.refuse === true]),
        [
          [80, false],
          [20, true],
        ],
      );
    });
  }

  it('a ReferenceGrant in the Service’s namespace lets the route reach it', () => {
    const grant: ReferenceGrant = {
      metadata: { name: 'g', namespace: 'apps' },
      spec: {
        from: [{ group: 'gateway.networking.k8s.io', kind: 'TCPRoute', namespace: 'infra' }],
        to: [{ group: '', kind: 'Service' }],
      },
    };
    const refs = [{ name: 'other', namespace: 'apps', port: 3000 }];
    const plan = planGateway(
      world({ grants: [grant], routes: [route('TCPRoute', 'r', [{ name: 'l4', sectionName: 'tcp' }], refs)] }),
    );
    assert.deepEqual(plan.config.listeners[0]?.backends, [
      { name: 'other.apps.3000', host: '10.96.0.3', port: 3000, weight: 1 },
    ]);
    const grantForUdp = { ...grant, spec: { ...grant.spec, from: [{ ...grant.spec.from[0]!, kind: 'UDPRoute' }] } };
    const refused = planGateway(
      world({ grants: [grantForUdp], routes: [route('TCPRoute', 'r', [{ name: 'l4', sectionName: 'tcp' }], refs)] }),
    );
    assert.equal(
      refused.config.listeners[0]?.backends[0]?.refuse,
      true,
      'a grant for UDPRoutes does not cover a TCPRoute',
    );
  });

  it('Gateway API weights are kept exact, whatever their scale (0–1 000 000)', () => {
    const refs = [
      { name: 'v1', port: 3000, weight: 700_000 },
      { name: 'v2', port: 3000, weight: 300_000 },
      { name: 'v1', port: 3000, weight: 1 },
    ];
    const plan = planGateway(world({ routes: [route('TCPRoute', 'r', [{ name: 'l4', sectionName: 'tcp' }], refs)] }));
    assert.deepEqual(
      plan.config.listeners[0]?.backends.map((b) => b.weight),
      [700_001, 300_000],
      'a Service listed twice adds up',
    );
  });
});

describe('attachment', () => {
  it('a listener of another protocol: refused by name, the route NotAllowedByListeners; a Gateway with no other is not Accepted', () => {
    const gw = gateway([{ name: 'web', protocol: 'HTTP', port: 80 }]);
    const plan = planGateway(
      world({ gateway: gw, routes: [route('TCPRoute', 'r', [{ name: 'l4', sectionName: 'web' }], EIGHTY_TWENTY)] }),
    );
    assert.deepEqual(plan.config.listeners, []);
    assert.equal(
      conditions(parentsOf(plan, 'TCPRoute/infra/r')[0]?.conditions).Accepted,
      'False NotAllowedByListeners',
    );
    // As Gateway API's conformance test GatewayListenerUnsupportedProtocol has it: no accepted listener, no accepted Gateway.
    assert.deepEqual(conditions(plan.status.conditions), {
      Accepted: 'False ListenersNotValid',
      Programmed: 'False Invalid',
    });
    const [web] = plan.status.listeners ?? [];
    assert.deepEqual(
      [web?.attachedRoutes, web?.supportedKinds, conditions(web?.conditions).Accepted],
      [0, [], 'False UnsupportedProtocol'],
    );
    assert.match(web?.conditions[0]?.message ?? '', /protocol HTTP is not served by canary-l4.*use TCP or UDP/);
    const mixed = planGateway(
      world({
        gateway: gateway([
          { name: 'web', protocol: 'HTTP', port: 80 },
          { name: 'tcp', protocol: 'TCP', port: 9300 },
        ]),
      }),
    );
    assert.deepEqual(conditions(mixed.status.conditions), {
      Accepted: 'True ListenersNotValid',
      Programmed: 'True Programmed',
    });
  });

  it('a sectionName or a port no listener has: NoMatchingParent', () => {
    for (const ref of [
      { name: 'l4', sectionName: 'nope' },
      { name: 'l4', port: 1234 },
    ]) {
      const plan = planGateway(world({ routes: [route('TCPRoute', 'r', [ref], EIGHTY_TWENTY)] }));
      assert.equal(conditions(parentsOf(plan, 'TCPRoute/infra/r')[0]?.conditions).Accepted, 'False NoMatchingParent');
    }
  });

  it('no sectionName: every listener of the route’s kind; a port: the listeners on it', () => {
    const gw = gateway([
      { name: 'one', protocol: 'TCP', port: 9001 },
      { name: 'two', protocol: 'TCP', port: 9002 },
      { name: 'dns', protocol: 'UDP', port: 9003 },
    ]);
    const all = planGateway(world({ gateway: gw, routes: [route('TCPRoute', 'r', [{ name: 'l4' }], EIGHTY_TWENTY)] }));
    assert.deepEqual(
      all.config.listeners.map((l) => l.name),
      ['one', 'two'],
    );
    assert.deepEqual(
      all.status.listeners?.map((l) => l.attachedRoutes),
      [1, 1, 0],
    );
    const byPort = planGateway(
      world({ gateway: gw, routes: [route('TCPRoute', 'r', [{ name: 'l4', port: 9002 }], EIGHTY_TWENTY)] }),
    );
    assert.deepEqual(
      byPort.config.listeners.map((l) => l.name),
      ['two'],
    );
  });

  it('two routes on one listener: both Accepted, 2 attached, the oldest carries the traffic', () => {
    const older = route('TCPRoute', 'older', [{ name: 'l4', sectionName: 'tcp' }], [{ name: 'v1', port: 3000 }], {
      creationTimestamp: '2026-12-01T00:00:00Z',
    });
    const newer = route('TCPRoute', 'a-newer', [{ name: 'l4', sectionName: 'tcp' }], [{ name: 'v2', port: 3000 }], {
      creationTimestamp: '2026-12-01T00:00:01Z',
    });
    const plan = planGateway(world({ routes: [newer, older] }));
    assert.deepEqual(
      plan.config.listeners[0]?.backends.map((b) => b.name),
      ['v1.infra.3000'],
    );
    assert.equal(plan.status.listeners?.[0]?.attachedRoutes, 2);
    for (const key of ['TCPRoute/infra/older', 'TCPRoute/infra/a-newer'])
      assert.equal(conditions(parentsOf(plan, key)[0]?.conditions).Accepted, 'True Accepted');
  });

  it('allowedRoutes: Same refuses a route of another namespace; Selector admits by the namespace’s labels; All admits any', () => {
    const foreign = route(
      'TCPRoute',
      'r',
      [{ name: 'l4', namespace: 'infra', sectionName: 'tcp' }],
      [{ name: 'other', port: 3000 }],
      { namespace: 'apps' },
    );
    const withFrom = (
      namespaces: NonNullable<NonNullable<Gateway['spec']['listeners'][number]['allowedRoutes']>['namespaces']>,
    ) =>
      planGateway(
        world({
          gateway: gateway([{ name: 'tcp', protocol: 'TCP', port: 9300, allowedRoutes: { namespaces } }]),
          routes: [foreign],
        }),
      );
    const accepted = (plan: ReturnType<typeof planGateway>) =>
      conditions(parentsOf(plan, 'TCPRoute/apps/r')[0]?.conditions).Accepted;
    assert.equal(accepted(withFrom({ from: 'Same' })), 'False NotAllowedByListeners');
    assert.equal(accepted(withFrom({ from: 'All' })), 'True Accepted');
    assert.equal(
      accepted(withFrom({ from: 'Selector', selector: { matchLabels: { team: 'apps' } } })),
      'True Accepted',
    );
    assert.equal(
      accepted(
        withFrom({
          from: 'Selector',
          selector: { matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['apps'] }] },
        }),
      ),
      'False NotAllowedByListeners',
    );
  });

  it('a UDPRoute on a TCP listener, and allowedRoutes.kinds with a kind it cannot serve', () => {
    const udpOnTcp = planGateway(
      world({ routes: [route('UDPRoute', 'u', [{ name: 'l4', sectionName: 'tcp' }], EIGHTY_TWENTY)] }),
    );
    assert.equal(
      conditions(parentsOf(udpOnTcp, 'UDPRoute/infra/u')[0]?.conditions).Accepted,
      'False NotAllowedByListeners',
    );
    const kinds = planGateway(
      world({
        gateway: gateway([
          {
            name: 'tcp',
            protocol: 'TCP',
            port: 9300,
            allowedRoutes: { kinds: [{ kind: 'TCPRoute' }, { kind: 'HTTPRoute' }] },
          },
        ]),
      }),
    );
    const [tcp] = kinds.status.listeners ?? [];
    assert.deepEqual(
      [tcp?.supportedKinds.map((k) => k.kind), conditions(tcp?.conditions).ResolvedRefs],
      [['TCPRoute'], 'False InvalidRouteKinds'],
    );
  });
});

describe('listeners that cannot be served', () => {
  it('two TCP listeners on one port: the second Conflicted, not Accepted; the admin port and an unbindable port: PortUnavailable', () => {
    const gw = gateway([
      { name: 'a', protocol: 'TCP', port: 9300 },
      { name: 'b', protocol: 'TCP', port: 9300 },
      { name: 'c', protocol: 'UDP', port: 9300 },
      { name: 'admin', protocol: 'TCP', port: 9090 },
      { name: 'taken', protocol: 'TCP', port: 9400 },
    ]);
    const plan = planGateway(
      world({
        gateway: gw,
        routes: [route('TCPRoute', 'r', [{ name: 'l4' }], EIGHTY_TWENTY)],
        unbindable: new Map([['taken', 'port cannot be bound here: EADDRINUSE']]),
      }),
    );
    assert.deepEqual(
      plan.status.listeners?.map((l) => [
        l.name,
        conditions(l.conditions).Accepted,
        conditions(l.conditions).Conflicted,
        l.attachedRoutes,
      ]),
      [
        ['a', 'True Accepted', 'False NoConflicts', 1],
        ['b', 'False PortUnavailable', 'True HostnameConflict', 0],
        ['c', 'True Accepted', 'False NoConflicts', 0],
        ['admin', 'False PortUnavailable', 'False NoConflicts', 0],
        ['taken', 'False PortUnavailable', 'False NoConflicts', 0],
      ],
    );
    assert.deepEqual(
      plan.config.listeners.map((l) => l.name),
      ['a'],
    );
    assert.match(plan.status.listeners?.[3]?.conditions[0]?.message ?? '', /admin port/);
  });
});

describe('the Gateway’s own conditions', () => {
  it('no address yet: Programmed=False AddressNotAssigned; an address it cannot serve: AddressNotUsable; a type it has none of: UnsupportedAddress', () => {
    assert.equal(
      conditions(planGateway(world({ addresses: [] })).status.conditions).Programmed,
      'False AddressNotAssigned',
    );
    const asked = gateway(TCP_AND_UDP.spec.listeners, { addresses: [{ type: 'IPAddress', value: '10.0.0.9' }] });
    assert.equal(
      conditions(planGateway(world({ gateway: asked })).status.conditions).Programmed,
      'False AddressNotUsable',
    );
    const named = gateway(TCP_AND_UDP.spec.listeners, { addresses: [{ type: 'example.com/Pool', value: 'p' }] });
    assert.equal(
      conditions(planGateway(world({ gateway: named })).status.conditions).Accepted,
      'False UnsupportedAddress',
    );
  });
});

describe('status entries over time', () => {
  it('an unchanged verdict keeps its lastTransitionTime; a changed one takes now', () => {
    const routes = [route('TCPRoute', 'r', [{ name: 'l4', sectionName: 'tcp' }], EIGHTY_TWENTY)];
    const first = planGateway(world({ routes }));
    const seen = { ...TCP_AND_UDP, status: first.status };
    const again = planGateway(world({ gateway: seen, routes, now: LATER }));
    assert.deepEqual(again.status, first.status, 'the same status: nothing to write');
    const lost = planGateway(world({ gateway: seen, routes, addresses: [], now: LATER }));
    const times = Object.fromEntries((lost.status.conditions ?? []).map((c) => [c.type, c.lastTransitionTime]));
    assert.deepEqual(times, { Accepted: NOW, Programmed: LATER });
  });

  it('a route that no longer names this Gateway loses its entry for it; other controllers’ and other Gateways’ entries stay', () => {
    const foreignEntry = {
      parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'infra', name: 'l4' },
      controllerName: 'example.com/other',
      conditions: [],
    };
    const otherGateway = {
      ...foreignEntry,
      parentRef: { ...foreignEntry.parentRef, name: 'elsewhere' },
      controllerName: 'canary-l4.io/gateway-controller',
    };
    const ourOld = { ...foreignEntry, controllerName: 'canary-l4.io/gateway-controller' };
    const moved: L4Route = {
      ...route('TCPRoute', 'r', [{ name: 'elsewhere' }], EIGHTY_TWENTY),
      status: { parents: [foreignEntry, otherGateway, ourOld] },
    };
    const plan = planGateway(world({ routes: [moved] }));
    assert.deepEqual(parentsOf(plan, 'TCPRoute/infra/r'), [foreignEntry, otherGateway]);
  });

  it('routes of other Gateways are not touched', () => {
    const plan = planGateway(world({ routes: [route('TCPRoute', 'r', [{ name: 'elsewhere' }], EIGHTY_TWENTY)] }));
    assert.equal(plan.routes.size, 0);
  });
});

describe('a Gateway that is gone', () => {
  it('its entries leave the routes that named it; other entries stay; routes without one are not written', () => {
    const ours = {
      parentRef: { group: 'gateway.networking.k8s.io', kind: 'Gateway', namespace: 'infra', name: 'l4' },
      controllerName: 'canary-l4.io/gateway-controller',
      conditions: [],
    };
    const theirs = { ...ours, controllerName: 'example.com/other' };
    const named: L4Route = {
      ...route('TCPRoute', 'r', [{ name: 'l4' }], EIGHTY_TWENTY),
      status: { parents: [ours, theirs] },
    };
    const untouched: L4Route = {
      ...route('UDPRoute', 'u', [{ name: 'l4' }], EIGHTY_TWENTY),
      status: { parents: [theirs] },
    };
    const plans = forgetGateway([named, untouched], 'infra', 'l4');
    assert.deepEqual([...plans.keys()], ['TCPRoute/infra/r']);
    assert.deepEqual(plans.get('TCPRoute/infra/r')?.parents, [theirs]);
  });
});
