import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Service } from '@kubernetes/client-node';
import { EVERY_OBJECT, sharedKeysSelector, watchedSelector } from '../../../src/control/loop/watched-pods.ts';
import {
  ANNOTATION_ORIGINAL,
  defaultProxySelector,
  LABEL_RELEASE,
  LABEL_ROLE,
  LABEL_SERVICE,
  LABEL_TRACK,
  type Labels,
} from '../../../src/api/names.ts';
import type { CanaryRelease } from '../../../src/api/release-types.ts';
import type { CanaryReleaseSpec } from '../../../src/api/spec-types.ts';

const RELEASE = 'web-v2';
const PROXY = defaultProxySelector(RELEASE);

function release(spec: CanaryReleaseSpec, ports: string[] = []): CanaryRelease {
  return {
    apiVersion: 'canary-l4.io/v1alpha1',
    kind: 'CanaryRelease',
    metadata: { name: RELEASE, namespace: 'default' },
    spec,
    ...(ports.length === 0
      ? {}
      : {
          status: {
            ports: ports.map((service) => ({ service, port: 80, protocol: 'TCP', proxyPort: 8080, weight: 0 })),
          },
        }),
  } as CanaryRelease;
}

function service(
  name: string,
  selector: Labels,
  saved?: { release: string; selector: Labels },
  labels?: Labels,
): V1Service {
  const annotations =
    saved === undefined
      ? undefined
      : { [ANNOTATION_ORIGINAL]: JSON.stringify({ ...saved, retargeted: true, ports: [] }) };
  return {
    metadata: { name, ...(annotations ? { annotations } : {}), ...(labels ? { labels: { ...labels } } : {}) },
    spec: { selector: { ...selector } },
  };
}

const copy = (original: string, role: 'forked' | 'canary', selector: Labels) =>
  service(`${original}-${role}`, selector, undefined, {
    [LABEL_RELEASE]: RELEASE,
    [LABEL_SERVICE]: original,
    [LABEL_ROLE]: role,
  });

describe('watchedSelector', () => {
  const cases: [string, CanaryRelease | undefined, V1Service[], string | undefined][] = [
    ['no release: nothing to watch', undefined, [service('web', { app: 'web' })], undefined],
    [
      'its Service does not exist (yet): nothing to watch',
      release({ services: [{ service: 'web' }] }),
      [service('api', { app: 'api' })],
      undefined,
    ],
    [
      'one Service: its keys and values; other Services do not count',
      release({ services: [{ service: 'web' }] }),
      [service('web', { app: 'web', tier: 'front' }), service('api', { app: 'api' })],
      'app in (web),tier in (front)',
    ],
    [
      'canary operations add a value to a shared key; a key one side drops is not required',
      release({
        services: [
          {
            service: 'web',
            canaryServiceOperations: { add: { version: 'v2' }, remove: ['tier'] },
            forkedServiceOperations: { add: { version: 'v1' } },
          },
        ],
      }),
      [service('web', { app: 'web', tier: 'front', version: 'v1' })],
      'app in (web),version in (v1,v2)',
    ],
    [
      'two Services: the keys they share',
      release({ services: [{ service: 'web' }, { service: 'api' }] }),
      [service('web', { app: 'web', tier: 'front' }), service('api', { app: 'api' })],
      'app in (api,web)',
    ],
    [
      'taken over (selects the proxy): the saved original, not the proxy selector',
      release({ services: [{ service: 'web' }] }, ['web']),
      [service('web', PROXY, { release: RELEASE, selector: { app: 'web' } })],
      'app in (web)',
    ],
    [
      'taken over keeping its keys (values only the proxy pods carry): those values are watched too',
      release({ services: [{ service: 'web' }] }),
      [service('web', { app: 'canary-l4.web-v2' }, { release: RELEASE, selector: { app: 'web' } })],
      'app in (canary-l4.web-v2,web)',
    ],
    [
      'no longer in the spec but saved by this release, and the copies',
      release({ services: [] }),
      [
        service('old', PROXY, { release: RELEASE, selector: { app: 'old' } }),
        copy('old', 'canary', { app: 'old-next', [LABEL_TRACK]: 'canary' }),
      ],
      'app in (old,old-next)',
    ],
    [
      'a Service saved by another release (this one waits): that original',
      release({ services: [{ service: 'web' }] }),
      [service('web', defaultProxySelector('other'), { release: 'other', selector: { app: 'web' } })],
      'app in (web)',
    ],
    [
      'a workload patch relabels the canary pods',
      release({
        services: [{ service: 'web' }],
        workloads: [{ name: 'web', patch: { metadata: { labels: { app: 'web-next', version: 'v2' } } } }],
      }),
      [service('web', { app: 'web' })],
      'app in (web,web-next)',
    ],
    [
      'selectors that share no key: the whole namespace',
      release({ services: [{ service: 'web' }, { service: 'api' }] }),
      [service('web', { app: 'web' }), service('api', { component: 'api' })],
      EVERY_OBJECT,
    ],
  ];
  for (const [name, given, services, expected] of cases) {
    test(name, () => assert.equal(watchedSelector(given, services, PROXY), expected));
  }
});

describe('sharedKeysSelector', () => {
  test('a value the apiserver would refuse, or an empty one, widens the watch rather than break it', () => {
    assert.equal(
      sharedKeysSelector([
        { app: 'web', tier: '' },
        { app: 'bad value!', tier: 'x' },
      ]),
      EVERY_OBJECT,
    );
    assert.equal(
      sharedKeysSelector([
        { app: 'web', tier: '' },
        { app: 'api', tier: 'x' },
      ]),
      'app in (api,web)',
    );
  });
});
