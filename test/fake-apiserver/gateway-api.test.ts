// Gateway API v1.6.3 (its standard channel, from the Go module cache) as a user installs and uses it
// with kubectl, and as canary-l4's gateway reads and writes it with client-node: the CRDs applied
// server-side, a GatewayClass, a Gateway with a TCP and a UDP listener, a TCPRoute and a UDPRoute
// splitting 80/20, read back at v1 (and v1beta1) with the schema's defaults, printed by kubectl
// with the CRDs' columns, a route change seen by a watch, and status written each way a controller
// writes it. The same file runs against the fake and (CANARY_TEST_API=real) a real control plane.

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CustomObjectsApi, Watch } from '@kubernetes/client-node';
import { GATEWAY_CONTROLLER_NAME, GATEWAY_GROUP } from '../../src/api/gateway/names.ts';
import type { Gateway, GatewayClass, L4Route } from '../../src/api/gateway/types.ts';
import { jsonPatch, mergePatch, serverSideApply } from '../../src/kube/patch.ts';
import { apiError, kubectlFor, type Kubectl } from '../support/cluster/api-fixtures.ts';
import { REAL_API, startApiUnderTest, suiteTimeout, type ApiUnderTest } from '../support/cluster/api-under-test.ts';
import { GATEWAY_API_VERSION, gatewayApiCrdFiles, installGatewayApi } from '../support/gateway-api/crds.ts';
import { requireTool } from '../support/process/required-tool.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { waitFor } from '../support/wait.ts';

const addresses = loopbackRange(import.meta.url);

const kubectlPresent = await requireTool('kubectl');
const NS = 'default';
const V1 = 'v1';
const CLASS = 'canary-l4';
const TRANSITION = '2026-12-03T10:00:00Z';
const SAFE_UPGRADES = 'safe-upgrades.gateway.networking.k8s.io';

const gatewayClass = {
  apiVersion: `${GATEWAY_GROUP}/v1`,
  kind: 'GatewayClass',
  metadata: { name: CLASS },
  spec: { controllerName: GATEWAY_CONTROLLER_NAME },
};
const gateway = {
  apiVersion: `${GATEWAY_GROUP}/v1`,
  kind: 'Gateway',
  metadata: { name: 'edge', namespace: NS },
  spec: {
    gatewayClassName: CLASS,
    listeners: [
      { name: 'db', protocol: 'TCP', port: 5432 },
      { name: 'dns', protocol: 'UDP', port: 5353 },
    ],
  },
};
/** A route to `edge`'s listener `section`: stable 80, canary 20 (the TCPRoute leaves canary's weight to the default, 1). */
const route = (kind: 'TCPRoute' | 'UDPRoute', name: string, section: string, port: number, canaryWeight?: number) => ({
  apiVersion: `${GATEWAY_GROUP}/v1`,
  kind,
  metadata: { name, namespace: NS },
  spec: {
    parentRefs: [{ name: 'edge', sectionName: section }],
    rules: [
      {
        backendRefs: [
          { name: 'stable', port, weight: 80 },
          { name: 'canary', port, ...(canaryWeight === undefined ? {} : { weight: canaryWeight }) },
        ],
      },
    ],
  },
});
const referenceGrant = {
  apiVersion: `${GATEWAY_GROUP}/v1`,
  kind: 'ReferenceGrant',
  metadata: { name: 'routes-to-default', namespace: NS },
  spec: {
    from: [{ group: GATEWAY_GROUP, kind: 'TCPRoute', namespace: 'apps' }],
    to: [{ group: '', kind: 'Service' }],
  },
};
const condition = (type: string, status: string, reason: string, observedGeneration: number) => ({
  type,
  status,
  reason,
  message: `${type} ${status}`,
  observedGeneration,
  lastTransitionTime: TRANSITION,
});
/** What a Gateway or GatewayClass reads as before any controller writes its status: the schema's default. */
const waiting = (type: string) => ({
  type,
  status: 'Unknown',
  reason: 'Pending',
  message: 'Waiting for controller',
  lastTransitionTime: '1970-01-01T00:00:00Z',
});

/** The rows of a kubectl table, split on runs of spaces (header first). */
const rows = (table: string) =>
  table
    .trim()
    .split('\n')
    .map((line) => line.trim().split(/\s{2,}/));

describe(`Gateway API ${GATEWAY_API_VERSION} through kubectl and client-node`, {
  ...kubectlPresent,
  timeout: suiteTimeout(180_000),
}, () => {
  let api: ApiUnderTest;
  let kubectl: Kubectl;
  let custom: CustomObjectsApi;
  const get = <T>(plural: string, name: string, version = V1) =>
    custom.getNamespacedCustomObject({ group: GATEWAY_GROUP, version, namespace: NS, plural, name }) as Promise<T>;

  /** The group version's resources by name (empty when it is not served at all). */
  const served = async (version: string) => {
    const found = await kubectl('get', '--raw', `/apis/${GATEWAY_GROUP}/${version}`).catch(() => '{"resources":[]}');
    return new Map<string, { namespaced: boolean }>(JSON.parse(found).resources.map((r: any) => [r.name, r]));
  };

  before(async () => {
    api = await startApiUnderTest(addresses.cidr);
    kubectl = await kubectlFor(api);
    custom = api.kubeConfig.makeApiClient(CustomObjectsApi);
  });
  after(async () => {
    await kubectl?.cleanup();
    await api?.stop();
  });

  it('kubectl apply --server-side installs the standard channel: the CRDs served at v1 (and v1beta1), with status subresources', async () => {
    const files = await gatewayApiCrdFiles('standard');
    assert.ok(files.some((file) => file.endsWith('/gateway.networking.k8s.io_tcproutes.yaml')));
    const crds = await installGatewayApi(api.kubeconfigPath);
    for (const plural of ['gatewayclasses', 'gateways', 'tcproutes', 'udproutes', 'referencegrants'])
      assert.ok(crds.includes(`${plural}.${GATEWAY_GROUP}`), `${plural} among ${crds.join(', ')}`);

    const v1 = await served('v1');
    assert.equal(v1.get('gatewayclasses')?.namespaced, false);
    for (const plural of ['gateways', 'tcproutes', 'udproutes', 'referencegrants']) {
      assert.equal(v1.get(plural)?.namespaced, true, plural);
      if (plural !== 'referencegrants') assert.ok(v1.has(`${plural}/status`), `${plural}/status`);
    }
    assert.ok(v1.has('gatewayclasses/status'));
    const v1beta1 = await served('v1beta1');
    for (const plural of ['gatewayclasses', 'gateways', 'referencegrants']) assert.ok(v1beta1.has(plural), plural);
    assert.ok(!v1beta1.has('tcproutes'), 'TCPRoute has no v1beta1');
    assert.ok(!(await served('v1alpha2')).has('tcproutes'), 'the standard channel serves no v1alpha2 TCPRoute');
    // Why server-side: a client-side apply copies the whole CRD into its last-applied annotation,
    // past 256 KiB for the experimental HTTPRoute (the standard one is 237 KiB of JSON, just within).
    const httpRoutes = (await gatewayApiCrdFiles('experimental')).find((file) =>
      file.endsWith('/gateway.networking.k8s.io_httproutes.yaml'),
    );
    assert.ok(httpRoutes);
    const clientSide = await kubectl.run('apply', '-f', httpRoutes).then(
      () => 'applied',
      (err: { stderr: string }) => err.stderr,
    );
    assert.match(clientSide, /metadata\.annotations: Too long: may not be more than 262144 bytes/);
    // The safe-upgrades policy came with them (the real API enforces it; the fake stores it).
    assert.match(
      await kubectl('get', 'validatingadmissionpolicies', '-o', 'name'),
      /safe-upgrades\.gateway\.networking\.k8s\.io/,
    );
  });

  it('a GatewayClass, a Gateway, a TCPRoute, a UDPRoute and a ReferenceGrant applied with kubectl read back at v1 with the schema defaults', async () => {
    const manifest = await kubectl.manifest(
      'gateway.yaml',
      gatewayClass,
      gateway,
      route('TCPRoute', 'db', 'db', 5432),
      route('UDPRoute', 'dns', 'dns', 53, 20),
      referenceGrant,
    );
    await kubectl('apply', '-f', manifest);

    const cls = (await custom.getClusterCustomObject({
      group: GATEWAY_GROUP,
      version: V1,
      plural: 'gatewayclasses',
      name: CLASS,
    })) as GatewayClass;
    assert.equal(cls.spec.controllerName, GATEWAY_CONTROLLER_NAME);
    assert.deepEqual(cls.status, { conditions: [waiting('Accepted')] });

    const gw = await get<Gateway>('gateways', 'edge');
    assert.equal(gw.apiVersion, `${GATEWAY_GROUP}/v1`);
    assert.deepEqual(
      gw.spec.listeners.map((listener) => listener.allowedRoutes),
      [{ namespaces: { from: 'Same' } }, { namespaces: { from: 'Same' } }],
    );
    assert.deepEqual(gw.status, { conditions: [waiting('Accepted'), waiting('Programmed')] });

    const tcp = await get<L4Route>('tcproutes', 'db');
    assert.deepEqual(tcp.spec.parentRefs, [{ group: GATEWAY_GROUP, kind: 'Gateway', name: 'edge', sectionName: 'db' }]);
    assert.deepEqual(tcp.spec.rules[0]!.backendRefs, [
      { group: '', kind: 'Service', name: 'stable', port: 5432, weight: 80 },
      { group: '', kind: 'Service', name: 'canary', port: 5432, weight: 1 },
    ]);
    assert.equal(tcp.status, undefined, 'a route has no status until a controller writes one');
    assert.equal(
      await kubectl('get', 'tcproute', 'db', '-n', NS, '-o', 'jsonpath={.spec.rules[0].backendRefs[*].weight}'),
      '80 1',
    );
    const udp = await get<L4Route>('udproutes', 'dns');
    assert.deepEqual(
      udp.spec.rules[0]!.backendRefs!.map((ref) => ref.weight),
      [80, 20],
    );

    // Served at v1beta1 too, the same object.
    const beta = await get<Gateway>('gateways', 'edge', 'v1beta1');
    assert.equal(beta.apiVersion, `${GATEWAY_GROUP}/v1beta1`);
    assert.equal(beta.metadata.uid, gw.metadata.uid);
    const grant = (await get<any>('referencegrants', 'routes-to-default')) as any;
    assert.deepEqual(grant.spec.to, [{ group: '', kind: 'Service' }]);
  });

  it('kubectl get prints the CRDs’ columns', async () => {
    const classes = rows(await kubectl('get', 'gatewayclasses'));
    assert.deepEqual(classes[0], ['NAME', 'CONTROLLER', 'ACCEPTED', 'AGE']);
    assert.deepEqual(classes[1]!.slice(0, 3), [CLASS, GATEWAY_CONTROLLER_NAME, 'Unknown']);
    const gateways = rows(await kubectl('get', 'gateways', '-n', NS));
    assert.deepEqual(gateways[0], ['NAME', 'CLASS', 'ADDRESS', 'PROGRAMMED', 'AGE']);
    // No address yet: kubectl leaves the cell blank, so the row has one cell fewer.
    assert.deepEqual(gateways[1]!.slice(0, 3), ['edge', CLASS, 'Unknown']);
    const routes = rows(await kubectl('get', 'tcproutes,udproutes', '-n', NS));
    // Two tables, NAME and AGE alone (the routes' only column), a blank line between them.
    assert.deepEqual(
      routes.map((row) => row[0]),
      ['NAME', `tcproute.${GATEWAY_GROUP}/db`, '', 'NAME', `udproute.${GATEWAY_GROUP}/dns`],
    );
    assert.deepEqual(routes[0], ['NAME', 'AGE']);
  });

  it('a watch from the list sees a route’s new weights, applied with kubectl', async () => {
    const list = (await custom.listNamespacedCustomObject({
      group: GATEWAY_GROUP,
      version: V1,
      namespace: NS,
      plural: 'tcproutes',
    })) as { metadata: { resourceVersion: string } };
    const seen: { type: string; weights: number[] }[] = [];
    const watching = await new Watch(api.kubeConfig).watch(
      `/apis/${GATEWAY_GROUP}/v1/namespaces/${NS}/tcproutes`,
      { resourceVersion: list.metadata.resourceVersion },
      (type, object: L4Route) =>
        seen.push({ type, weights: object.spec.rules[0]!.backendRefs!.map((ref) => ref.weight ?? 0) }),
      () => undefined,
    );
    try {
      await kubectl('apply', '-f', await kubectl.manifest('db.yaml', route('TCPRoute', 'db', 'db', 5432, 50)));
      const modified = await waitFor(
        () => seen.find((event) => event.type === 'MODIFIED'),
        'the MODIFIED event',
        10_000,
      );
      assert.deepEqual(modified?.weights, [80, 50]);
      assert.equal((await get<L4Route>('tcproutes', 'db')).metadata.generation, 2);
    } finally {
      watching.abort();
    }
  });

  it('status written by merge patch, JSON patch, server-side apply and PUT reads back, and leaves spec and generation alone', async () => {
    // Gateway: a merge patch, as the gateway writes it; addresses[].type defaults to IPAddress.
    const gw = await get<Gateway>('gateways', 'edge');
    const listener = (name: string, kind: string) => ({
      name,
      supportedKinds: [{ group: GATEWAY_GROUP, kind }],
      attachedRoutes: 1,
      conditions: [condition('Programmed', 'True', 'Programmed', gw.metadata.generation!)],
    });
    await custom.patchNamespacedCustomObjectStatus(
      {
        group: GATEWAY_GROUP,
        version: V1,
        namespace: NS,
        plural: 'gateways',
        name: 'edge',
        body: {
          status: {
            addresses: [{ value: addresses.ip(10) }],
            conditions: [
              condition('Accepted', 'True', 'Accepted', 1),
              condition('Programmed', 'True', 'Programmed', 1),
            ],
            listeners: [listener('db', 'TCPRoute'), listener('dns', 'UDPRoute')],
          },
        },
      },
      mergePatch(),
    );
    const written = await get<Gateway>('gateways', 'edge');
    assert.deepEqual(written.status?.addresses, [{ type: 'IPAddress', value: addresses.ip(10) }]);
    assert.deepEqual(
      written.status?.conditions?.map((c) => [c.type, c.status]),
      [
        ['Accepted', 'True'],
        ['Programmed', 'True'],
      ],
    );
    assert.deepEqual(
      written.status?.listeners?.map((l) => [l.name, l.attachedRoutes]),
      [
        ['db', 1],
        ['dns', 1],
      ],
    );
    assert.deepEqual(written.spec, gw.spec);
    assert.equal(written.metadata.generation, gw.metadata.generation);

    // TCPRoute: server-side apply of its parent status, with the gateway's field manager.
    const parent = (section: string, generation: number) => ({
      parentRef: { group: GATEWAY_GROUP, kind: 'Gateway', name: 'edge', sectionName: section },
      controllerName: GATEWAY_CONTROLLER_NAME,
      conditions: [
        condition('Accepted', 'True', 'Accepted', generation),
        condition('ResolvedRefs', 'True', 'ResolvedRefs', generation),
      ],
    });
    await custom.patchNamespacedCustomObjectStatus(
      {
        group: GATEWAY_GROUP,
        version: V1,
        namespace: NS,
        plural: 'tcproutes',
        name: 'db',
        fieldManager: 'canary-l4-gateway',
        force: true,
        body: {
          apiVersion: `${GATEWAY_GROUP}/v1`,
          kind: 'TCPRoute',
          metadata: { name: 'db', namespace: NS },
          status: { parents: [parent('db', 2)] },
        },
      },
      serverSideApply(),
    );
    const tcp = await get<L4Route>('tcproutes', 'db');
    assert.deepEqual(tcp.status, { parents: [parent('db', 2)] });
    assert.equal(tcp.metadata.generation, 2);
    assert.deepEqual(
      tcp.spec.rules[0]!.backendRefs!.map((ref) => ref.weight),
      [80, 50],
    );

    // UDPRoute: a JSON patch guarded by a test of the resourceVersion.
    const udp = await get<L4Route>('udproutes', 'dns');
    await custom.patchNamespacedCustomObjectStatus(
      {
        group: GATEWAY_GROUP,
        version: V1,
        namespace: NS,
        plural: 'udproutes',
        name: 'dns',
        body: [
          { op: 'test', path: '/metadata/resourceVersion', value: udp.metadata.resourceVersion },
          { op: 'add', path: '/status', value: { parents: [parent('dns', 1)] } },
        ],
      },
      jsonPatch(),
    );
    assert.deepEqual((await get<L4Route>('udproutes', 'dns')).status, { parents: [parent('dns', 1)] });

    // GatewayClass: a PUT of its status, as the manager may write Accepted.
    const cls = (await custom.getClusterCustomObject({
      group: GATEWAY_GROUP,
      version: V1,
      plural: 'gatewayclasses',
      name: CLASS,
    })) as GatewayClass;
    await custom.replaceClusterCustomObjectStatus({
      group: GATEWAY_GROUP,
      version: V1,
      plural: 'gatewayclasses',
      name: CLASS,
      body: { ...cls, status: { conditions: [condition('Accepted', 'True', 'Accepted', 1)] } },
    });

    const classes = rows(await kubectl('get', 'gatewayclasses'));
    assert.deepEqual(classes[1]!.slice(0, 3), [CLASS, GATEWAY_CONTROLLER_NAME, 'True']);
    const gateways = rows(await kubectl('get', 'gateways', '-n', NS));
    assert.deepEqual(gateways[1]!.slice(0, 4), ['edge', CLASS, addresses.ip(10), 'True']);
  });

  it('the schema refuses what it can say without CEL: a negative weight, a port out of range', async () => {
    const bad = route('TCPRoute', 'bad', 'db', 5432, -1);
    const refused = await apiError(
      custom.createNamespacedCustomObject({
        group: GATEWAY_GROUP,
        version: V1,
        namespace: NS,
        plural: 'tcproutes',
        body: bad,
      }),
    );
    assert.equal(refused.code, 422);
    assert.match(refused.body.message, /spec\.rules\[0\]\.backendRefs\[1\]\.weight/);
    const port = await kubectl
      .run(
        'apply',
        '-f',
        await kubectl.manifest('bad-gw.yaml', {
          ...gateway,
          metadata: { name: 'bad', namespace: NS },
          spec: { ...gateway.spec, listeners: [{ name: 'x', protocol: 'TCP', port: 70000 }] },
        }),
      )
      .then(
        () => '',
        (err: { stderr: string }) => err.stderr,
      );
    assert.match(port, /spec\.listeners\[0\]\.port/);
  });

  it('CEL rules: the real apiserver refuses a TCP listener with a hostname; the fake admits it (its README)', async () => {
    const body = {
      ...gateway,
      metadata: { name: 'hostname', namespace: NS },
      spec: { ...gateway.spec, listeners: [{ name: 'x', protocol: 'TCP', port: 7000, hostname: 'a.example' }] },
    };
    const created = custom.createNamespacedCustomObject({
      group: GATEWAY_GROUP,
      version: V1,
      namespace: NS,
      plural: 'gateways',
      body,
    });
    if (!REAL_API) {
      await created;
      return;
    }
    const refused = await apiError(created);
    assert.equal(refused.code, 422);
    assert.match(refused.body.message, /hostname must not be specified for protocols/);
  });

  it('the experimental channel over the standard one: refused by the safe-upgrades policy on a real API; without it, the routes are served at v1alpha2 too', async () => {
    if (REAL_API)
      await assert.rejects(
        installGatewayApi(api.kubeconfigPath, 'experimental'),
        /Installing experimental CRDs on top of standard channel CRDs is prohibited/,
      );
    // A real API drops a deleted policy from its admission a moment later, and a refused install
    // applies the channel's own copy of the policy again (its file comes after the CRDs): so each try
    // deletes it first.
    let refusal = '';
    await waitFor(
      async () => {
        await kubectl(
          'delete',
          '--ignore-not-found',
          'validatingadmissionpolicybinding,validatingadmissionpolicy',
          SAFE_UPGRADES,
        );
        return installGatewayApi(api.kubeconfigPath, 'experimental').then(
          () => true,
          (err: Error) => {
            if (!/safe-upgrades/.test(err.message)) throw err;
            refusal = err.message;
            return false;
          },
        );
      },
      'the experimental channel applied',
      90_000,
    ).catch((err: Error) => {
      throw new Error(`${err.message}; the last refusal: ${refusal}`);
    });
    for (const plural of ['tcproutes', 'udproutes']) assert.ok((await served('v1alpha2')).has(plural), plural);
    const alpha = await get<L4Route>('tcproutes', 'db', 'v1alpha2');
    assert.equal(alpha.apiVersion, `${GATEWAY_GROUP}/v1alpha2`);
    assert.deepEqual(
      alpha.spec.rules[0]!.backendRefs!.map((ref) => ref.weight),
      [80, 50],
    );
  });
});
