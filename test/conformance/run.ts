/**
 * `npm run test:conformance`: Gateway API's conformance suite for TCPRoute and UDPRoute against canary-l4, on
 * the real control plane. It builds what is missing (the control plane, test/cluster/build.ts; the suite,
 * build.ts), starts a cluster with its node and kube-proxy simulations (test/cluster/cluster.ts), installs the
 * Gateway API standard CRDs of the pinned release (from the Go module cache) and canary-l4 (`kubectl apply
 * --server-side -k deploy/`, as a platform team does), applies the GatewayClass `canary-l4`, runs the suite
 * (conformance_test.go) with the cluster's kubeconfig, and writes docs/conformance.md and the suite's raw
 * report, docs/conformance-report.yaml. Exits 1 when a claimed test did not pass, 2 when it could not run.
 *
 * ```sh
 * npm run test:conformance [-- --out DIR] [-- --keep]   # --out: where the two files go (docs/); --keep: leave the
 *                                                       # cluster's directory (logs, kubeconfig) in place
 * npm run test:conformance -- --real-node               # on two real nodes (test/cluster/README.md), the suite
 *                                                       # dialling from node 1's network namespace
 * ```
 */
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { GATEWAY_CONTROLLER_NAME } from '../../src/api/gateway/names.ts';
import { ensureBinaries } from '../cluster/build.ts';
import { startRealCluster, type RealCluster } from '../cluster/cluster.ts';
import { kubectlFor, type Kubectl } from '../support/cluster/api-fixtures.ts';
import { GATEWAY_API_VERSION, installGatewayApi } from '../support/gateway-api/crds.ts';
import { ensureSuiteBinary, MODULE_DIR } from './build.ts';
import { conformanceMarkdown } from './markdown.ts';
import { claimedFailures, readResults } from './results.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';

const addresses = loopbackRange(import.meta.url);

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const GATEWAY_CLASS = 'canary-l4';
/**
 * The run's budget for the suite (CONFORMANCE_BUDGET_MINUTES, default 20): a passing test takes seconds, a failing
 * one up to the suite's 300 s wait for its Gateway, so a broken implementation would hold CI for an hour and more.
 * At the budget the suite is stopped, and the tests it had not reached are listed as not run (so the run fails).
 */
const BUDGET_MINUTES = Number(process.env.CONFORMANCE_BUDGET_MINUTES ?? '20');
if (!Number.isFinite(BUDGET_MINUTES) || BUDGET_MINUTES <= 0) {
  console.error(
    `canary-l4 conformance: CONFORMANCE_BUDGET_MINUTES must be a positive number of minutes, got ${process.env.CONFORMANCE_BUDGET_MINUTES}`,
  );
  process.exit(2);
}
/** Go's own bound, past the budget: it would end the binary with a panic instead of the report. */
const SUITE_TIMEOUT = `${BUDGET_MINUTES + 10}m`;
/**
 * What a run takes on CI's 2 cores once the builds are cached (printed first, for .ci/run's 40-minute budget):
 * under a minute for the cluster and installs, about one for the suite's setup (its ~25 backend pods), then
 * seconds for each claimed test that passes and up to 5 min (the suite's wait for a Gateway) for one that fails,
 * within the budget; a GatewayClass never Accepted stops the suite after 180 s.
 */
const ESTIMATE = `about 5 min when the claimed tests pass; at most ${BUDGET_MINUTES + 2} min (the suite's budget) when they fail`;
const log = (line: string) => console.error(`canary-l4 conformance: ${line}`);

const { values } = parseArgs({
  options: { out: { type: 'string' }, keep: { type: 'boolean' }, 'real-node': { type: 'boolean' } },
});
const outDir = resolve(values.out ?? join(ROOT, 'docs'));
const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

const started = Date.now();
log(`expect ${ESTIMATE}, once the builds are cached`);
const seconds = (since: number) => Math.round((Date.now() - since) / 1000);

const clusterBuild = Date.now();
const binaries = await ensureBinaries(log);
log(`control plane binaries ready in ${seconds(clusterBuild)} s (${binaries.dir})`);
const suiteBuild = Date.now();
const suite = await ensureSuiteBinary(log);
log(`conformance suite ${suite.built ? `built in ${suite.buildSeconds} s` : 'cached'} (${suite.path})`);
// kubectl of the pinned release, as .ci/run puts it on PATH.
process.env.PATH = `${binaries.dir}:${process.env.PATH}`;
const buildSeconds = seconds(clusterBuild);
log(`builds took ${buildSeconds} s (the suite's ${seconds(suiteBuild)} s)`);

const dir = mkdtempSync(join(tmpdir(), 'canary-l4-conformance-'));
let cluster: RealCluster | undefined;
let kubectl: Kubectl | undefined;
let exitCode = 2;
try {
  const clusterStart = Date.now();
  cluster = await startRealCluster({
    dir,
    serviceCidr: addresses.cidr,
    podSubnet: addresses.octet,
    kubeProxy: true,
    realNode: values['real-node'] === true,
    log,
  });
  kubectl = await kubectlFor(cluster.plane);
  log(
    `cluster ready in ${seconds(clusterStart)} s: Kubernetes ${cluster.plane.kubernetesVersion}, logs in ${dir}/logs`,
  );
  log(
    `installed Gateway API ${GATEWAY_API_VERSION}'s standard CRDs: ${(await installGatewayApi(cluster.plane.kubeconfigPath)).length}`,
  );
  await installCanaryL4(kubectl, cluster.plane.kubeconfigPath);
  const runStart = Date.now();
  const { events, report, reportPath, budgetSpent } = await runSuite(
    suite.path,
    cluster.plane.kubeconfigPath,
    cluster.nodes?.[0]?.netns,
  );
  const runSeconds = seconds(runStart);
  const results = readResults(events, report);
  const failures = claimedFailures(results);
  exitCode = failures.length > 0 || results.setupFailure !== undefined ? 1 : 0;
  mkdirSync(outDir, { recursive: true });
  const markdownPath = join(outDir, 'conformance.md');
  const rawPath = join(outDir, 'conformance-report.yaml');
  if (report !== undefined) writeFileSync(rawPath, report);
  writeFileSync(
    markdownPath,
    conformanceMarkdown(results, {
      gatewayApiVersion: results.gatewayApiVersion ?? suite.gatewayApiVersion,
      kubernetesVersion: cluster.plane.kubernetesVersion,
      implementationVersion: version,
      date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      reportPath: report === undefined ? `(none written: ${reportPath})` : relative(outDir, rawPath),
      runSeconds,
      exitCode,
      stoppedAtBudgetMinutes: budgetSpent ? BUDGET_MINUTES : undefined,
    }),
  );
  log(
    `wrote ${relative(ROOT, markdownPath)}${report === undefined ? ' (the suite wrote no report)' : ` and ${relative(ROOT, rawPath)}`}`,
  );
  for (const test of results.tests)
    log(`${test.outcome.padEnd(7)} ${test.name}${test.why === '' ? '' : `: ${test.why}`}`);
  if (results.setupFailure !== undefined) log(`the suite stopped in its setup: ${results.setupFailure}`);
  log(
    `${failures.length === 0 && results.setupFailure === undefined ? 'every claimed test passed' : `${failures.length} claimed test(s) did not pass`}; ` +
      `the suite ran ${runSeconds} s, ${seconds(started)} s in all (builds ${buildSeconds} s)`,
  );
} catch (err) {
  log(`could not run: ${(err as Error).message}`);
} finally {
  await kubectl?.cleanup();
  await cluster?.stop();
  if (values.keep === true) log(`kept ${dir}`);
  else rmSync(dir, { recursive: true, force: true });
}
process.exit(exitCode);

/** deploy/ as a platform team applies it, the manager rolled out, and the GatewayClass the suite is given. */
async function installCanaryL4(kubectl: Kubectl, kubeconfig: string): Promise<void> {
  await kubectl('apply', '--server-side', '-k', join(ROOT, 'deploy'));
  // Longer than kubectlFor's 30 s bound on a call: the first pods of a fresh node take a while.
  await promisify(execFile)(
    'kubectl',
    ['--kubeconfig', kubeconfig, 'rollout', 'status', '-n', 'canary-l4-system', 'deployment/canary-l4-manager'].concat(
      '--timeout=180s',
    ),
    { timeout: 200_000, env: { ...process.env, HOME: kubectl.home } },
  );
  const gatewayClass = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'GatewayClass',
    metadata: { name: GATEWAY_CLASS },
    spec: { controllerName: GATEWAY_CONTROLLER_NAME },
  };
  await kubectl('apply', '--server-side', '-f', await kubectl.manifest('gatewayclass.yaml', gatewayClass));
  log(`installed canary-l4 ${version} (deploy/) and the GatewayClass ${GATEWAY_CLASS} (${GATEWAY_CONTROLLER_NAME})`);
}

/** The suite under test2json: its events (also streamed, as `go test -v` prints them) and its report. */
async function runSuite(
  binary: string,
  kubeconfig: string,
  /** A real node's network namespace, where the suite then dials the Gateways' cluster IPs from. */
  netns: string | undefined,
): Promise<{ events: string; report: string | undefined; reportPath: string; budgetSpent: boolean }> {
  const reportPath = join(dir, 'conformance-report.yaml');
  const args = [
    'tool',
    'test2json',
    '-t',
    binary,
    '-test.v=test2json',
    '-test.run',
    '^TestConformance$',
    `-test.timeout=${SUITE_TIMEOUT}`,
    '-gateway-class',
    GATEWAY_CLASS,
    '-report-output',
    reportPath,
    '-version',
    version,
  ];
  log(`running the suite: go ${args.join(' ')}`);
  // Its own process group, so that the budget stops the suite binary too, not only `go tool test2json`.
  const command = netns === undefined ? ['go', ...args] : ['ip', 'netns', 'exec', netns, 'go', ...args];
  const child = spawn(command[0]!, command.slice(1), {
    cwd: MODULE_DIR,
    env: { ...process.env, KUBECONFIG: kubeconfig },
    stdio: ['ignore', 'pipe', 'inherit'],
    detached: true,
  });
  let budgetSpent = false;
  const budget = setTimeout(() => {
    budgetSpent = true;
    log(`the run's budget of ${BUDGET_MINUTES} min is spent: stopping the suite`);
    process.kill(-child.pid!, 'SIGTERM');
  }, BUDGET_MINUTES * 60_000);
  let events = '';
  let pending = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    events += chunk;
    pending += chunk;
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) {
      const output = (() => {
        try {
          return (JSON.parse(line) as { Output?: string }).Output;
        } catch {
          return `${line}\n`;
        }
      })();
      if (output !== undefined) process.stdout.write(output);
    }
  });
  const code = await new Promise<number | null>((resolveExit) => child.once('exit', resolveExit));
  clearTimeout(budget);
  log(`the suite exited ${code}`);
  let report: string | undefined;
  try {
    report = readFileSync(reportPath, 'utf8');
  } catch {
    report = undefined;
  }
  return { events, report, reportPath, budgetSpent };
}
