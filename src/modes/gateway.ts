// `gateway`: one Gateway API Gateway. The data plane serves on every replica; a Lease elects the one
// that writes the statuses. Loaded only by the `gateway` command.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { gatewayLeaseName } from '../api/gateway/names.ts';
import { GatewayController } from '../gateway/controller.ts';
import { loadKubeConfig, makeClients } from '../kube/client.ts';
import { startLeadership } from '../kube/leadership.ts';
import type { LeaderElector } from '../kube/lease.ts';
import { exitOnSignals, Runtime, type RuntimeOptions } from '../runtime/runtime.ts';
import { controlledStop } from './controlled-stop.ts';

export interface GatewayOptions {
  readonly runtime: RuntimeOptions;
  readonly kubeconfig: string | undefined;
  readonly namespace: string;
  readonly gateway: string;
  readonly service: string | undefined;
  readonly addresses: readonly string[];
  readonly listenHost: string | undefined;
  readonly resyncMs: number;
  readonly requestTimeoutMs: number;
  readonly drainMs: number;
  /** undefined: no leader election (one replica). */
  readonly leaseDurationMs: number | undefined;
}

export async function runGateway(options: GatewayOptions): Promise<void> {
  const { namespace, gateway } = options;
  const clients = makeClients(loadKubeConfig(options.kubeconfig));
  const runtime = await Runtime.start(options.runtime);
  const identity = `${hostname()}_${randomUUID().slice(0, 8)}`;
  let elector: LeaderElector | undefined;
  const controller = new GatewayController({
    process: runtime,
    clients,
    namespace,
    gateway,
    service: options.service,
    addresses: options.addresses,
    listenHost: options.listenHost,
    reservedPorts: new Set(runtime.adminPort === null || runtime.adminPort === 0 ? [] : [runtime.adminPort]),
    resyncMs: options.resyncMs,
    requestTimeoutMs: options.requestTimeoutMs,
    isLeader: () => elector?.isLeader ?? true,
  });
  elector = startLeadership({
    coordination: clients.coordination,
    namespace,
    name: gatewayLeaseName(gateway),
    identity,
    leaseDurationMs: options.leaseDurationMs,
    log: runtime.log,
    registry: runtime.registry,
    onChange: () => controller.trigger(),
  });
  runtime.log.info({ namespace, gateway, service: options.service }, 'gateway started');
  const stop = controlledStop(runtime, () => Promise.all([controller.stop(), elector?.stop(true)]), options.drainMs);
  exitOnSignals(runtime.log, stop);
}
