// What a merge patch leaves on the API, as kube-apiserver applies it: the proxy compares its
// status with what a write of it would leave, so a wrong model of the server writes forever. A
// real control plane showed the case the first model missed: the objects of a list keep no null
// keys (status.ports[].override: null is stored as absent).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CanaryRelease } from '../../../src/api/release-types.ts';
import type { CanaryReleaseStatus } from '../../../src/api/status-types.ts';
import { statusWritten } from '../../../src/control/pass/context.ts';
import { applyMergePatch } from '../../../src/control/service/patches.ts';

describe('applyMergePatch', () => {
  const cases: { name: string; target: unknown; patch: unknown; expected: unknown }[] = [
    { name: 'a null deletes its key', target: { a: 1, b: 2 }, patch: { a: null }, expected: { b: 2 } },
    {
      name: 'objects merge key by key',
      target: { spec: { a: 1, b: { c: 1 } } },
      patch: { spec: { b: { d: 2 } } },
      expected: { spec: { a: 1, b: { c: 1, d: 2 } } },
    },
    {
      name: 'a list is replaced whole',
      target: { ports: [{ port: 80 }, { port: 81 }] },
      patch: { ports: [{ port: 82 }] },
      expected: { ports: [{ port: 82 }] },
    },
    {
      name: 'the objects of a list keep no null keys, at any depth',
      target: { ports: [] },
      patch: { ports: [{ port: 80, override: null, mirror: { percent: null, compare: 'replies' } }] },
      expected: { ports: [{ port: 80, mirror: { compare: 'replies' } }] },
    },
    { name: 'a null item of a list stays', target: {}, patch: { items: [null, 1] }, expected: { items: [null, 1] } },
    {
      name: 'a list where there was none loses its null keys too',
      target: {},
      patch: { a: { ports: [{ override: null, weight: 10 }] } },
      expected: { a: { ports: [{ weight: 10 }] } },
    },
  ];
  for (const { name, target, patch, expected } of cases) {
    it(name, () => assert.deepEqual(applyMergePatch(target, patch), expected));
  }
});

describe('statusWritten', () => {
  const port = { service: 'web', port: 80, protocol: 'TCP' as const, proxyPort: 8080, weight: 10, served: 10 };
  /** As the API returns it: status.ports without the null override. */
  const release = (status: object): CanaryRelease =>
    ({
      apiVersion: 'canary-l4.io/v1alpha1',
      kind: 'CanaryRelease',
      metadata: { name: 'web-v2' },
      spec: {},
      status,
    }) as unknown as CanaryRelease;
  const written = (status: object) => status as unknown as CanaryReleaseStatus;

  it('a status whose ports say override: null is already written when the API holds them without the key (no write on every pass)', () => {
    assert.equal(statusWritten(release({ ports: [port] }), written({ ports: [{ ...port, override: null }] })), true);
  });

  it('a changed weight is not written yet', () => {
    assert.equal(
      statusWritten(release({ ports: [port] }), written({ ports: [{ ...port, weight: 20, override: null }] })),
      false,
    );
  });
});
