/**
 * What a run of the conformance suite says, read from its two outputs (pure: text in, a model out): the
 * `go test` event stream (test2json's JSON lines) for each test's outcome and the words of its failure or skip,
 * and the suite's ConformanceReport YAML for the profiles' verdicts. conformance_test.go logs which tests canary-l4
 * claims (`canary-l4: claims NAME`) and which it skips for needing HTTP (`canary-l4: skipping NAME: needs HTTP:
 * WHY`), so a setup that fails before any test runs still names every claimed test as not run.
 */
import { parse } from 'yaml';

/** One line of `go tool test2json`. */
export interface TestEvent {
  readonly Action: string;
  readonly Test?: string;
  readonly Output?: string;
  readonly Elapsed?: number;
}

export type Outcome = 'passed' | 'failed' | 'skipped' | 'not run';

export interface TestResult {
  readonly name: string;
  readonly outcome: Outcome;
  /** Why it failed (the suite's own error lines) or was skipped; empty when it passed. */
  readonly why: string;
  readonly seconds: number;
  /** Claimed supported: its failure fails the run. */
  readonly claimed: boolean;
}

export interface ProfileResult {
  readonly name: string;
  readonly core: string;
  readonly extended: string | undefined;
  readonly summary: string;
}

export interface RunResults {
  /** The claimed tests and those skipped for HTTP, in the suite's order. */
  readonly tests: readonly TestResult[];
  /** How many tests of features canary-l4 does not claim the suite did not run. */
  readonly notSupported: number;
  /** Why the suite stopped before its tests, if it did (its setup's error lines). */
  readonly setupFailure: string | undefined;
  readonly profiles: readonly ProfileResult[];
  readonly gatewayApiVersion: string | undefined;
  readonly gatewayApiChannel: string | undefined;
}

const ROOT = 'TestConformance';
const CLAIM = /canary-l4: claims (\S+)/;
const HTTP_SKIP = /canary-l4: skipping (\S+): (needs HTTP: .*)/;
const SUITE_SKIP = /Skipping \S+: (.*)/;
const CONTINUED = /^\s*\t +\t(.*)$/;
const MAX_WHY = 400;

/** test2json's lines (anything else, e.g. a build's words, is ignored). */
export function parseEvents(text: string): TestEvent[] {
  return text.split('\n').flatMap((line) => {
    if (!line.startsWith('{')) return [];
    try {
      return [JSON.parse(line) as TestEvent];
    } catch {
      return [];
    }
  });
}

/**
 * The failure's own words from a test's output: testify's `Error:` and `Messages:` blocks, else the last
 * `file.go:N:` line (t.Errorf, t.Fatalf); one line, at most MAX_WHY characters.
 */
export function failureWords(output: readonly string[]): string {
  const lines = output.join('').split('\n');
  const blocks: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const start = /^\s*\t(Error|Messages):\s*\t(.*)$/.exec(lines[i]!);
    if (start === null) continue;
    const words = [start[2]!.trim()];
    // testify writes a block's further lines with the label's column blank: `\t            \t<words>`.
    for (let more = CONTINUED.exec(lines[i + 1] ?? ''); more !== null; more = CONTINUED.exec(lines[i + 1] ?? '')) {
      words.push(more[1]!.trim());
      i++;
    }
    blocks.push(words.filter(Boolean).join(' '));
  }
  const unique = [...new Set(blocks.filter(Boolean))];
  const fallback = lines.filter((line) => /^\s+\S+\.go:\d+: /.test(line)).at(-1);
  const words = unique.length > 0 ? unique.join('; ') : (fallback?.replace(/^\s+\S+\.go:\d+: /, '').trim() ?? 'failed');
  return words.length > MAX_WHY ? `${words.slice(0, MAX_WHY - 1)}…` : words;
}

export function readResults(eventsText: string, reportYaml: string | undefined): RunResults {
  const events = parseEvents(eventsText);
  const output = new Map<string, string[]>();
  const action = new Map<string, TestEvent>();
  const order: string[] = [];
  for (const event of events) {
    const test = event.Test;
    if (test === undefined) continue;
    if (event.Action === 'output') (output.get(test) ?? output.set(test, []).get(test)!).push(event.Output ?? '');
    else if (['pass', 'fail', 'skip'].includes(event.Action)) action.set(test, event);
    else if (event.Action === 'run' && !order.includes(test)) order.push(test);
  }
  const rootOutput = (output.get(ROOT) ?? []).join('');
  const claimed = [...rootOutput.matchAll(new RegExp(CLAIM, 'g'))].map((match) => match[1]!);
  const httpSkips = new Map(
    [...rootOutput.matchAll(new RegExp(HTTP_SKIP, 'g'))].map((match) => [match[1]!, match[2]!] as const),
  );
  const ran = order.filter((test) => test.startsWith(`${ROOT}/`) && test.split('/').length === 2);
  const listed = [...new Set([...ran.map((test) => test.slice(ROOT.length + 1)), ...claimed, ...httpSkips.keys()])];
  let notSupported = 0;
  const tests: TestResult[] = [];
  for (const name of listed) {
    const key = `${ROOT}/${name}`;
    const lines = output.get(key) ?? [];
    const end = action.get(key);
    const skipWords = SUITE_SKIP.exec(lines.join(''))?.[1]?.trim() ?? '';
    if (!claimed.includes(name) && !httpSkips.has(name) && skipWords.startsWith('suite does not support')) {
      notSupported++;
      continue;
    }
    const seconds = end?.Elapsed ?? 0;
    // A test skipped for HTTP is skipped whether or not the suite got to it.
    const outcome: Outcome = httpSkips.has(name)
      ? 'skipped'
      : end === undefined
        ? 'not run'
        : end.Action === 'pass'
          ? 'passed'
          : end.Action === 'fail'
            ? 'failed'
            : 'skipped';
    const why =
      outcome === 'failed'
        ? failureWords(subtestOutput(output, key))
        : outcome === 'skipped'
          ? (httpSkips.get(name) ?? skipWords)
          : outcome === 'not run'
            ? 'the suite stopped before it'
            : '';
    tests.push({ name, outcome, why, seconds, claimed: claimed.includes(name) });
  }
  const rootEnd = action.get(ROOT);
  const claimedRan = ran.some((test) => claimed.includes(test.slice(ROOT.length + 1)));
  const setupFailure =
    rootEnd?.Action === 'fail' && !claimedRan
      ? failureWords(output.get(ROOT) ?? [])
      : rootEnd === undefined && events.length > 0 && !claimedRan
        ? 'the suite ended before its tests, with no verdict (killed, or timed out)'
        : undefined;
  const report = reportYaml === undefined ? undefined : (parse(reportYaml) as ConformanceReport | null);
  return {
    tests,
    notSupported,
    setupFailure,
    profiles: (report?.profiles ?? []).map((profile) => ({
      name: profile.name,
      core: profile.core?.result ?? 'unknown',
      extended: profile.extended?.result,
      summary: profile.summary ?? '',
    })),
    gatewayApiVersion: report?.gatewayAPIVersion,
    gatewayApiChannel: report?.gatewayAPIChannel,
  };
}

/** A test's output with its subtests', in the order written (the suite's assertions run in subtests). */
function subtestOutput(output: ReadonlyMap<string, string[]>, key: string): string[] {
  return [...output].filter(([test]) => test === key || test.startsWith(`${key}/`)).flatMap(([, lines]) => lines);
}

/** The claimed tests that did not pass: any fails the run. */
export function claimedFailures(results: RunResults): TestResult[] {
  return results.tests.filter((test) => test.claimed && test.outcome !== 'passed');
}

interface ConformanceReport {
  gatewayAPIVersion?: string;
  gatewayAPIChannel?: string;
  profiles?: {
    name: string;
    summary?: string;
    core?: { result?: string };
    extended?: { result?: string };
  }[];
}
