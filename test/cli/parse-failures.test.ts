// A command line that does not parse names the unknown command or flag, what it likely meant, and
// the command's own help, in one line each, and exits 2 (as every start-up error does).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { parseFailureMessage, unknownFlags } from '../../src/util/parse-failures.ts';
import { MAIN } from '../support/process/serve-child.ts';

const COMMANDS = ['serve', 'proxy', 'manager', 'demo'];
const SERVE_FLAGS = [
  'help',
  'version',
  'log-level',
  'admin-port',
  'admin-address',
  'admin-host',
  'config',
  'c',
  'weight',
  'watch',
  'workers',
];
const PROXY_FLAGS = ['help', 'version', 'namespace', 'n', 'canary-release', 'kubeconfig', 'port-base'];

describe('unknownFlags', () => {
  const rows: [string, string[], string[], ReturnType<typeof unknownFlags>][] = [
    [
      'a transposed pair',
      ['serve', '--admin-prot', '9191'],
      SERVE_FLAGS,
      [{ typed: '--admin-prot', meant: '--admin-port' }],
    ],
    [
      'a letter dropped from a required flag',
      ['serve', '--confg', 'lb.yaml'],
      SERVE_FLAGS,
      [{ typed: '--confg', meant: '--config' }],
    ],
    ['with =value', ['serve', '--wieght=web:canary=0'], SERVE_FLAGS, [{ typed: '--wieght', meant: '--weight' }]],
    [
      'the end of a longer flag',
      ['proxy', '--release', 'web-v2'],
      PROXY_FLAGS,
      [{ typed: '--release', meant: '--canary-release' }],
    ],
    ['nothing close', ['serve', '--verbose'], SERVE_FLAGS, [{ typed: '--verbose' }]],
    ['an unknown short flag', ['serve', '-z'], SERVE_FLAGS, [{ typed: '-z' }]],
    ['grouped short flags', ['serve', '-cz', 'lb.yaml'], SERVE_FLAGS, [{ typed: '-z' }]],
    [
      'every one of several',
      ['serve', '--confg', 'x', '--wach'],
      SERVE_FLAGS,
      [
        { typed: '--confg', meant: '--config' },
        { typed: '--wach', meant: '--watch' },
      ],
    ],
    [
      'known ones, camelCase, --no- and aliases',
      ['serve', '-c', 'x', '--logLevel', 'debug', '--no-watch', '--admin-host', '::1'],
      SERVE_FLAGS,
      [],
    ],
    ['a negative number is a value', ['serve', '--workers', '-2'], SERVE_FLAGS, []],
    ['after --, nothing is a flag', ['serve', '--', '--confg'], SERVE_FLAGS, []],
  ];
  for (const [name, args, known, expected] of rows) {
    test(name, () => assert.deepEqual(unknownFlags(args, known), expected));
  }
});

describe('parseFailureMessage', () => {
  test('a misspelt command', () => {
    assert.equal(
      parseFailureMessage('canary-l4', ['sevre', '-c', 'x'], COMMANDS, ['help', 'version'], 'Unknown argument: sevre'),
      'canary-l4: unknown command sevre, did you mean serve? (the commands: serve, proxy, manager, demo)',
    );
  });
  test('an unknown flag of a command names its help, whatever yargs said first', () => {
    assert.equal(
      parseFailureMessage(
        'canary-l4',
        ['serve', '--confg', 'lb.yaml'],
        COMMANDS,
        SERVE_FLAGS,
        'Missing required argument: config',
      ),
      'canary-l4 serve: unknown flag --confg, did you mean --config? (canary-l4 serve --help lists its flags)',
    );
  });
  test("any other failure keeps yargs's words and points at the command's help", () => {
    assert.equal(
      parseFailureMessage('canary-l4', ['serve'], COMMANDS, SERVE_FLAGS, 'Missing required argument: config'),
      'canary-l4 serve: Missing required argument: config\nRun canary-l4 serve --help for usage.',
    );
  });
});

describe('the command line', () => {
  const run = (...args: string[]) =>
    spawnSync(process.execPath, [MAIN, ...args], { encoding: 'utf8', timeout: 30_000 });
  test('a misspelt flag of serve: its line on stderr, exit 2', () => {
    const { status, stderr } = run('serve', '--confg', 'lb.yaml');
    assert.equal(
      stderr,
      'canary-l4 serve: unknown flag --confg, did you mean --config? (canary-l4 serve --help lists its flags)\n',
    );
    assert.equal(status, 2);
  });
  test("proxy's flags are its own: --release means --canary-release", () => {
    const { status, stderr } = run('proxy', '--release', 'web-v2', '--admin-prot', '9191');
    assert.equal(
      stderr,
      'canary-l4 proxy: unknown flag --release, did you mean --canary-release? (canary-l4 proxy --help lists its flags)\n' +
        'canary-l4 proxy: unknown flag --admin-prot, did you mean --admin-port? (canary-l4 proxy --help lists its flags)\n',
    );
    assert.equal(status, 2);
  });
});
