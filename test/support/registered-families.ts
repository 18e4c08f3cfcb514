// Every metric family the code registers, by mode, read from the registries themselves: the runtime
// that every mode starts (process metrics, config reloads, the data plane's families), the control
// loops' of `proxy` and `gateway`, the manager's, and the leader gauge of all three. In-process: the
// admin server listens on a loopback port the system picks; nothing talks to a cluster.
import pino from 'pino';
import type { CoordinationV1Api } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { Runtime } from '../../src/runtime/runtime.ts';
import { PassReporter } from '../../src/control/loop/reporting.ts';
import { ManagerMetrics } from '../../src/manager/metrics.ts';
import { gatewayPassMetrics } from '../../src/gateway/controller.ts';
import { startLeadership } from '../../src/kube/leadership.ts';

export type Mode = 'serve' | 'proxy' | 'gateway' | 'manager';

export interface Family {
  readonly name: string;
  readonly type: string;
  readonly modes: readonly Mode[];
}

/** `# TYPE name type` lines of an exposition. */
function typesOf(exposition: string): Map<string, string> {
  return new Map([...exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map(([, name, type]) => [name!, type!]));
}

export async function registeredFamilies(): Promise<Family[]> {
  const log = pino({ level: 'silent' });
  const runtime = await Runtime.start({ log, adminHost: '127.0.0.1', adminPort: 0, listenerGraceMs: 0 });
  try {
    let exposition = '';
    for await (const chunk of runtime.metrics!.render()) exposition += chunk;
    const proxy = new Registry();
    new PassReporter({ registry: proxy, log, release: 'web-v2', namespace: 'shop' });
    const manager = new Registry();
    new ManagerMetrics(manager);
    const gateway = new Registry();
    gatewayPassMetrics(gateway);
    const leader = new Registry();
    // Without an election the gauge is registered and set, and the API is never called.
    const noApi = undefined as unknown as CoordinationV1Api;
    startLeadership({
      coordination: noApi,
      namespace: 'shop',
      name: 'lease',
      identity: 'me',
      leaseDurationMs: undefined,
      log,
      registry: leader,
      onChange: () => {},
    });
    const byMode: [Mode[], Map<string, string>][] = [
      [['serve', 'proxy', 'gateway', 'manager'], typesOf(exposition)],
      [['proxy'], typesOf(await proxy.metrics())],
      [['gateway'], typesOf(await gateway.metrics())],
      [['manager'], typesOf(await manager.metrics())],
      [['proxy', 'gateway', 'manager'], typesOf(await leader.metrics())],
    ];
    return byMode.flatMap(([modes, types]) => [...types].map(([name, type]) => ({ name, type, modes })));
  } finally {
    await runtime.stop(0);
  }
}
