import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { V1Service } from '@kubernetes/client-node';
import { proxyOwnWrites, type CacheView } from '../../../src/control/loop/own-writes.ts';
import type { CanaryRelease } from '../../../src/api/release-types.ts';

function cache(services: Record<string, { rv: string; uid?: string }>, releaseRv?: string): CacheView {
  return {
    deployment: () => undefined,
    service: (name) => {
      const found = services[name];
      return found === undefined
        ? undefined
        : ({ metadata: { name, resourceVersion: found.rv, uid: found.uid ?? `uid-${name}` } } satisfies V1Service);
    },
    release: () =>
      releaseRv === undefined
        ? undefined
        : ({ metadata: { name: 'rel', uid: 'u', resourceVersion: releaseRv } } satisfies CanaryRelease),
  };
}

describe('own writes: the next pass waits until the caches show them', () => {
  it('waits for each object to show the resourceVersion its last write returned', () => {
    const writes = proxyOwnWrites(2000);
    writes.record({ kind: 'service', name: 'web', resourceVersion: '5' }, 0);
    writes.record({ kind: 'release', resourceVersion: '6' }, 0);
    writes.record({ kind: 'release', resourceVersion: '7' }, 100);
    assert.equal(writes.waitMs(cache({ web: { rv: '4' } }, '5'), 200), 1900, 'nothing shown yet');
    assert.equal(writes.waitMs(cache({ web: { rv: '5' } }, '6'), 300), 1800, 'the release shows only its first write');
    assert.equal(
      writes.waitMs(cache({ web: { rv: '4' } }, '7'), 400),
      0,
      'web was seen at 5 before; the release now at 7',
    );
  });

  it('a deleted Service is shown once it is gone, or replaced by one with another uid', () => {
    const writes = proxyOwnWrites(2000);
    writes.record({ kind: 'serviceGone', name: 'web-canary', uid: 'old' }, 0);
    assert.ok(writes.waitMs(cache({ 'web-canary': { rv: '1', uid: 'old' } }), 10) > 0);
    assert.equal(writes.waitMs(cache({ 'web-canary': { rv: '2', uid: 'new' } }), 20), 0);
    writes.record({ kind: 'serviceGone', name: 'web-forked', uid: 'x' }, 30);
    assert.equal(writes.waitMs(cache({}), 40), 0);
  });

  it('a release gone for good (its last finalizer dropped) has nothing more to show', () => {
    const writes = proxyOwnWrites(2000);
    writes.record({ kind: 'release', resourceVersion: '9' }, 0);
    assert.equal(writes.waitMs(cache({}, undefined), 10), 0);
  });

  it("a write overtaken by a later one (someone else's) is waited for until the bound: resourceVersions are opaque", () => {
    const writes = proxyOwnWrites(2000);
    writes.record({ kind: 'service', name: 'web', resourceVersion: '5' }, 0);
    writes.record({ kind: 'release', resourceVersion: '9' }, 0);
    assert.equal(writes.waitMs(cache({ web: { rv: '6' } }, '10'), 10), 1990);
    assert.equal(writes.waitMs(cache({ web: { rv: '6' } }, '10'), 2000), 0);
  });

  it('gives up at the bound: a write the caches never show is waited for 2 s at most', () => {
    const writes = proxyOwnWrites(2000);
    writes.record({ kind: 'service', name: 'web', resourceVersion: '5' }, 0);
    assert.equal(writes.waitMs(cache({ web: { rv: '4' } }), 1999), 1);
    assert.equal(writes.waitMs(cache({ web: { rv: '4' } }), 2000), 0);
    assert.equal(writes.waitMs(cache({ web: { rv: '4' } }), 2001), 0, 'and forgets it');
  });
});
