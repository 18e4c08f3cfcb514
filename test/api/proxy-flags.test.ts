import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePortWeight, parsePortWeights, parseSelector } from '../../src/api/proxy-flags.ts';
import { ConfigError } from '../../src/errors.ts';

describe('--weight SERVICE:PORT=PCT', () => {
  for (const [flag, expected] of [
    ['web:80=10', { service: 'web', port: 80, weight: 10 }],
    ['my-api:65535=0', { service: 'my-api', port: 65535, weight: 0 }],
    ['a:1=100', { service: 'a', port: 1, weight: 100 }],
  ] as const) {
    it(`parses ${flag}`, () => assert.deepEqual(parsePortWeight(flag), expected));
  }

  for (const flag of [
    'web:80',
    'web=10',
    'web:0=10',
    'web:65536=10',
    'web:80=101',
    'web:80=-1',
    'Web:80=1',
    ':80=1',
    'web:80=1.5',
    'web:http=10',
    '',
  ]) {
    it(`refuses ${JSON.stringify(flag)} in one line naming the flag`, () => {
      assert.throws(
        () => parsePortWeight(flag),
        (err: unknown) =>
          err instanceof ConfigError &&
          err.message ===
            `--weight ${JSON.stringify(flag)}: expected SERVICE:PORT=PCT, PORT 1-65535 and PCT (the canary weight) an integer 0-100`,
      );
    });
  }

  it('refuses the same port twice, naming both flags', () => {
    assert.throws(() => parsePortWeights(['web:80=10', 'db:80=5', 'web:80=20']), {
      message: '--weight "web:80=20": port web:80 is already set by --weight "web:80=10"',
    });
    assert.deepEqual(
      parsePortWeights(['web:80=10', 'web:443=20']).map((item) => item.port),
      [80, 443],
    );
  });
});

describe('--proxy-selector', () => {
  it('parses key=value pairs, prefixed keys and empty values', () => {
    assert.deepEqual(parseSelector('app=proxy, canary-l4.io/release=web-v2,tier='), {
      app: 'proxy',
      'canary-l4.io/release': 'web-v2',
      tier: '',
    });
  });

  for (const [flag, problem] of [
    ['', 'expected key=value[,key=value...]; an empty selector would select no pod'],
    ['app', 'expected key=value, got "app"'],
    ['a=b=c', 'expected key=value, got "a=b=c"'],
    ['-x=1', '"-x" is not a label key'],
    ['app=bad value', '"bad value" is not a label value'],
    ['app=a,app=b', 'label app is given twice'],
  ] as const) {
    it(`refuses ${JSON.stringify(flag)}`, () =>
      assert.throws(() => parseSelector(flag), { message: `--proxy-selector ${JSON.stringify(flag)}: ${problem}` }));
  }
});
