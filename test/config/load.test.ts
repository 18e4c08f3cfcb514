import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { describe, test } from 'node:test';
import { loadConfigFile, parseConfig } from '../../src/config/load.ts';
import { validateConfig } from '../../src/config/validate.ts';
import type { L4Config } from '../../src/config/types.ts';
import { ConfigError } from '../../src/errors.ts';

function problemsOf(parse: () => unknown): readonly string[] {
  try {
    parse();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  assert.fail('expected a ConfigError');
}

const validateProblems = (raw: unknown): readonly string[] => problemsOf(() => validateConfig(raw, 'test'));
const parseProblems = (text: string): readonly string[] => problemsOf(() => parseConfig(text, 'lb.yaml'));

function assertDeeplyFrozen(value: unknown, path = 'config'): void {
  if (typeof value !== 'object' || value === null) return;
  assert.ok(Object.isFrozen(value), `${path} is not frozen`);
  for (const [key, child] of Object.entries(value)) assertDeeplyFrozen(child, `${path}.${key}`);
}

// A valid raw listener; a case changes one field (undefined = the field is left out).
const rawBackend = (fields: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: 'forked',
  host: '10.0.0.12',
  port: 80,
  weight: 90,
  ...fields,
});
const rawListener = (fields: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: 'web-80',
  listen: 8080,
  backends: [rawBackend()],
  ...fields,
});

const DESIGN_EXAMPLE_YAML = `
listeners:
  - name: web-80              # unique; used in metrics labels
    protocol: tcp             # tcp | udp
    listen: 8080              # port, or "host:port"; dual-stack by default
    balance: wrr
    backends:
      - { name: forked, host: 10.0.0.12, port: 80, weight: 90 }
      - { name: canary, host: 10.0.0.13, port: 80, weight: 10 }
    connectTimeoutMs: 5000
    idleTimeoutMs: 600000
  - name: dns-53
    protocol: udp
    listen: "[::1]:5353"
    balance: random
    backends:
      - { name: forked, host: dns.example.internal, port: 53, weight: 100 }
      - { name: canary, host: "fd00::13", port: 53, weight: 0 }
    udp: { responses: 1, maxSessions: 1024 }
`;

const DESIGN_EXAMPLE_CONFIG: L4Config = {
  listeners: [
    {
      name: 'web-80',
      protocol: 'tcp',
      listen: { host: undefined, port: 8080 },
      balance: 'wrr',
      backends: [
        { name: 'forked', host: '10.0.0.12', port: 80, weight: 90 },
        { name: 'canary', host: '10.0.0.13', port: 80, weight: 10 },
      ],
      connectTimeoutMs: 5000,
      idleTimeoutMs: 600_000,
      maxConnections: 0,
      maxFails: 1,
      failTimeoutMs: 10_000,
      failOnReset: false,
      firstByteTimeoutMs: 0,
      probeIntervalMs: 0, // passive health as nginx: back after failTimeoutMs
      maxConnectionAgeMs: 0, // nothing is ever cut unless asked
      rebalanceWindowMs: 0,
      drainTimeoutMs: 0,
      affinity: 'none',
      udp: { responses: 0, maxSessions: 0 }, // no cap of its own: the descriptor budget bounds sessions
    },
    {
      name: 'dns-53',
      protocol: 'udp',
      listen: { host: '::1', port: 5353 },
      balance: 'random',
      backends: [
        { name: 'forked', host: 'dns.example.internal', port: 53, weight: 100 },
        { name: 'canary', host: 'fd00::13', port: 53, weight: 0 },
      ],
      connectTimeoutMs: 5000,
      idleTimeoutMs: 30_000, // the UDP default
      maxConnections: 0,
      maxFails: 1,
      failTimeoutMs: 10_000,
      failOnReset: false,
      firstByteTimeoutMs: 0,
      probeIntervalMs: 0,
      maxConnectionAgeMs: 0,
      rebalanceWindowMs: 0,
      drainTimeoutMs: 0,
      affinity: 'none',
      udp: { responses: 1, maxSessions: 1024 },
    },
  ],
};

describe('valid documents', () => {
  test('YAML: every default is filled in, the UDP idle timeout included', () => {
    assert.deepEqual(parseConfig(DESIGN_EXAMPLE_YAML, 'lb.yaml'), DESIGN_EXAMPLE_CONFIG);
  });

  test('JSON is read as YAML and gives the same config', () => {
    const json = JSON.stringify(
      {
        listeners: [
          {
            name: 'web-80',
            protocol: 'tcp',
            listen: 8080,
            balance: 'wrr',
            backends: [
              { name: 'forked', host: '10.0.0.12', port: 80, weight: 90 },
              { name: 'canary', host: '10.0.0.13', port: 80, weight: 10 },
            ],
          },
          {
            name: 'dns-53',
            protocol: 'udp',
            listen: '[::1]:5353',
            balance: 'random',
            backends: [
              { name: 'forked', host: 'dns.example.internal', port: 53, weight: 100 },
              { name: 'canary', host: 'fd00::13', port: 53, weight: 0 },
            ],
            udp: { responses: 1, maxSessions: 1024 },
          },
        ],
      },
      null,
      '\t',
    );
    assert.deepEqual(parseConfig(json, 'lb.json'), DESIGN_EXAMPLE_CONFIG);
  });

  test('the result is deeply frozen', () => {
    const config = parseConfig(DESIGN_EXAMPLE_YAML, 'lb.yaml');
    assertDeeplyFrozen(config);
    assert.throws(() => {
      (config.listeners[0]?.backends[0] as { weight: number }).weight = 50;
    }, TypeError);
  });

  test('explicit values replace the defaults', () => {
    const config = validateConfig(
      {
        listeners: [
          rawListener({
            connectTimeoutMs: 250,
            idleTimeoutMs: 1000,
            maxConnections: 10,
            maxFails: 3,
            failTimeoutMs: 2000,
            udp: { maxSessions: 5 },
          }),
        ],
      },
      'test',
    );
    const listener = config.listeners[0];
    assert.deepEqual(
      listener && [
        listener.connectTimeoutMs,
        listener.idleTimeoutMs,
        listener.maxConnections,
        listener.maxFails,
        listener.failTimeoutMs,
      ],
      [250, 1000, 10, 3, 2000],
    );
    assert.deepEqual(listener?.udp, { responses: 0, maxSessions: 5 });
  });

  test('an empty listeners list is valid (the Kubernetes mode after a release is archived)', () => {
    assert.deepEqual(parseConfig('listeners: []\n', 'lb.yaml'), { listeners: [] });
  });
});

describe('listen forms', () => {
  const valid: readonly [unknown, { host: string | undefined; port: number }][] = [
    [8080, { host: undefined, port: 8080 }],
    ['8080', { host: undefined, port: 8080 }],
    ['*:8080', { host: undefined, port: 8080 }],
    ['0.0.0.0:80', { host: '0.0.0.0', port: 80 }],
    ['127.0.0.1:65535', { host: '127.0.0.1', port: 65_535 }],
    ['localhost:8080', { host: 'localhost', port: 8080 }],
    ['[::1]:8080', { host: '::1', port: 8080 }],
    ['[::]:53', { host: '::', port: 53 }],
    ['[fe80::1%eth0]:53', { host: 'fe80::1%eth0', port: 53 }],
  ];
  for (const [listen, expected] of valid) {
    test(`${JSON.stringify(listen)} → ${JSON.stringify(expected)}`, () => {
      assert.deepEqual(validateConfig({ listeners: [rawListener({ listen })] }, 'test').listeners[0]?.listen, expected);
    });
  }

  const expected = 'a port 1-65535, "port", "host:port" or "[ipv6]:port"';
  const invalid: readonly [unknown, string][] = [
    [70_000, `must be ${expected}, got 70000`],
    [-1, `must be ${expected}, got -1`],
    [0, `must be ${expected}, got 0`],
    ['0.0.0.0:0', `must be ${expected}, got "0.0.0.0:0"`],
    ['8080x', `must be ${expected}, got "8080x"`],
    ['host:', `must be ${expected}, got "host:"`],
    [':8080', `must be ${expected}, got ":8080"`],
    ['[::1]:99999', `must be ${expected}, got "[::1]:99999"`],
    ['[10.0.0.1]:80', `must be ${expected}, got "[10.0.0.1]:80"`],
    ['10.0.0.256:80', `must be ${expected}, got "10.0.0.256:80"`],
    ['::1:8080', `must be ${expected}, got "::1:8080" (an IPv6 address goes in brackets, as in "[::1]:8080")`],
    [true, `must be ${expected}, got true`],
    [undefined, `is required (${expected})`],
  ];
  for (const [listen, problem] of invalid) {
    test(`${JSON.stringify(listen)} is refused`, () => {
      assert.deepEqual(validateProblems({ listeners: [rawListener({ listen })] }), [`listeners[0].listen: ${problem}`]);
    });
  }
});

describe('one problem per bad field, with its exact line', () => {
  const name = '1-63 characters from A-Z a-z 0-9 _ . -';
  const milliseconds = 'an integer 1-2147483647 (milliseconds)';
  const cases: readonly [string, Record<string, unknown>, string][] = [
    ['listener name with a space', { name: 'web 80' }, `listeners[0].name: must be ${name}, got "web 80"`],
    [
      'listener name of 64 characters',
      { name: 'a'.repeat(64) },
      `listeners[0].name: must be ${name}, got "${'a'.repeat(64)}"`,
    ],
    ['listener name missing', { name: undefined }, `listeners[0].name: is required (${name})`],
    ['protocol in capitals', { protocol: 'TCP' }, 'listeners[0].protocol: must be "tcp" or "udp", got "TCP"'],
    ['unknown balance', { balance: 'rr' }, 'listeners[0].balance: must be "wrr" or "random", got "rr"'],
    [
      'backends missing',
      { backends: undefined },
      'listeners[0].backends: is required (a list of at least one backend)',
    ],
    ['backends empty', { backends: [] }, 'listeners[0].backends: must be a list of at least one backend, got []'],
    [
      'backends a mapping',
      { backends: { name: 'x' } },
      'listeners[0].backends: must be a list of at least one backend, got {"name":"x"}',
    ],
    [
      'backend a scalar',
      { backends: ['10.0.0.1:80'] },
      'listeners[0].backends[0]: must be a mapping, got "10.0.0.1:80"',
    ],
    [
      'negative weight',
      { backends: [rawBackend({ weight: -5 })] },
      'listeners[0].backends[0].weight: must be an integer 0-100, got -5',
    ],
    [
      'weight over 100',
      { backends: [rawBackend({ weight: 101 })] },
      'listeners[0].backends[0].weight: must be an integer 0-100, got 101',
    ],
    [
      'fractional weight',
      { backends: [rawBackend({ weight: 1.5 })] },
      'listeners[0].backends[0].weight: must be an integer 0-100, got 1.5',
    ],
    [
      'weight as a string',
      { backends: [rawBackend({ weight: '10' })] },
      'listeners[0].backends[0].weight: must be an integer 0-100, got "10"',
    ],
    [
      'weight missing',
      { backends: [rawBackend({ weight: undefined })] },
      'listeners[0].backends[0].weight: is required (an integer 0-100)',
    ],
    [
      'backend port 0',
      { backends: [rawBackend({ port: 0 })] },
      'listeners[0].backends[0].port: must be an integer 1-65535, got 0',
    ],
    [
      'backend port 65536',
      { backends: [rawBackend({ port: 65_536 })] },
      'listeners[0].backends[0].port: must be an integer 1-65535, got 65536',
    ],
    [
      'empty host',
      { backends: [rawBackend({ host: '' })] },
      'listeners[0].backends[0].host: must be an IP address or a DNS name, got ""',
    ],
    [
      'bracketed IPv6 host',
      { backends: [rawBackend({ host: '[::1]' })] },
      'listeners[0].backends[0].host: must be an IP address or a DNS name, got "[::1]" (write an IPv6 address without brackets)',
    ],
    [
      'out-of-range IPv4 host',
      { backends: [rawBackend({ host: '10.0.0.256' })] },
      'listeners[0].backends[0].host: must be an IP address or a DNS name, got "10.0.0.256"',
    ],
    [
      'host with an underscore',
      { backends: [rawBackend({ host: 'web_forked' })] },
      'listeners[0].backends[0].host: must be an IP address or a DNS name, got "web_forked"',
    ],
    [
      'host with a port',
      { backends: [rawBackend({ host: 'web:80' })] },
      'listeners[0].backends[0].host: must be an IP address or a DNS name, got "web:80"',
    ],
    [
      'backend name with a colon',
      { backends: [rawBackend({ name: 'a:b' })] },
      `listeners[0].backends[0].name: must be ${name}, got "a:b"`,
    ],
    ['connect timeout 0', { connectTimeoutMs: 0 }, `listeners[0].connectTimeoutMs: must be ${milliseconds}, got 0`],
    [
      'idle timeout past setTimeout',
      { idleTimeoutMs: 2 ** 31 },
      `listeners[0].idleTimeoutMs: must be ${milliseconds}, got 2147483648`,
    ],
    [
      'fail timeout with a unit',
      { failTimeoutMs: '10s' },
      `listeners[0].failTimeoutMs: must be ${milliseconds}, got "10s"`,
    ],
    ['negative maxConnections', { maxConnections: -1 }, 'listeners[0].maxConnections: must be an integer >= 0, got -1'],
    ['maxFails 0', { maxFails: 0 }, 'listeners[0].maxFails: must be a positive integer, got 0'],
    ['failOnReset not a boolean', { failOnReset: 'yes' }, 'listeners[0].failOnReset: must be true or false, got "yes"'],
    [
      'failOnReset on a udp listener',
      { protocol: 'udp', failOnReset: true },
      'listeners[0].failOnReset: applies to tcp listeners only; remove it',
    ],
    [
      'firstByteTimeoutMs on a udp listener',
      { protocol: 'udp', firstByteTimeoutMs: 500 },
      'listeners[0].firstByteTimeoutMs: applies to tcp listeners only; remove it',
    ],
    [
      'negative firstByteTimeoutMs',
      { firstByteTimeoutMs: -1 },
      'listeners[0].firstByteTimeoutMs: must be an integer 0-2147483647 (milliseconds; 0 = off), got -1',
    ],
    [
      'negative maxConnectionAgeMs',
      { maxConnectionAgeMs: -1 },
      'listeners[0].maxConnectionAgeMs: must be an integer 0-2147483647 (milliseconds; 0 = off), got -1',
    ],
    [
      'rebalance window with a unit',
      { rebalanceWindowMs: '30s' },
      'listeners[0].rebalanceWindowMs: must be an integer 0-2147483647 (milliseconds; 0 = off), got "30s"',
    ],
    [
      'fractional drainTimeoutMs',
      { drainTimeoutMs: 1.5 },
      'listeners[0].drainTimeoutMs: must be an integer 0-2147483647 (milliseconds; 0 = off), got 1.5',
    ],
    [
      'affinity in lower case',
      { affinity: 'clientip' },
      'listeners[0].affinity: must be "none" or "clientIP", got "clientip"',
    ],
    [
      'negative udp.responses',
      { udp: { responses: -1 } },
      'listeners[0].udp.responses: must be an integer >= 0, got -1',
    ],
    [
      'negative udp.maxSessions',
      { udp: { maxSessions: -1 } },
      'listeners[0].udp.maxSessions: must be an integer >= 0, got -1',
    ],
    ['udp a scalar', { udp: 5 }, 'listeners[0].udp: must be a mapping, got 5'],
    [
      'typo in a backend key',
      { backends: [rawBackend({ wieght: 5 })] },
      'listeners[0].backends[0].wieght: unknown key, did you mean "weight"?',
    ],
    [
      'snake_case listener key',
      { idle_timeout_ms: 5 },
      'listeners[0].idle_timeout_ms: unknown key, did you mean "idleTimeoutMs"?',
    ],
    [
      'key missing its unit',
      { connectTimeout: 5 },
      'listeners[0].connectTimeout: unknown key, did you mean "connectTimeoutMs"?',
    ],
    [
      'typo in a udp key',
      { udp: { maxSession: 5 } },
      'listeners[0].udp.maxSession: unknown key, did you mean "maxSessions"?',
    ],
    [
      'unknown key far from any',
      { backends: [rawBackend({ address: 'x' })] },
      'listeners[0].backends[0].address: unknown key; known keys: name, host, port, weight, refuse',
    ],
    [
      'overriddenFrom is not a file key',
      { backends: [rawBackend({ overriddenFrom: 5 })] },
      'listeners[0].backends[0].overriddenFrom: unknown key; known keys: name, host, port, weight, refuse',
    ],
    [
      'unknown key with odd characters',
      { 'max conns': 5 },
      'listeners[0]["max conns"]: unknown key; known keys: name, protocol, listen, balance, backends, connectTimeoutMs, idleTimeoutMs, maxConnections, maxFails, failTimeoutMs, failOnReset, firstByteTimeoutMs, probeIntervalMs, maxConnectionAgeMs, rebalanceWindowMs, drainTimeoutMs, affinity, mirror, udp',
    ],
    [
      'mirror to a backend the listener lacks',
      { mirror: { to: 'canary', percent: 10 } },
      'listeners[0].mirror.to: must be the name of one of this listener\'s backends (forked), got "canary"',
    ],
    [
      'mirror without to',
      { mirror: { percent: 10 } },
      "listeners[0].mirror.to: is required (the name of one of this listener's backends (forked))",
    ],
    [
      'mirror without percent',
      { mirror: { to: 'forked' } },
      'listeners[0].mirror.percent: is required (an integer 0-100 (percent))',
    ],
    [
      'mirror percent over 100',
      { mirror: { to: 'forked', percent: 150 } },
      'listeners[0].mirror.percent: must be an integer 0-100 (percent), got 150',
    ],
    [
      'mirror compare unknown',
      { mirror: { to: 'forked', percent: 5, compare: 'bytes' } },
      'listeners[0].mirror.compare: must be "replies" or "none", got "bytes"',
    ],
    [
      'mirror maxBytes 0',
      { mirror: { to: 'forked', percent: 5, maxBytes: 0 } },
      'listeners[0].mirror.maxBytes: must be an integer 1-1073741824 (bytes), got 0',
    ],
    [
      'typo in a mirror key',
      { mirror: { to: 'forked', percent: 5, compar: 'none' } },
      'listeners[0].mirror.compar: unknown key, did you mean "compare"?',
    ],
    [
      'duplicate backend name',
      { backends: [rawBackend(), rawBackend({ host: '10.0.0.13' })] },
      'listeners[0].backends[1].name: must be unique, listeners[0].backends[0] has it too, got "forked"',
    ],
  ];
  for (const [title, fields, problem] of cases) {
    test(title, () => {
      assert.deepEqual(validateProblems({ listeners: [rawListener(fields)] }), [problem]);
    });
  }

  const documentCases: readonly [string, unknown, string][] = [
    ['listeners missing', {}, 'listeners: is required (a list of listeners)'],
    ['empty document', null, 'listeners: is required (a list of listeners)'],
    [
      'document a list',
      [rawListener()],
      '(document): must be a mapping, got [{"name":"web-80","listen":8080,"backends":[{"name":"forked","host":"10.0.0.1...',
    ],
    [
      'listeners a mapping',
      { listeners: rawListener() },
      'listeners: must be a list of listeners, got {"name":"web-80","listen":8080,"backends":[{"name":"forked","host":"10.0.0.12...',
    ],
    ['listener a scalar', { listeners: ['web-80'] }, 'listeners[0]: must be a mapping, got "web-80"'],
    [
      'duplicate listener name',
      { listeners: [rawListener(), rawListener({ listen: 8081 })] },
      'listeners[1].name: must be unique, listeners[0] has it too, got "web-80"',
    ],
  ];
  for (const [title, raw, problem] of documentCases) {
    test(title, () => {
      assert.deepEqual(validateProblems(raw), [problem]);
    });
  }
});

test('a mistyped required key is reported as unknown and its intended key as missing', () => {
  assert.deepEqual(validateProblems({ listener: [] }), [
    'listener: unknown key, did you mean "listeners"?',
    'listeners: is required (a list of listeners)',
  ]);
});

describe('several problems at once', () => {
  const yaml = `
listeners:
  - name: web-80
    listen: 8080
    balance: rr
    backends:
      - { name: forked, host: 10.0.0.12, port: 80, weight: 90 }
      - { name: canary, host: 10.0.0.13, port: 80, weight: -5 }
  - name: web-81
    protocl: tcp
    listen: 8080
    backends:
      - { name: forked, host: 10.0.0.12, port: 0, weight: 1 }
`;
  const problems = [
    'listeners[0].balance: must be "wrr" or "random", got "rr"',
    'listeners[0].backends[1].weight: must be an integer 0-100, got -5',
    'listeners[1].protocl: unknown key, did you mean "protocol"?',
    'listeners[1].backends[0].port: must be an integer 1-65535, got 0',
    'listeners[1].listen: "web-81" clashes with "web-80" (listeners[0], *:8080) on tcp port 8080, got "*:8080"',
  ];

  test('are all reported, in one pass', () => {
    assert.deepEqual(parseProblems(yaml), problems);
  });

  test('the message has one line per problem, each naming the source', () => {
    assert.throws(() => parseConfig(yaml, 'lb.yaml'), {
      name: 'ConfigError',
      message: problems.map((problem) => `lb.yaml: ${problem}`).join('\n'),
    });
  });
});

describe('port clashes', () => {
  const cases: readonly [string, [string, unknown], [string, unknown], boolean][] = [
    ['same port, both on every address', ['tcp', 8080], ['tcp', '8080'], true],
    ['every address and one host', ['tcp', 8080], ['tcp', '127.0.0.1:8080'], true],
    ['one host and every address', ['udp', '[::1]:53'], ['udp', 53], true],
    ['"*" is every address', ['tcp', '*:80'], ['tcp', '10.0.0.1:80'], true],
    ['the same host', ['tcp', '127.0.0.1:80'], ['tcp', '127.0.0.1:80'], true],
    ['the same name, any case', ['tcp', 'LocalHost:80'], ['tcp', 'localhost.:80'], true],
    ['"::" is dual-stack', ['tcp', '[::]:80'], ['tcp', '127.0.0.1:80'], true],
    ['0.0.0.0 and an IPv4 host', ['tcp', '0.0.0.0:80'], ['tcp', '10.0.0.1:80'], true],
    ['0.0.0.0 and an IPv6 host', ['tcp', '0.0.0.0:80'], ['tcp', '[::1]:80'], false],
    ['different hosts', ['tcp', '127.0.0.1:80'], ['tcp', '127.0.0.2:80'], false],
    ['different ports', ['tcp', 80], ['tcp', 81], false],
    ['tcp and udp on one port', ['tcp', 53], ['udp', 53], false],
  ];
  for (const [title, [protocolA, listenA], [protocolB, listenB], clashes] of cases) {
    test(`${title}: ${clashes ? 'clash' : 'no clash'}`, () => {
      const raw = {
        listeners: [
          rawListener({ name: 'a', protocol: protocolA, listen: listenA }),
          rawListener({ name: 'b', protocol: protocolB, listen: listenB }),
        ],
      };
      if (clashes)
        assert.match(
          validateProblems(raw).join('\n'),
          /^listeners\[1\]\.listen: "b" clashes with "a" \(listeners\[0\], /,
        );
      else assert.equal(validateConfig(raw, 'test').listeners.length, 2);
    });
  }

  test('the problem names both listeners, the protocol and the port', () => {
    const raw = {
      listeners: [
        rawListener({ name: 'web-a', listen: '127.0.0.1:8080' }),
        rawListener({ name: 'dns', protocol: 'udp', listen: 8080 }),
        rawListener({ name: 'web-b', listen: 8080 }),
      ],
    };
    assert.deepEqual(validateProblems(raw), [
      'listeners[2].listen: "web-b" clashes with "web-a" (listeners[0], 127.0.0.1:8080) on tcp port 8080, got "*:8080"',
    ]);
  });
});

describe('YAML syntax errors', () => {
  const cases: readonly [string, string, readonly string[]][] = [
    [
      'a nested mapping in a compact one',
      'listeners:\n  - name: a: b\n',
      ['line 2, column 11: Nested mappings are not allowed in compact mappings'],
    ],
    ['a tab as indentation', 'listeners:\n\t- name: a\n', ['line 2, column 1: Tabs are not allowed as indentation']],
    ['a duplicate key', 'listeners: []\nlisteners: []\n', ['line 2, column 1: Map keys must be unique']],
    [
      'two documents',
      'listeners: []\n---\nlisteners: []\n',
      ['line 2, column 1: a config file holds one YAML document, this is the start of a second'],
    ],
    [
      'an alias to no anchor',
      'listeners: *missing\n',
      ['Unresolved alias (the anchor must be set before the alias): missing'],
    ],
  ];
  for (const [title, text, problems] of cases) {
    test(title, () => {
      assert.deepEqual(parseProblems(text), problems);
    });
  }

  test('the message names the source file and the position', () => {
    assert.throws(() => parseConfig('listeners: [\n', 'lb.yaml'), {
      name: 'ConfigError',
      message: /^lb\.yaml: line \d+, column \d+: /,
    });
  });

  test('a self-referencing alias is reported, not looped on', () => {
    assert.deepEqual(parseProblems('listeners: &l [*l]\n'), ['listeners[0]: must be a mapping, got a list']);
  });
});

describe('loadConfigFile', () => {
  test('reads and validates a file; a missing file is a ConfigError naming it', async (t) => {
    const directory = await mkdtemp(join(tmpdir(), 'canary-l4-config-'));
    t.after(() => rm(directory, { recursive: true, force: true }));
    const path = join(directory, 'lb.yaml');
    await writeFile(path, DESIGN_EXAMPLE_YAML);
    assert.deepEqual(await loadConfigFile(path), DESIGN_EXAMPLE_CONFIG);

    const missing = join(directory, 'missing.yaml');
    await assert.rejects(loadConfigFile(missing), {
      name: 'ConfigError',
      source: missing,
      problems: ['cannot read the file (ENOENT)'],
      message: `${missing}: cannot read the file (ENOENT)`,
    });
  });

  test('a config from a file is frozen, and its problems name the field, as parseConfig does', async (t) => {
    const directory = await mkdtemp(join(tmpdir(), 'canary-l4-config-'));
    t.after(() => rm(directory, { recursive: true, force: true }));
    const path = join(directory, 'lb.yaml');
    await writeFile(path, DESIGN_EXAMPLE_YAML);
    assertDeeplyFrozen(await loadConfigFile(path));
    await writeFile(path, 'listeners:\n  - name: web\n    listen: 8080\n    backends: []\n');
    await assert.rejects(loadConfigFile(path), {
      name: 'ConfigError',
      problems: ['listeners[0].backends: must be a list of at least one backend, got []'],
    });
  });

  test('a big file is parsed off the main thread: the event loop is free while it is parsed', async (t) => {
    const directory = await mkdtemp(join(tmpdir(), 'canary-l4-config-'));
    t.after(() => rm(directory, { recursive: true, force: true }));
    const path = join(directory, 'lb.yaml');
    const listener = (i: number) =>
      `  - name: l${i}\n    listen: ${10_000 + i}\n    backends:\n      - { name: stable, host: 10.0.0.1, port: 80, weight: 90 }\n      - { name: canary, host: 10.0.0.2, port: 80, weight: 10 }\n`;
    await writeFile(path, `listeners:\n${Array.from({ length: 2000 }, (_, i) => listener(i)).join('')}`);
    const before = performance.eventLoopUtilization();
    const config = await loadConfigFile(path);
    const { utilization } = performance.eventLoopUtilization(before);
    assert.equal(config.listeners.length, 2000);
    // Parsed on the main thread, the event loop is busy nearly all along (hundreds of milliseconds
    // of YAML); off it, the main thread only starts the thread and takes the result.
    assert.ok(
      utilization < 0.5,
      `the event loop was busy ${(100 * utilization).toFixed(0)} % of the time 2 000 listeners took to load`,
    );
  });
});
