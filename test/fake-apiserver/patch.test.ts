import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonPatch, mergePatch, PatchError, strategicMergePatch } from '../support/fake-apiserver/resources/patch.ts';
import { builtinTypes } from '../support/fake-apiserver/resources/registry.ts';

const serviceMeta = builtinTypes().find((t) => t.plural === 'services')!.patchMeta;
const deploymentMeta = builtinTypes().find((t) => t.plural === 'deployments')!.patchMeta;

describe('JSON merge patch (RFC 7386)', () => {
  // The RFC 7386 appendix examples.
  const cases: Array<[unknown, unknown, unknown]> = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
    // kube-apiserver's merge patch (evanphx/json-patch) beyond the RFC, as a real control plane
    // answered it: the objects of a list put in place keep no null keys; null items stay.
    [
      { ports: [] },
      { ports: [{ port: 80, override: null, mirror: { percent: null } }] },
      { ports: [{ port: 80, mirror: {} }] },
    ],
    [{}, { items: [null, { a: null }] }, { items: [null, {}] }],
  ];
  for (const [target, patch, want] of cases) {
    it(`${JSON.stringify(target)} + ${JSON.stringify(patch)}`, () => assert.deepEqual(mergePatch(target, patch), want));
  }
  it('does not mutate its inputs', () => {
    const t = { a: { b: 1 } };
    mergePatch(t, { a: { b: 2 } });
    assert.deepEqual(t, { a: { b: 1 } });
  });
});

describe('JSON patch (RFC 6902)', () => {
  const doc = { spec: { weight: 10, list: ['a', 'b'] }, metadata: { labels: { 'a/b': 'x' } } };
  const cases: Array<[string, unknown[], unknown]> = [
    ['add member', [{ op: 'add', path: '/spec/x', value: 1 }], { ...doc, spec: { ...doc.spec, x: 1 } }],
    [
      'add to end',
      [{ op: 'add', path: '/spec/list/-', value: 'c' }],
      { ...doc, spec: { ...doc.spec, list: ['a', 'b', 'c'] } },
    ],
    [
      'insert',
      [{ op: 'add', path: '/spec/list/0', value: 'z' }],
      { ...doc, spec: { ...doc.spec, list: ['z', 'a', 'b'] } },
    ],
    ['remove', [{ op: 'remove', path: '/spec/weight' }], { ...doc, spec: { list: ['a', 'b'] } }],
    ['replace', [{ op: 'replace', path: '/spec/weight', value: 20 }], { ...doc, spec: { ...doc.spec, weight: 20 } }],
    [
      'escaped key',
      [{ op: 'replace', path: '/metadata/labels/a~1b', value: 'y' }],
      { ...doc, metadata: { labels: { 'a/b': 'y' } } },
    ],
    ['move', [{ op: 'move', from: '/spec/weight', path: '/spec/w' }], { ...doc, spec: { list: ['a', 'b'], w: 10 } }],
    ['copy', [{ op: 'copy', from: '/spec/weight', path: '/spec/w' }], { ...doc, spec: { ...doc.spec, w: 10 } }],
    [
      'test then replace',
      [
        { op: 'test', path: '/spec/weight', value: 10 },
        { op: 'replace', path: '/spec/weight', value: 5 },
      ],
      { ...doc, spec: { ...doc.spec, weight: 5 } },
    ],
  ];
  for (const [name, ops, want] of cases) it(name, () => assert.deepEqual(jsonPatch(doc, ops), want));

  const failures: Array<[string, unknown, 'malformed' | 'failed']> = [
    ['not an array', { spec: {} }, 'malformed'],
    ['unknown op', [{ op: 'frob', path: '/a' }], 'malformed'],
    ['test fails', [{ op: 'test', path: '/spec/weight', value: 11 }], 'failed'],
    ['remove missing', [{ op: 'remove', path: '/spec/nope' }], 'failed'],
    ['replace missing', [{ op: 'replace', path: '/spec/nope', value: 1 }], 'failed'],
    ['missing parent', [{ op: 'add', path: '/nope/x', value: 1 }], 'failed'],
    ['index out of range', [{ op: 'add', path: '/spec/list/5', value: 1 }], 'failed'],
  ];
  for (const [name, ops, kind] of failures) {
    it(`fails: ${name}`, () =>
      assert.throws(
        () => jsonPatch(doc, ops),
        (e: unknown) => e instanceof PatchError && e.kind === kind,
      ));
  }
});

describe('strategic merge patch', () => {
  const service = {
    metadata: { name: 'web', labels: { a: '1' }, finalizers: ['x'], ownerReferences: [{ uid: 'u1', name: 'o1' }] },
    spec: {
      selector: { app: 'web', track: 'stable' },
      ports: [
        { name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' },
        { name: 'metrics', port: 9090, protocol: 'TCP' },
      ],
      externalIPs: ['1.1.1.1'],
    },
  };
  const cases: Array<[string, unknown, (s: any) => void]> = [
    [
      'maps merge, null deletes',
      { metadata: { labels: { b: '2', a: null } } },
      (s) => assert.deepEqual(s.metadata.labels, { b: '2' }),
    ],
    [
      'ports merge by port',
      { spec: { ports: [{ port: 80, targetPort: 8081 }] } },
      (s) => {
        assert.equal(s.spec.ports.length, 2);
        assert.deepEqual(s.spec.ports[0], { name: 'http', port: 80, targetPort: 8081, protocol: 'TCP' });
      },
    ],
    [
      'new port appended',
      { spec: { ports: [{ port: 443 }] } },
      (s) =>
        assert.deepEqual(
          s.spec.ports.map((p: any) => p.port),
          [80, 9090, 443],
        ),
    ],
    [
      '$patch: delete element',
      { spec: { ports: [{ $patch: 'delete', port: 9090 }] } },
      (s) =>
        assert.deepEqual(
          s.spec.ports.map((p: any) => p.port),
          [80],
        ),
    ],
    [
      'kubectl apply body with $setElementOrder',
      {
        spec: {
          '$setElementOrder/ports': [{ port: 8080 }],
          ports: [
            { name: 'http', port: 8080 },
            { $patch: 'delete', port: 80 },
            { $patch: 'delete', port: 9090 },
          ],
        },
      },
      (s) => assert.deepEqual(s.spec.ports, [{ name: 'http', port: 8080 }]),
    ],
    [
      '$setElementOrder reorders',
      { spec: { '$setElementOrder/ports': [{ port: 9090 }, { port: 80 }] } },
      (s) =>
        assert.deepEqual(
          s.spec.ports.map((p: any) => p.port),
          [9090, 80],
        ),
    ],
    [
      'lists without strategy are replaced',
      { spec: { externalIPs: ['2.2.2.2'] } },
      (s) => assert.deepEqual(s.spec.externalIPs, ['2.2.2.2']),
    ],
    [
      'finalizers merge as a set',
      { metadata: { finalizers: ['y', 'x'] } },
      (s) => assert.deepEqual(s.metadata.finalizers, ['x', 'y']),
    ],
    [
      '$deleteFromPrimitiveList',
      { metadata: { '$deleteFromPrimitiveList/finalizers': ['x'] } },
      (s) => assert.deepEqual(s.metadata.finalizers, []),
    ],
    [
      'ownerReferences merge by uid',
      { metadata: { ownerReferences: [{ uid: 'u2', name: 'o2' }] } },
      (s) =>
        assert.deepEqual(
          s.metadata.ownerReferences.map((r: any) => r.uid),
          ['u1', 'u2'],
        ),
    ],
    [
      '$patch: replace on a map',
      { spec: { selector: { $patch: 'replace', app: 'x' } } },
      (s) => assert.deepEqual(s.spec.selector, { app: 'x' }),
    ],
    [
      '$patch: replace in a list',
      { spec: { ports: [{ $patch: 'replace' }, { port: 1 }] } },
      (s) => assert.deepEqual(s.spec.ports, [{ port: 1 }]),
    ],
    [
      '$patch: delete on a map',
      { spec: { selector: { $patch: 'delete' } } },
      (s) => assert.equal(s.spec.selector, undefined),
    ],
  ];
  for (const [name, patch, check] of cases) it(name, () => check(strategicMergePatch(service, patch, serviceMeta)));

  it('merges containers by name and env by name in a Deployment', () => {
    const dep = {
      spec: {
        template: {
          spec: {
            containers: [
              { name: 'app', image: 'a:1', env: [{ name: 'A', value: '1' }] },
              { name: 'side', image: 's:1' },
            ],
          },
        },
      },
    };
    const out: any = strategicMergePatch(
      dep,
      {
        spec: { template: { spec: { containers: [{ name: 'app', image: 'a:2', env: [{ name: 'B', value: '2' }] }] } } },
      },
      deploymentMeta,
    );
    assert.deepEqual(out.spec.template.spec.containers, [
      {
        name: 'app',
        image: 'a:2',
        env: [
          { name: 'A', value: '1' },
          { name: 'B', value: '2' },
        ],
      },
      { name: 'side', image: 's:1' },
    ]);
  });
  it('rejects an element without the merge key', () => {
    assert.throws(() => strategicMergePatch(service, { spec: { ports: [{ name: 'x' }] } }, serviceMeta), PatchError);
  });
  it('does not mutate its inputs', () => {
    const copy = JSON.parse(JSON.stringify(service));
    strategicMergePatch(service, { spec: { ports: [{ port: 80, name: 'z' }] } }, serviceMeta);
    assert.deepEqual(service, copy);
  });
});
