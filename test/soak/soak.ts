// The soak (issues 9, 22): one release under steady TCP and UDP traffic through the kube-proxy
// simulation, while a seeded random schedule patches its weight, re-applies the Service manifest
// (client-side and server-side apply, replace, as GitOps tools do), SIGKILLs the proxy and starts
// it again, and breaks the API (failed requests, refused connections, dropped watches, latency)
// through the fake's HTTP fault routes. The proxy runs as in its pod (--pod-name, its listeners on
// the pod's IP): the takeover keeps the targetPorts. It ends in Adopted or Deprecated and checks
// that the Service ends exact and that no client connection failed outside the one documented
// window: from a SIGKILL of the (single) proxy until its restart is ready (it serves its
// --state-dir config before the API answers; with two replicas the other one serves meanwhile).
// A re-apply's window (until the proxy has the Service back) is measured, and excuses nothing.

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { V1Service } from '@kubernetes/client-node';
import { isTakeoverSelector } from '../../src/control/service/takeover-selector.ts';

import { freePort, freePortBlock } from '../support/net/free-ports.ts';
import { metricValue } from '../support/dataplane/test-plane.ts';
import { MAIN } from '../support/process/serve-child.ts';
import {
  createRelease,
  getService,
  NAMESPACE,
  patchRelease,
  serviceEntry,
  setWeight,
  waitForRelease,
  writeProxyKubeconfig,
} from '../support/cluster/release-cluster.ts';
import { startTestbed, startTraffic, type Attempt, type Traffic } from '../support/cluster/testbed.ts';
import { seededRandom } from '../support/seeded-random.ts';
import { loopbackRange } from '../support/net/loopback-ranges.ts';
import { sleep, waitFor } from '../support/wait.ts';

const serviceNet = loopbackRange(import.meta.url);
const podNet = loopbackRange(import.meta.url, 1);

const RELEASE = 'web-v2';
const PORT_BASE = await freePortBlock(10, { udp: true });
const PROXY_POD_IP = podNet.ip(250);
/** After the steady state is seen again, how long a window stays open (clients in flight). */
const WINDOW_TAIL_MS = 250;
const STEADY_TIMEOUT_MS = 30_000;

const MANIFEST = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', labels: { app: 'web' } },
  spec: {
    type: 'ClusterIP',
    selector: { app: 'web', version: 'v1' },
    ports: [
      { name: 'tcp', port: 9000, targetPort: 8000, protocol: 'TCP' },
      { name: 'udp', port: 9053, targetPort: 8053, protocol: 'UDP' },
    ],
  },
};

type Action =
  | 'weight'
  | 'reapply'
  | 'reapply-server-side'
  | 'replace'
  | 'kill'
  | 'fail-next'
  | 'refuse'
  | 'drop-watches'
  | 'latency';
/** How often each action is drawn, out of the sum. */
const ACTIONS: readonly [Action, number][] = [
  ['weight', 30],
  ['reapply', 10],
  ['reapply-server-side', 10],
  ['replace', 5],
  ['kill', 15],
  ['fail-next', 15],
  ['refuse', 8],
  ['drop-watches', 6],
  ['latency', 6],
];
/** The only action whose window excuses failed connections: the single proxy replica is gone until it restarts. */
const EXCUSED: ReadonlySet<Action> = new Set(['kill']);

export interface SoakOptions {
  readonly durationMs: number;
  readonly seed: number;
  readonly log?: (line: string) => void;
}

export interface SoakResult {
  readonly actions: Record<string, number>;
  /** Connections and flows by outcome. */
  readonly tcp: Record<string, number>;
  readonly udp: Record<string, number>;
  /** Failures inside the window of an action, by the action (only `kill` excuses them); and those no kill window excuses (must be none). */
  readonly failuresInWindows: Record<string, number>;
  /** How long the windows of each action stayed open, in ms: median and max. */
  readonly windowMs: Record<string, { median: number; max: number }>;
  readonly failuresOutside: readonly string[];
  readonly ending: 'Adopted' | 'Deprecated';
  /** Empty when the Service ended exactly as it should; else what differs. */
  readonly serviceProblems: readonly string[];
}

/** Retries `call` while the API refuses connections or fails (a fault the soak itself injected). */
async function retrying<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      if (attempt >= 50) throw err;
      await sleep(200);
    }
  }
}

function takenOver(service: V1Service | undefined): boolean {
  return (
    isTakeoverSelector(service?.spec?.selector, RELEASE) &&
    (service?.spec?.ports ?? []).every((port, index) => port.targetPort === MANIFEST.spec.ports[index]?.targetPort)
  );
}

export async function runSoak(options: SoakOptions): Promise<SoakResult> {
  const say = options.log ?? (() => {});
  const next = seededRandom(options.seed);
  const bed = await startTestbed(serviceNet.cidr, podNet.prefix);
  const dir = mkdtempSync(join(tmpdir(), 'canary-l4-soak-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeProxyKubeconfig(bed.cluster, kubeconfig);
  const adminPort = await freePort();
  const faults = `${bed.cluster.api.url}/_fake/faults`;
  const fault = (route: string, body: unknown) =>
    fetch(`${faults}/${route}`, { method: 'POST', body: JSON.stringify(body) }).then((response) =>
      response.body?.cancel(),
    );
  let proxy: ChildProcess | undefined;
  const startProxy = () => {
    proxy = spawn(
      process.execPath,
      [
        MAIN,
        'proxy',
        '--kubeconfig',
        kubeconfig,
        '-n',
        NAMESPACE,
        '--canary-release',
        RELEASE,
        '--port-base',
        String(PORT_BASE),
        '--admin-port',
        String(adminPort),
        '--admin-host',
        '127.0.0.1',
        '--state-dir',
        join(dir, 'state'),
        '--no-leader-elect',
        '--api-timeout',
        '5',
        '--log-level',
        'error',
        '--pod-name',
        `canary-l4-${RELEASE}`,
        '--listen-address',
        PROXY_POD_IP,
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
  };
  const admin = (path: string) =>
    fetch(`http://127.0.0.1:${adminPort}${path}`, { signal: AbortSignal.timeout(500) }).catch(() => undefined);
  /** Ready, and reconciled at least once since it started (not only serving its --state-dir config). */
  const ready = async () =>
    (await admin('/readyz'))?.status === 200 &&
    (metricValue((await (await admin('/metrics'))?.text()) ?? '', 'canary_l4_reconcile_total', { result: 'success' }) ??
      0) > 0;
  const windows: { action: Action; from: number; to: number }[] = [];
  let tcp: Traffic | undefined;
  let udp: Traffic | undefined;
  try {
    const path = await bed.kubectl.manifest('web.yaml', MANIFEST);
    await bed.kubectl('apply', '-f', path);
    for (const [name, version, answer] of [
      ['web-v1', 'v1', 'stable'],
      ['web-v2', 'v2', 'canary'],
    ] as const) {
      await bed.startPod(name, { app: 'web', version }, [{ port: 8000 }, { port: 8053, protocol: 'UDP' }], answer);
    }
    await bed.startProxyPod(RELEASE, { podIP: PROXY_POD_IP });
    await createRelease(bed.cluster, RELEASE, {
      services: [
        serviceEntry('web', [
          { port: 9000, weight: 20 },
          { port: 9053, protocol: 'UDP', weight: 20 },
        ]),
      ],
    });
    startProxy();
    const steady = async () => {
      await waitFor(
        async () => (await ready()) && takenOver(await getService(bed.cluster, 'web').catch(() => undefined)),
        'the release to serve',
        STEADY_TIMEOUT_MS,
      );
    };
    await steady();
    const ip = await bed.clusterIp('web');
    tcp = startTraffic(() => ip, 9000, 'TCP', { maxMs: options.durationMs + 120_000 });
    udp = startTraffic(() => ip, 9053, 'UDP', { pauseMs: 20, maxMs: options.durationMs + 120_000 });
    const clock = tcp;
    const actions: Record<string, number> = {};
    const total = ACTIONS.reduce((sum, [, weight]) => sum + weight, 0);
    const deadline = Date.now() + options.durationMs;
    while (Date.now() < deadline) {
      await sleep(300 + next() * 1_700);
      let pick = next() * total;
      const action = ACTIONS.find(([, weight]) => (pick -= weight) < 0)?.[0] ?? 'weight';
      actions[action] = (actions[action] ?? 0) + 1;
      const from = clock.now();
      say(`${(from / 1000).toFixed(1)} s: ${action}`);
      switch (action) {
        case 'weight': {
          const [portIndex, weight] = [Math.floor(next() * 2), Math.floor(next() * 101)];
          await retrying(() => setWeight(bed.cluster, RELEASE, 0, portIndex, weight));
          continue;
        }
        case 'fail-next': {
          const [verb, resource, subresource] = [
            ['patch', 'services', ''],
            ['patch', 'canaryreleases', 'status'],
            ['create', 'services', ''],
            ['list', 'pods', ''],
            ['watch', 'canaryreleases', ''],
            ['delete', 'services', ''],
          ][Math.floor(next() * 6)]!;
          const rule = {
            verb,
            resource,
            ...(subresource === '' ? {} : { subresource }),
            code: next() < 0.5 ? 500 : 503,
            count: 1 + Math.floor(next() * 5),
          };
          await retrying(() => fault('fail-next', rule));
          continue;
        }
        case 'refuse': {
          const ms = 1_000 + Math.floor(next() * 2_000);
          await retrying(() => fault('refuse', { ms }));
          continue;
        }
        case 'drop-watches': {
          const abrupt = next() < 0.5;
          await retrying(() => fault('drop-watches', { abrupt }));
          continue;
        }
        case 'latency':
          await retrying(() => fault('latency', { ms: 200 }));
          await sleep(1_000);
          await retrying(() => fault('latency', { ms: 0 }));
          continue;
        case 'reapply':
        case 'reapply-server-side':
        case 'replace': {
          const command = {
            reapply: ['apply', '-f', path],
            'reapply-server-side': [
              'apply',
              '--server-side',
              '--force-conflicts',
              '--field-manager',
              'gitops',
              '-f',
              path,
            ],
            replace: ['replace', '-f', path],
          }[action];
          await retrying(() => bed.kubectl(...command));
          break;
        }
        case 'kill': {
          const killed = proxy!;
          killed.kill('SIGKILL');
          await once(killed, 'exit');
          await sleep(next() * 500);
          startProxy();
          break;
        }
      }
      await steady();
      windows.push({ action, from, to: clock.now() + WINDOW_TAIL_MS });
    }
    await retrying(() => fetch(faults, { method: 'DELETE' }));
    await retrying(() => setWeight(bed.cluster, RELEASE, 0, 0, 30));
    const ending = next() < 0.5 ? 'Adopted' : 'Deprecated';
    say(`ending: ${ending}`);
    await retrying(() => patchRelease(bed.cluster, RELEASE, { spec: { transition: ending } }));
    await waitForRelease(
      bed.cluster,
      RELEASE,
      ending,
      (found) => found?.status?.phase === ending && !found.metadata.finalizers?.length,
      STEADY_TIMEOUT_MS,
    );
    await sleep(500);
    await Promise.all([tcp.stop(), udp.stop()]);
    // A connection cut by the action started before it: what counts is that its life met the window.
    const met = (attempt: Attempt, window: { from: number; to: number }) =>
      attempt.end >= window.from && attempt.at <= window.to;
    const windowOf = (attempt: Attempt) =>
      windows.find((window) => EXCUSED.has(window.action) && met(attempt, window)) ??
      windows.find((window) => met(attempt, window));
    const failures = [
      ...tcp.failures().map((attempt) => ({ ...attempt, protocol: 'TCP' })),
      ...udp.failures().map((attempt) => ({ ...attempt, protocol: 'UDP' })),
    ];
    const outside = failures
      .filter((attempt) => !windows.some((window) => EXCUSED.has(window.action) && met(attempt, window)))
      .map((attempt) => `${attempt.protocol} at ${attempt.at}–${attempt.end} ms: ${attempt.error}`);
    const failuresInWindows: Record<string, number> = {};
    for (const attempt of failures) {
      const window = windowOf(attempt);
      if (window !== undefined) failuresInWindows[window.action] = (failuresInWindows[window.action] ?? 0) + 1;
    }
    const windowMs: Record<string, { median: number; max: number }> = {};
    for (const action of new Set(windows.map((window) => window.action))) {
      const lengths = windows
        .filter((window) => window.action === action)
        .map((window) => window.to - WINDOW_TAIL_MS - window.from)
        .sort((a, b) => a - b);
      windowMs[action] = { median: lengths[Math.floor(lengths.length / 2)] ?? 0, max: lengths.at(-1) ?? 0 };
    }
    const service = await getService(bed.cluster, 'web');
    const expectedSelector = ending === 'Adopted' ? { app: 'web', version: 'v2' } : MANIFEST.spec.selector;
    const serviceProblems = [
      ...(JSON.stringify(service?.spec?.selector) === JSON.stringify(expectedSelector)
        ? []
        : [`selector ${JSON.stringify(service?.spec?.selector)}, expected ${JSON.stringify(expectedSelector)}`]),
      ...((service?.spec?.ports ?? []).every(
        (port, index) =>
          port.targetPort === MANIFEST.spec.ports[index]?.targetPort && port.port === MANIFEST.spec.ports[index]?.port,
      )
        ? []
        : [`ports ${JSON.stringify(service?.spec?.ports)}`]),
      ...(Object.keys(service?.metadata?.annotations ?? {}).some((key) => key.startsWith('canary-l4.io/'))
        ? ['a canary-l4.io annotation is left']
        : []),
      ...((await getService(bed.cluster, 'web-forked')) === undefined &&
      (await getService(bed.cluster, 'web-canary')) === undefined
        ? []
        : ['a copy is left']),
    ];
    return {
      actions,
      tcp: tcp.counts(),
      udp: udp.counts(),
      failuresInWindows,
      windowMs,
      failuresOutside: outside,
      ending,
      serviceProblems,
    };
  } finally {
    await tcp?.stop();
    await udp?.stop();
    proxy?.kill('SIGKILL');
    await bed.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}
