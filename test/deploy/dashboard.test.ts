// The Grafana dashboard queries only what canary-l4 exports: its metric names are checked against a
// live /metrics scrape (data plane) and against what the control loops register, its label names against
// the scrape, the control loop's documented labels and the ServiceMonitor's target labels.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { validateConfig } from '../../src/config/validate.ts';
import { Runtime } from '../../src/runtime/runtime.ts';
import {
  exchange,
  startEchoBackend,
  startUdpEcho,
  udpAsk,
  type EchoBackend,
  type UdpBackend,
} from '../support/net/backends.ts';
import { withFreePort } from '../support/net/free-ports.ts';
import { registeredFamilies } from '../support/registered-families.ts';
import { deployDir, theOnly, type KubeObject } from './manifests.ts';

interface Panel {
  targets?: { expr?: string }[];
  panels?: Panel[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: { type: string; query?: string | { query?: string } }[] };
}

/** The control loops' metrics and their labels (src/control/loop/reporting.ts, src/modes/proxy.ts, src/manager/metrics.ts, src/modes/manager.ts): not in a bare data plane's /metrics. */
const CONTROL_LOOP_METRICS = new Map<string, readonly string[]>([
  ['canary_l4_reconcile_total', ['result']],
  ['canary_l4_reconcile_duration_seconds', ['le']],
  ['canary_l4_release_info', ['release', 'namespace', 'phase']],
  ['canary_l4_canary_weight', ['service', 'port', 'protocol']],
  ['canary_l4_release_step', []],
  ['canary_l4_release_steps', []],
  ['canary_l4_release_step_held', []],
  ['canary_l4_analysis_verdict', ['verdict']],
  ['canary_l4_analysis_failures', []],
  ['canary_l4_analysis_signal', ['signal', 'side']],
  ['canary_l4_achieved_connections', ['service', 'port', 'protocol', 'side']],
  ['canary_l4_leader', []],
  ['canary_l4_manager_reconcile_total', ['result']],
  ['canary_l4_manager_reconcile_duration_seconds', ['le']],
  ['canary_l4_manager_proxy_replicas', ['release_namespace', 'release', 'state']],
]);
/** Labels Prometheus Operator puts on every target of a ServiceMonitor. */
const OPERATOR_TARGET_LABELS = ['namespace', 'service', 'pod', 'container', 'endpoint', 'job', 'instance'];
const PROMQL_KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'and',
  'or',
  'unless',
  'bool',
  'offset',
]);
const LABEL_LISTS = /\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)/g;

const dashboard = JSON.parse(readFileSync(new URL('grafana/canary-l4.json', deployDir), 'utf8')) as Dashboard;

/** Every PromQL expression: panel targets (rows included) and `label_values(<selector>, <label>)` variables. */
function expressions(): { expr: string; extraLabels: string[] }[] {
  const fromPanels = (panels: Panel[]): { expr: string; extraLabels: string[] }[] =>
    panels.flatMap((panel) => [
      ...(panel.targets ?? []).flatMap((target) =>
        target.expr === undefined ? [] : [{ expr: target.expr, extraLabels: [] }],
      ),
      ...fromPanels(panel.panels ?? []),
    ]);
  const fromVariables = dashboard.templating.list
    .filter((variable) => variable.type === 'query')
    .map((variable) => {
      const query = typeof variable.query === 'string' ? variable.query : (variable.query?.query ?? '');
      const match = /^label_values\((.*),\s*(\w+)\)$/.exec(query);
      assert.ok(match?.[1] && match[2], `variable query ${query} is label_values(<selector>, <label>)`);
      return { expr: match[1], extraLabels: [match[2]] };
    });
  return [...fromPanels(dashboard.panels), ...fromVariables];
}

function withoutStrings(expr: string): string {
  return expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
}

/** Metric names in an expression: identifiers left once strings, matchers, ranges and label lists are gone, and not called as functions. */
function metricNamesIn(expr: string): string[] {
  const bare = withoutStrings(expr)
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(LABEL_LISTS, ' ');
  return [...bare.matchAll(/(?<![\w.$])([a-zA-Z_:][\w:]*)(?![\w(]|\s*\()/g)]
    .map((match) => match[1]!)
    .filter((name) => !PROMQL_KEYWORDS.has(name));
}

/** Label names in matchers and in by/without/on/ignoring/group_* lists. */
function labelNamesIn(expr: string): string[] {
  const text = withoutStrings(expr);
  const inMatchers = [...text.matchAll(/\{([^}]*)\}/g)].flatMap((match) =>
    [...match[1]!.matchAll(/(\w+)\s*(?:=~|!~|!=|=)/g)].map((label) => label[1]!),
  );
  const inLists = [...text.matchAll(LABEL_LISTS)].flatMap((match) =>
    match[1]!
      .split(',')
      .map((label) => label.trim())
      .filter((label) => label !== ''),
  );
  return [...inMatchers, ...inLists];
}

const queried = expressions();
const metricsQueried = new Set(queried.flatMap(({ expr }) => metricNamesIn(expr)));
/** A histogram is queried through its _bucket/_sum/_count series. */
const familyOf = (name: string) => name.replace(/_(bucket|sum|count)$/, '');
const isControlLoopMetric = (name: string) => CONTROL_LOOP_METRICS.has(familyOf(name));

/** The label names of every sample name in a Prometheus text exposition. */
function parseExposition(text: string): Map<string, Set<string>> {
  const samples = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? /.exec(line);
    if (!match?.[1]) continue;
    const labels = samples.get(match[1]) ?? new Set<string>();
    for (const label of (match[2] ?? '').matchAll(/(\w+)="/g)) labels.add(label[1]!);
    samples.set(match[1], labels);
  }
  return samples;
}

describe('deploy/grafana/canary-l4.json', () => {
  let runtime: Runtime;
  let tcpBackends: EchoBackend[];
  let udpBackends: UdpBackend[];
  let scrape: Map<string, Set<string>>;

  before(async () => {
    runtime = await Runtime.start({
      log: pino({ level: 'silent' }),
      adminHost: '127.0.0.1',
      adminPort: 0,
      listenerGraceMs: 0,
    });
    tcpBackends = await Promise.all([startEchoBackend(), startEchoBackend()]);
    udpBackends = await Promise.all([startUdpEcho('forked'), startUdpEcho('canary')]);
    const backends = (ports: number[]) =>
      ports.map((port, index) => ({ name: index === 0 ? 'forked' : 'canary', host: '127.0.0.1', port, weight: 50 }));
    // Listener names as the control loop makes them (<service>-<port>-<protocol>), which the UDP panels rely on.
    const port = await withFreePort(async (candidate) => {
      const config = {
        listeners: [
          {
            name: 'web-80-tcp',
            protocol: 'tcp',
            listen: `127.0.0.1:${candidate}`,
            backends: backends(tcpBackends.map((backend) => backend.port)),
          },
          {
            name: 'statsd-8125-udp',
            protocol: 'udp',
            listen: `127.0.0.1:${candidate}`,
            backends: backends(udpBackends.map((backend) => backend.port)),
          },
        ],
      };
      await runtime.applyConfig(validateConfig(config, 'dashboard test config'));
      return candidate;
    });
    for (let i = 0; i < 4; i++) {
      assert.equal((await exchange(port, `hello ${i}`)).data.toString(), `hello ${i}`);
      assert.equal((await udpAsk(port, `datagram ${i}`)).length, 1);
    }
    const response = await fetch(`http://127.0.0.1:${runtime.adminPort}/metrics`);
    assert.equal(response.status, 200);
    scrape = parseExposition(await response.text());
  });
  after(async () => {
    await runtime.stop(0);
    await Promise.all([...tcpBackends, ...udpBackends].map((backend) => backend.close()));
  });

  it('has panels with queries', () => {
    assert.ok(queried.length >= 10, `only ${queried.length} queries`);
    assert.ok(metricsQueried.size >= 10);
  });

  it("queries only metrics a running data plane exports (besides the control loop's)", () => {
    const missing = [...metricsQueried].filter((name) => !isControlLoopMetric(name) && !scrape.has(name));
    assert.deepEqual(missing, [], `not in /metrics: ${missing.join(', ')}`);
  });

  it("queries only control-loop metrics that the proxy's or the manager's loop registers", async () => {
    const registered = new Set((await registeredFamilies()).map((family) => family.name));
    const missing = [...new Set([...metricsQueried].filter(isControlLoopMetric).map(familyOf))].filter(
      (name) => !registered.has(name),
    );
    assert.deepEqual(
      missing,
      [],
      `no control loop registers ${missing.join(', ')}: the dashboard's control-loop panels would stay empty`,
    );
  });

  it('uses only labels that the metrics of each query carry, or that the ServiceMonitor adds', () => {
    const monitor = theOnly<KubeObject & { spec: { endpoints: { relabelings?: { targetLabel?: string }[] }[] } }>(
      'ServiceMonitor',
      'monitoring/',
    );
    const relabelled = monitor.spec.endpoints.flatMap((endpoint) =>
      (endpoint.relabelings ?? []).flatMap((rule) => (rule.targetLabel ? [rule.targetLabel] : [])),
    );
    const labelsOf = (name: string): string[] => {
      const controlLoop = CONTROL_LOOP_METRICS.get(familyOf(name));
      return controlLoop
        ? [...controlLoop, ...(name.endsWith('_bucket') ? ['le'] : [])]
        : [...(scrape.get(name) ?? [])];
    };
    const unknown = queried.flatMap(({ expr, extraLabels }) => {
      const known = new Set([...metricNamesIn(expr).flatMap(labelsOf), ...OPERATOR_TARGET_LABELS, ...relabelled]);
      return [...labelNamesIn(expr), ...extraLabels]
        .filter((label) => !known.has(label))
        .map((label) => `${label} in ${expr}`);
    });
    assert.deepEqual(unknown, []);
    assert.ok(relabelled.includes('canary_release'), 'the per-release filter comes from the ServiceMonitor');
  });
});
