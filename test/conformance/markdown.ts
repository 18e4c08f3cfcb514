/**
 * docs/conformance.md from a run's results (pure): the versions and date, the profiles' verdicts, and each test
 * canary-l4 claims or skips with its outcome and why.
 */
import type { RunResults, TestResult } from './results.ts';

export interface RunFacts {
  readonly gatewayApiVersion: string;
  readonly kubernetesVersion: string;
  readonly implementationVersion: string;
  /** RFC 3339. */
  readonly date: string;
  /** The raw ConformanceReport YAML, relative to docs/. */
  readonly reportPath: string;
  readonly runSeconds: number;
  readonly exitCode: number;
  /** Set when the run stopped the suite at its budget (minutes). */
  readonly stoppedAtBudgetMinutes?: number | undefined;
}

const OUTCOME: Record<TestResult['outcome'], string> = {
  passed: 'passed',
  failed: '**failed**',
  skipped: 'skipped',
  'not run': '**not run**',
};

/** A table cell: one line, its pipes escaped. */
const cell = (text: string) => text.replaceAll('\n', ' ').replaceAll('|', '\\|');

export function conformanceMarkdown(results: RunResults, facts: RunFacts): string {
  const passed = results.tests.filter((test) => test.outcome === 'passed').length;
  const failed = results.tests.filter((test) => test.claimed && test.outcome !== 'passed').length;
  const skipped = results.tests.filter((test) => !test.claimed).length;
  const lines = [
    '# Gateway API conformance',
    '',
    '<!-- Written by `npm run test:conformance` (test/conformance/run.ts); CI runs it. Do not edit by hand. -->',
    '',
    "canary-l4's run of Gateway API's own conformance suite (`sigs.k8s.io/gateway-api/conformance`) for the",
    'GATEWAY-TCP and GATEWAY-UDP profiles, on the real control plane of test/cluster/ with canary-l4 installed by',
    '`kubectl apply -k deploy/` (test/conformance/README.md says how, and what is simulated).',
    '',
    '| | |',
    '| --- | --- |',
    `| Gateway API | ${facts.gatewayApiVersion}${results.gatewayApiChannel === undefined ? '' : ` (${results.gatewayApiChannel} channel)`} |`,
    `| Kubernetes | ${facts.kubernetesVersion} |`,
    `| canary-l4 | ${facts.implementationVersion} |`,
    `| Date | ${facts.date} |`,
    `| Result | ${facts.exitCode === 0 ? 'every claimed test passed' : `**${failed} claimed test(s) did not pass**`}: ${passed} passed, ${failed} failed or not run, ${skipped} skipped (need HTTP) |`,
    `| Run time | ${Math.round(facts.runSeconds)} s |`,
    `| Raw report | [${facts.reportPath}](${facts.reportPath}) (the suite's ConformanceReport YAML) |`,
    '',
  ];
  if (facts.stoppedAtBudgetMinutes !== undefined)
    lines.push(
      `The run's budget of ${facts.stoppedAtBudgetMinutes} min for the suite was spent: it was stopped, so the tests`,
      'it had not reached are not run, and the suite wrote no report.',
      '',
    );
  else if (results.setupFailure !== undefined)
    lines.push(`The suite stopped in its setup, before any test: ${cell(results.setupFailure)}`, '');
  lines.push('## Profiles', '');
  if (results.profiles.length === 0) lines.push('The report has no profile: no test ran.', '');
  else {
    lines.push('| Profile | Core | Extended | Summary |', '| --- | --- | --- | --- |');
    for (const profile of results.profiles)
      lines.push(`| ${profile.name} | ${profile.core} | ${profile.extended ?? '—'} | ${cell(profile.summary)} |`);
    lines.push('');
  }
  lines.push(
    '## Tests',
    '',
    'Claimed: the TCPRoute and UDPRoute tests, and the core Gateway tests that need no HTTP listener. Skipped: the',
    'tests of the claimed features that need HTTP or HTTPS listeners served (one TCPRoute test among them: its',
    'HTTP-only Gateway must be Accepted first), which canary-l4 (L4 only) does not serve; the report counts them as',
    'skipped, so the profiles are at best Partial.',
    '',
    '| Test | Claimed | Result | Time | Why |',
    '| --- | --- | --- | --- | --- |',
  );
  for (const test of results.tests)
    lines.push(
      `| ${test.name} | ${test.claimed ? 'yes' : 'no'} | ${OUTCOME[test.outcome]} | ${test.outcome === 'passed' || test.outcome === 'failed' ? `${test.seconds.toFixed(1)} s` : '—'} | ${cell(test.why)} |`,
    );
  const others = results.notSupported > 0 ? `${results.notSupported} more tests` : "The suite's other tests";
  lines.push(
    '',
    `${others} are for features canary-l4 does not claim (HTTPRoute, GRPCRoute, TLSRoute, BackendTLSPolicy,`,
    'ListenerSet, Mesh, …): the suite does not run them.',
    '',
  );
  return lines.join('\n');
}
