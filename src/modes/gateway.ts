// `gateway`: one Gateway API Gateway. The data plane serves on every replica; a Lease elects the one
// that writes the statuses. Loaded only by the `gateway` command.
import { gatewayLeaseName } from '../api/gateway/names.ts';
import { GatewayController } from '../gateway/controller.ts';
import { loadKubeConfig, makeClients } from '../kube/client.ts';
import type { RuntimeOptions } from '../runtime/runtime.ts';
import { startControllerProcess } from './controller-process.ts';

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
  await startControllerProcess({
    runtime: options.runtime,
    lease: {
      coordination: clients.coordination,
      namespace,
      name: gatewayLeaseName(gateway),
      durationMs: options.leaseDurationMs,
    },
    drainMs: options.drainMs,
    loop: ({ runtime, isLeader }) =>
      new GatewayController({
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
        isLeader,
      }),
    started: { fields: { namespace, gateway, service: options.service }, message: 'gateway started' },
  });
}
