// A run's two outputs read as run.ts reads them (results.ts) and written as docs/conformance.md (markdown.ts):
// test2json events as the suite binary prints them, a ConformanceReport as the suite writes it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { conformanceMarkdown } from './markdown.ts';
import { claimedFailures, failureWords, readResults } from './results.ts';

const event = (Action: string, Test?: string, Output?: string, Elapsed?: number) =>
  JSON.stringify({ Action, Package: 'command-line-arguments', ...(Test ? { Test } : {}), Output, Elapsed });

const preamble = [
  event('run', 'TestConformance'),
  event('output', 'TestConformance', '    conformance_test.go:101: canary-l4: claims TCPRouteWeightedRouting\n'),
  event('output', 'TestConformance', '    conformance_test.go:101: canary-l4: claims UDPRoute\n'),
  event(
    'output',
    'TestConformance',
    '    conformance_test.go:104: canary-l4: skipping GatewayModifyListeners: needs HTTP: its Gateways have HTTP listeners\n',
  ),
];

const testifyFailure = [
  '    helpers.go:312: \n',
  '        \tError Trace:\t/x/helpers.go:312\n',
  '        \tError:      \tReceived unexpected error:\n',
  '        \t            \tcontext deadline exceeded: 2 pods not ready\n',
  '        \tTest:       \tTestConformance/UDPRoute\n',
  '        \tMessages:   \terror waiting for gateway-conformance-infra namespaces to be ready\n',
];

const fullRun = [
  ...preamble,
  event('run', 'TestConformance/HTTPRouteSimple'),
  event(
    'output',
    'TestConformance/HTTPRouteSimple',
    '    conformance.go:56: Skipping HTTPRouteSimple: suite does not support HTTPRoute\n',
  ),
  event('skip', 'TestConformance/HTTPRouteSimple', undefined, 0),
  event('run', 'TestConformance/GatewayModifyListeners'),
  event(
    'output',
    'TestConformance/GatewayModifyListeners',
    '    conformance.go:68: Skipping GatewayModifyListeners: test explicitly skipped\n',
  ),
  event('skip', 'TestConformance/GatewayModifyListeners', undefined, 0),
  event('run', 'TestConformance/TCPRouteWeightedRouting'),
  event('pass', 'TestConformance/TCPRouteWeightedRouting', undefined, 12.5),
  event('run', 'TestConformance/UDPRoute'),
  event('run', 'TestConformance/UDPRoute/Simple_UDP_request'),
  ...testifyFailure.map((line) => event('output', 'TestConformance/UDPRoute/Simple_UDP_request', line)),
  event('fail', 'TestConformance/UDPRoute/Simple_UDP_request', undefined, 300),
  event('fail', 'TestConformance/UDPRoute', undefined, 300.2),
  event('fail', 'TestConformance', undefined, 320),
].join('\n');

const report = `apiVersion: gateway.networking.k8s.io/v1
kind: ConformanceReport
gatewayAPIChannel: standard
gatewayAPIVersion: v1.6.3
profiles:
- core:
    result: failure
    statistics: {Failed: 1, Passed: 0, Skipped: 1}
  extended:
    result: success
    statistics: {Failed: 0, Passed: 0, Skipped: 0}
  name: GATEWAY-UDP
  summary: Core tests failed with 1 test failures.
`;

describe('reading a conformance run', () => {
  it('each claimed or skipped test with its outcome and why; unclaimed features counted, not listed', () => {
    const results = readResults(fullRun, report);
    assert.deepEqual(
      results.tests.map(({ name, outcome, claimed }) => [name, outcome, claimed]),
      [
        ['GatewayModifyListeners', 'skipped', false],
        ['TCPRouteWeightedRouting', 'passed', true],
        ['UDPRoute', 'failed', true],
      ],
    );
    assert.equal(results.notSupported, 1);
    assert.equal(results.tests[0]!.why, 'needs HTTP: its Gateways have HTTP listeners');
    assert.equal(
      results.tests[2]!.why,
      'Received unexpected error: context deadline exceeded: 2 pods not ready; error waiting for gateway-conformance-infra namespaces to be ready',
    );
    assert.equal(results.tests[1]!.seconds, 12.5);
    assert.equal(results.setupFailure, undefined);
    assert.deepEqual(results.profiles, [
      { name: 'GATEWAY-UDP', core: 'failure', extended: 'success', summary: 'Core tests failed with 1 test failures.' },
    ]);
    assert.equal(results.gatewayApiVersion, 'v1.6.3');
  });

  it('a claimed test that fails fails the run; a skipped unclaimed one does not', () => {
    assert.deepEqual(
      claimedFailures(readResults(fullRun, report)).map((test) => test.name),
      ['UDPRoute'],
    );
    const allPass = fullRun.replace(
      /"Action":"fail","Package":"command-line-arguments","Test":"TestConformance\/UDPRoute"/g,
      '"Action":"pass","Package":"command-line-arguments","Test":"TestConformance/UDPRoute"',
    );
    assert.deepEqual(claimedFailures(readResults(allPass, report)), []);
  });

  it('a setup that fails before any test: its words, and every claimed test not run (a failure)', () => {
    const setup = [
      ...preamble,
      ...testifyFailure.map((line) => event('output', 'TestConformance', line.replace('UDPRoute', ''))),
      event('fail', 'TestConformance', undefined, 180),
    ].join('\n');
    const results = readResults(setup, undefined);
    assert.equal(
      results.setupFailure,
      'Received unexpected error: context deadline exceeded: 2 pods not ready; error waiting for gateway-conformance-infra namespaces to be ready',
    );
    assert.deepEqual(
      results.tests.map((test) => [test.name, test.outcome]),
      [
        ['TCPRouteWeightedRouting', 'not run'],
        ['UDPRoute', 'not run'],
        ['GatewayModifyListeners', 'skipped'],
      ],
    );
    assert.deepEqual(
      claimedFailures(results).map((test) => [test.name, test.outcome]),
      [
        ['TCPRouteWeightedRouting', 'not run'],
        ['UDPRoute', 'not run'],
      ],
    );
    assert.deepEqual(results.profiles, []);
  });

  it('a suite stopped at the budget mid-test: that test and those after it not run, no setup failure', () => {
    const stopped = [
      ...preamble,
      event('run', 'TestConformance/TCPRouteWeightedRouting'),
      event('pass', 'TestConformance/TCPRouteWeightedRouting', undefined, 6),
      event('run', 'TestConformance/UDPRoute'),
      event('output', 'TestConformance/UDPRoute', '    helpers.go:273: Gateway not Accepted yet\n'),
    ].join('\n');
    const results = readResults(stopped, undefined);
    assert.equal(results.setupFailure, undefined);
    assert.deepEqual(
      claimedFailures(results).map((test) => [test.name, test.outcome, test.why]),
      [['UDPRoute', 'not run', 'the suite stopped before it']],
    );
    const text = conformanceMarkdown(results, {
      gatewayApiVersion: 'v1.6.3',
      kubernetesVersion: 'v1.37.2',
      implementationVersion: '0.3.0',
      date: '2026-12-03T14:00:00Z',
      reportPath: 'conformance-report.yaml',
      runSeconds: 1200,
      exitCode: 1,
      stoppedAtBudgetMinutes: 20,
    });
    assert.match(text, /The run's budget of 20 min for the suite was spent/);
  });

  it("a failure without testify's blocks: the last file.go:N: line", () => {
    assert.equal(
      failureWords([
        '    tcproute.go:80: progress\n',
        '    tcproute.go:90: TCP weighted distribution did not converge\n',
      ]),
      'TCP weighted distribution did not converge',
    );
  });
});

describe('docs/conformance.md', () => {
  it('the versions, the verdict, the profiles and a row per test with why', () => {
    const text = conformanceMarkdown(readResults(fullRun, report), {
      gatewayApiVersion: 'v1.6.3',
      kubernetesVersion: 'v1.37.2',
      implementationVersion: '0.3.0',
      date: '2026-12-03T14:00:00Z',
      reportPath: 'conformance-report.yaml',
      runSeconds: 321,
      exitCode: 1,
    });
    assert.match(text, /\| Gateway API \| v1\.6\.3 \(standard channel\) \|/);
    assert.match(text, /\| Kubernetes \| v1\.37\.2 \|/);
    assert.match(text, /\*\*1 claimed test\(s\) did not pass\*\*: 1 passed, 1 failed or not run, 1 skipped/);
    assert.match(text, /\| GATEWAY-UDP \| failure \| success \|/);
    assert.match(
      text,
      /\| UDPRoute \| yes \| \*\*failed\*\* \| 300\.2 s \| Received unexpected error: context deadline exceeded: 2 pods not ready;/,
    );
    assert.match(text, /\| GatewayModifyListeners \| no \| skipped \| — \| needs HTTP: /);
    assert.match(text, /\[conformance-report\.yaml\]\(conformance-report\.yaml\)/);
    assert.match(text, /1 more tests are for features canary-l4 does not claim/);
  });
});
