// `npm run bench [-- --quick] [--workers N] [--repeats N] [--seconds N] [--only a,b] [--proxies a,b]
//   [--baseline DIR] [--node PATH] [--node-flags "..."] [--env "A=1 …"] [--baseline-node PATH] [--baseline-node-flags "..."]
//   [--baseline-env "..."]`; `--only analysis [--releases N] [--seed N]`
//   is the analysis' operating characteristics instead (analysis.ts).
// Side-by-side benchmark of canary-l4 against nginx's stream module and HAProxy on loopback.
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, release, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { ensureInstalled, type Tool } from './install.ts';
import { startBackends } from './backends.ts';
import {
  CANARY_MIRROR,
  CANARY_NO_METRICS,
  PROXY_NAMES,
  startProxy,
  type CanaryRuns,
  type ProxyName,
  type ProxyVariant,
  type RunningProxy,
} from './proxies.ts';
import { killAllChildren, type Child } from './processes.ts';
import { measureWhile } from './proc-usage.ts';
import {
  isStandalone,
  MAIN_WORKLOADS,
  perCpuSecondKey,
  type AnyWorkload,
  type StandaloneWorkload,
  type Workload,
  type WorkloadContext,
} from './workloads.ts';
import { writeQueryFile } from './dns-server.ts';
import { EXTRA_WORKLOADS } from './extras.ts';
import { runAnalysisBench } from './analysis.ts';
import { footprint } from './footprint.ts';
import { PROJECT_NODE, PROJECT_ROOT } from './paths.ts';
import { imageSettings, nodeBinary, parseEnv, type CanarySettings } from './image-settings.ts';
import { markdownTable, metricsOf, summarize, writeResultsJson, type Measurement } from './report.ts';

const ALL_WORKLOADS: readonly AnyWorkload[] = [...MAIN_WORKLOADS, ...EXTRA_WORKLOADS, footprint];
/** Lets sockets in TIME_WAIT and CPU frequency settle between two measurements. */
const PAUSE_BETWEEN_RUNS_MS = 100;

interface Options {
  readonly quick: boolean;
  readonly workers: number;
  readonly repeats: number;
  readonly seconds: number;
  readonly workloads: readonly AnyWorkload[];
  readonly proxies: readonly ProxyName[];
  readonly canary: CanaryRuns;
}

function positiveInteger(flag: string, text: string | undefined, fallback: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${flag} must be a positive integer, got "${text}"`);
  return value;
}

function pickByName<T>(
  flag: string,
  text: string | undefined,
  all: readonly T[],
  nameOf: (item: T) => string,
  groupOf: (item: T) => string | undefined = () => undefined,
): T[] {
  if (text === undefined) return [...all];
  return text.split(',').flatMap((name) => {
    const found = all.filter((item) => nameOf(item) === name.trim() || groupOf(item) === name.trim());
    if (found.length === 0) throw new Error(`--${flag}: unknown "${name}"; one of ${all.map(nameOf).join(', ')}`);
    return found;
  });
}

function parseOptions(argv: readonly string[]): Options {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      quick: { type: 'boolean', default: false },
      workers: { type: 'string' },
      repeats: { type: 'string' },
      seconds: { type: 'string' },
      only: { type: 'string' },
      proxies: { type: 'string' },
      baseline: { type: 'string' },
      node: { type: 'string' },
      'baseline-node': { type: 'string' },
      'node-flags': { type: 'string' },
      'baseline-node-flags': { type: 'string' },
      env: { type: 'string' },
      'baseline-env': { type: 'string' },
    },
  });
  // Each left out is as the image runs it (deploy/Dockerfile), on the project's Node.
  const image = imageSettings();
  const settings = (prefix: '' | 'baseline-'): CanarySettings => {
    const [node, flags, env] = [values[`${prefix}node`], values[`${prefix}node-flags`], values[`${prefix}env`]];
    return {
      node: nodeBinary(`${prefix}node`, node === undefined ? PROJECT_NODE : resolve(node)),
      nodeFlags: flags === undefined ? image.nodeFlags : flags.split(/\s+/).filter((flag) => flag !== ''),
      env: env === undefined ? image.env : parseEnv(`${prefix}env`, env),
    };
  };
  const baselineRoot = values.baseline === undefined ? undefined : resolve(values.baseline);
  const defaultProxies = PROXY_NAMES.filter((name) => name !== 'baseline' || baselineRoot !== undefined);
  return {
    quick: values.quick,
    workers: positiveInteger('workers', values.workers, 1),
    repeats: positiveInteger('repeats', values.repeats, values.quick ? 1 : 3),
    seconds: positiveInteger('seconds', values.seconds, values.quick ? 2 : 3),
    workloads: pickByName(
      'only',
      values.only,
      ALL_WORKLOADS,
      (workload) => workload.name,
      (workload) => workload.group,
    ),
    proxies: pickByName('proxies', values.proxies, defaultProxies, (name) => name),
    canary: {
      settings: settings(''),
      baselineRoot,
      baselineSettings: settings('baseline-'),
    },
  };
}

function toolsNeeded(options: Options): Tool[] {
  const tools: Tool[] = ['iperf3', 'wrk', 'sockperf', 'dnsperf', 'knot'];
  if (options.proxies.includes('nginx')) tools.push('nginx', 'nginxStream');
  if (options.proxies.includes('haproxy')) tools.push('haproxy');
  return tools;
}

function toolVersions(): Record<string, string> {
  const firstLine = (command: string, flag: string): string => {
    const result = spawnSync(command, [flag], { encoding: 'utf8' });
    return `${result.stdout ?? ''}${result.stderr ?? ''}`.trim().split('\n')[0] ?? 'unknown';
  };
  return {
    nginx: firstLine('nginx', '-v'),
    haproxy: firstLine('haproxy', '-v'),
    iperf3: firstLine('iperf3', '-v'),
    wrk: firstLine('wrk', '-v'),
    sockperf: firstLine('sockperf', '--version'),
    dnsperf: firstLine('dnsperf', '-h'),
    knot: firstLine('knotd', '--version'),
    node: process.version,
  };
}

function describe(values: Readonly<Record<string, number>>): string {
  return Object.entries(values)
    .map(([key, value]) => `${key}=${Number.isInteger(value) ? value : value.toFixed(2)}`)
    .join(' ');
}

/** Rotating the order per repetition keeps "who ran first" from biasing one proxy. */
function rotate<T>(items: readonly T[], by: number): T[] {
  const shift = items.length === 0 ? 0 : by % items.length;
  return [...items.slice(shift), ...items.slice(0, shift)];
}

/** Why a figure would be meaningless: a proxy or a backend that is not running any more. */
function deathReport(proxyName: ProxyVariant, proxy: RunningProxy, backends: readonly Child[]): string | undefined {
  const proxyExit = proxy.exitReport();
  if (proxyExit !== undefined) return `${proxyName} exited: ${proxyExit}`;
  const deadBackend = backends.find((backend) => backend.exited());
  return deadBackend === undefined ? undefined : `backend "${deadBackend.name}" exited: ${deadBackend.outputTail()}`;
}

async function measureOnce(
  workload: Workload,
  proxyName: ProxyVariant,
  context: WorkloadContext,
  backends: readonly Child[],
): Promise<Measurement> {
  const base = { repetition: context.repetition, workload: workload.name, proxy: proxyName };
  const proxy = context.proxies.get(proxyName) ?? new Error('not started');
  if (proxy instanceof Error) return { ...base, values: {}, error: `did not start: ${proxy.message}` };
  const deadBefore = deathReport(proxyName, proxy, backends);
  if (deadBefore !== undefined) return { ...base, values: {}, error: deadBefore };
  try {
    const pid = workload.recordsUsage ? proxy.pid : undefined;
    const { result, usage } = await measureWhile(pid, () => workload.run(proxy, context));
    const values: Record<string, number> =
      usage === undefined ? result : { ...result, cpuPercent: usage.cpuPercent, peakRssMiB: usage.peakRssKiB / 1024 };
    // Work per second of the proxy's own CPU: what it would do with a core to itself.
    const rate = workload.efficiencyOf === undefined ? undefined : values[workload.efficiencyOf];
    if (usage !== undefined && rate !== undefined && usage.cpuPercent > 0)
      values[perCpuSecondKey(workload.efficiencyOf!)] = rate / (usage.cpuPercent / 100);
    // Something that died mid-run makes any figure meaningless (UDP would just show 0 round trips).
    const deadDuring = deathReport(proxyName, proxy, backends);
    return deadDuring === undefined ? { ...base, values } : { ...base, values: {}, error: deadDuring };
  } catch (error) {
    const message = deathReport(proxyName, proxy, backends) ?? (error instanceof Error ? error.message : String(error));
    return { ...base, values: {}, error: message };
  }
}

/** A workload that starts its own canary-l4 processes, from this checkout or the baseline's. */
async function measureAlone(
  workload: StandaloneWorkload,
  proxyName: ProxyVariant,
  repetition: number,
  canary: CanaryRuns,
): Promise<Measurement> {
  const base = { repetition, workload: workload.name, proxy: proxyName };
  const baseline = proxyName === 'baseline';
  if (baseline && canary.baselineRoot === undefined)
    return { ...base, values: {}, error: '--baseline DIR names the checkout to compare with' };
  try {
    const values = await workload.runAlone(
      baseline ? canary.baselineRoot! : PROJECT_ROOT,
      baseline ? canary.baselineSettings : canary.settings,
    );
    return { ...base, values };
  } catch (error) {
    return { ...base, values: {}, error: error instanceof Error ? error.message : String(error) };
  }
}

async function main(): Promise<void> {
  // The analysis' operating characteristics: a pure simulation, no proxy, no tool to install.
  if (
    parseArgs({ args: process.argv.slice(2), options: { only: { type: 'string' } }, strict: false }).values.only ===
    'analysis'
  ) {
    runAnalysisBench(process.argv.slice(2));
    return;
  }
  const options = parseOptions(process.argv.slice(2));
  const startedAt = new Date();
  // Standalone workloads alone need no tool, backend or proxy.
  const needsProxies = options.workloads.some((workload) => !isStandalone(workload));
  if (needsProxies) ensureInstalled(toolsNeeded(options));
  const scratch = mkdtempSync(join(tmpdir(), 'canary-l4-bench-'));
  process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));

  if (needsProxies)
    console.log(
      `Starting backends (iperf3, 2 HTTP, 2 sockperf servers, knotd) and proxies: ${options.proxies.join(', ')} with ${options.workers} worker(s)`,
    );
  const backends = needsProxies ? await startBackends(scratch) : [];
  const dnsQueryFile = writeQueryFile(scratch);
  const variants: ProxyVariant[] = needsProxies ? [...options.proxies] : [];
  const wanted = (workload: string) =>
    options.proxies.includes('canary-l4') && options.workloads.some((item) => item.name === workload);
  if (wanted('metrics-cost')) variants.push(CANARY_NO_METRICS);
  if (wanted('mirror-cost')) variants.push(CANARY_MIRROR);
  const proxies = new Map<ProxyVariant, RunningProxy | Error>();
  const start = async (name: ProxyVariant): Promise<void> => {
    const proxy = await startProxy(name, options.workers, scratch, options.canary).catch((error: unknown) =>
      error instanceof Error ? error : new Error(String(error)),
    );
    proxies.set(name, proxy);
    if (proxy instanceof Error) console.log(`  ${name}: FAILED to start — ${proxy.message.split('\n')[0]}`);
  };
  for (const name of variants) await start(name);

  const measurements: Measurement[] = [];
  for (let repetition = 0; repetition < options.repeats; repetition++) {
    const context: WorkloadContext = { seconds: options.seconds, repetition, proxies, dnsQueryFile };
    for (const workload of options.workloads) {
      for (const proxyName of rotate(options.proxies.filter(workload.appliesTo), repetition)) {
        const startedRunAt = performance.now();
        const current = proxies.get(proxyName);
        if (!isStandalone(workload) && workload.freshProxy && current !== undefined && !(current instanceof Error)) {
          await current.stop();
          await start(proxyName);
        }
        const measurement = isStandalone(workload)
          ? await measureAlone(workload, proxyName, repetition, options.canary)
          : await measureOnce(workload, proxyName, context, backends);
        measurements.push(measurement);
        const outcome =
          measurement.error === undefined
            ? describe(measurement.values)
            : `FAILED: ${measurement.error.split('\n')[0]}`;
        const took = ((performance.now() - startedRunAt) / 1_000).toFixed(1);
        console.log(`[${repetition + 1}/${options.repeats}] ${workload.name} · ${proxyName}: ${outcome} (${took} s)`);
        await sleep(PAUSE_BETWEEN_RUNS_MS);
      }
    }
  }

  for (const proxy of proxies.values()) if (!(proxy instanceof Error)) await proxy.stop();
  for (const backend of backends) await backend.stop();

  const columns = options.proxies.filter((name) => measurements.some((m) => m.proxy === name));
  const summary = summarize(options.workloads, columns, measurements);
  const { settings, baselineRoot, baselineSettings } = options.canary;
  const runtimes = `canary-l4 on Node ${settings.node.version}${baselineRoot === undefined ? '' : `, baseline on Node ${baselineSettings.node.version}`}`;
  const heading = `## canary-l4 vs nginx stream vs HAProxy — ${startedAt.toISOString()}, ${cpus().length} CPUs, ${options.workers} worker(s) each, ${options.repeats} repetition(s) of ${options.seconds} s, ${runtimes}`;
  console.log(`\n${markdownTable(heading, columns, summary, measurements)}\n`);
  const file = writeResultsJson(
    {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      command: process.argv.slice(2),
      options: { ...options, workloads: options.workloads.map((workload) => workload.name) },
      machine: { cpus: cpus().length, cpuModel: cpus()[0]?.model, kernel: release() },
      tools: toolVersions(),
      metrics: Object.fromEntries(options.workloads.map((workload) => [workload.name, metricsOf(workload)])),
      measurements,
      summary,
    },
    startedAt,
  );
  console.log(`Results: ${file}`);
}

try {
  await main();
} catch (error) {
  console.error(`bench failed: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  killAllChildren();
}
