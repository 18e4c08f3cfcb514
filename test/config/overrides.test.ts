import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseConfig } from '../../src/config/load.ts';
import { applyWeightOverrides, parseWeightOverride } from '../../src/config/overrides.ts';
import type { L4Config, WeightOverride } from '../../src/config/types.ts';

const config = parseConfig(
  `
listeners:
  - name: web-80
    listen: 8080
    backends:
      - { name: forked, host: 10.0.0.12, port: 80, weight: 90 }
      - { name: canary, host: 10.0.0.13, port: 80, weight: 10 }
  - name: dns-53
    protocol: udp
    listen: 5353
    backends:
      - { name: forked, host: 10.0.0.12, port: 53, weight: 100 }
`,
  'lb.yaml',
);

const EXPECTED_FORM = 'expected LISTENER:BACKEND=N with N an integer 0-100';

describe('parseWeightOverride', () => {
  const valid: readonly [string, WeightOverride][] = [
    ['web-80:canary=10', { listener: 'web-80', backend: 'canary', weight: 10 }],
    ['web-80:canary=0', { listener: 'web-80', backend: 'canary', weight: 0 }],
    ['web-80:canary=100', { listener: 'web-80', backend: 'canary', weight: 100 }],
    ['web.v2_a:canary-1=007', { listener: 'web.v2_a', backend: 'canary-1', weight: 7 }],
  ];
  for (const [flag, expected] of valid) {
    test(`${flag} → ${JSON.stringify(expected)}`, () => {
      const override = parseWeightOverride(flag);
      assert.deepEqual(override, expected);
      assert.ok(Object.isFrozen(override));
    });
  }

  const invalid = [
    'web-80:canary=x',
    'web-80:canary=101',
    'web-80:canary=-1',
    'web-80:canary=1.5',
    'web-80:canary= 5',
    'web-80:canary=',
    'web-80:canary',
    'web-80=10',
    ':canary=5',
    'web-80:=5',
    'a:b:c=5',
    'web 80:canary=5',
    '',
  ];
  for (const flag of invalid) {
    test(`${JSON.stringify(flag)} is refused, naming the flag and the expected form`, () => {
      assert.throws(() => parseWeightOverride(flag), {
        name: 'ConfigError',
        source: `--weight ${JSON.stringify(flag)}`,
        problems: [EXPECTED_FORM],
        message: `--weight ${JSON.stringify(flag)}: ${EXPECTED_FORM}`,
      });
    });
  }
});

describe('applyWeightOverrides', () => {
  test('sets the weight and keeps the file weight in overriddenFrom, leaving the rest as it was', () => {
    const overridden = applyWeightOverrides(config, [
      { listener: 'web-80', backend: 'canary', weight: 0 },
      { listener: 'web-80', backend: 'forked', weight: 90 },
    ]);
    assert.deepEqual(overridden.listeners[0]?.backends, [
      { name: 'forked', host: '10.0.0.12', port: 80, weight: 90, overriddenFrom: 90 },
      { name: 'canary', host: '10.0.0.13', port: 80, weight: 0, overriddenFrom: 10 },
    ]);
    assert.deepEqual({ ...overridden.listeners[0], backends: [] }, { ...config.listeners[0], backends: [] });
    assert.equal(overridden.listeners[1], config.listeners[1], 'a listener without overrides is shared');
    assert.equal(config.listeners[0]?.backends[1]?.weight, 10, 'the input config is unchanged');
    assert.ok(Object.isFrozen(overridden) && Object.isFrozen(overridden.listeners));
    assert.ok(Object.isFrozen(overridden.listeners[0]) && Object.isFrozen(overridden.listeners[0]?.backends));
    assert.ok(Object.isFrozen(overridden.listeners[0]?.backends[1]));
  });

  test('no overrides return the config itself', () => {
    assert.equal(applyWeightOverrides(config, []), config);
  });

  test('overriding an overridden config keeps the weight of the file', () => {
    const once = applyWeightOverrides(config, [{ listener: 'web-80', backend: 'canary', weight: 50 }]);
    const twice = applyWeightOverrides(once, [{ listener: 'web-80', backend: 'canary', weight: 25 }]);
    assert.deepEqual(twice.listeners[0]?.backends[1], {
      name: 'canary',
      host: '10.0.0.13',
      port: 80,
      weight: 25,
      overriddenFrom: 10,
    });
  });

  const refused: readonly [string, L4Config, readonly WeightOverride[], string][] = [
    [
      'an unknown listener, listing the listeners',
      config,
      [{ listener: 'web-8', backend: 'canary', weight: 5 }],
      '--weight "web-8:canary=5": no listener "web-8"; the listeners are web-80, dns-53',
    ],
    [
      'an unknown backend, listing the backends of the listener',
      config,
      [{ listener: 'web-80', backend: 'canry', weight: 5 }],
      '--weight "web-80:canry=5": listener "web-80" has no backend "canry"; the backends are forked, canary',
    ],
    [
      'a config without listeners',
      { listeners: [] },
      [{ listener: 'web-80', backend: 'canary', weight: 5 }],
      '--weight "web-80:canary=5": no listener "web-80"; there are no listeners',
    ],
    [
      'two overrides of one backend',
      config,
      [
        { listener: 'web-80', backend: 'canary', weight: 5 },
        { listener: 'dns-53', backend: 'forked', weight: 5 },
        { listener: 'web-80', backend: 'canary', weight: 50 },
      ],
      '--weight "web-80:canary=50": one override per backend, and --weight "web-80:canary=5" came first',
    ],
    [
      'an out-of-range weight built in code',
      config,
      [{ listener: 'web-80', backend: 'canary', weight: 101 }],
      `--weight "web-80:canary=101": ${EXPECTED_FORM}`,
    ],
  ];
  for (const [title, input, overrides, message] of refused) {
    test(`refuses ${title}`, () => {
      assert.throws(() => applyWeightOverrides(input, overrides), { name: 'ConfigError', message });
    });
  }
});
