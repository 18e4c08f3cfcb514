import type { Argv } from 'yargs';
import { ConfigError } from '../../errors.ts';
import { requiredFlag, runtimeOptions, withCommonOptions, withControllerOptions } from '../options.ts';

function builder(yargs: Argv) {
  return withControllerOptions(
    withCommonOptions(yargs),
    'Elect one status writer among the replicas with a Lease canary-l4-gateway-<gateway>; every replica serves traffic',
  )
    .option('namespace', { alias: 'n', type: 'string', describe: 'Namespace of the Gateway' })
    .option('gateway', {
      type: 'string',
      describe: 'Name of the Gateway to serve (its GatewayClass must be canary-l4.io/gateway-controller)',
    })
    .option('kubeconfig', {
      type: 'string',
      describe: 'kubeconfig file [default: in a pod, its service account; else KUBECONFIG or ~/.kube/config]',
    })
    .option('listen-address', { type: 'string', describe: "Address the Gateway's listeners listen on [every address]" })
    .option('service', {
      type: 'string',
      describe:
        "The Service in front of this gateway's pods (the manager sets it): its load balancer's ingress, else its cluster IPs, are the Gateway's addresses",
    })
    .option('address', {
      type: 'string',
      array: true,
      default: [] as string[],
      describe:
        "The Gateway's address in its status, without --service (repeatable) [default: --listen-address if one address, else this host's]",
    })
    .option('pod-name', {
      type: 'string',
      describe: "The gateway's own pod (the Deployment sets it from metadata.name)",
    })
    .check((argv) => {
      if (argv.service !== undefined && argv.address.length > 0)
        throw new ConfigError('--address', ['comes from --service when that is set: pass one or the other']);
      return true;
    })
    .example('$0 gateway -n infra --gateway l4', 'Serve the TCP and UDP listeners of Gateway l4 of namespace infra')
    .example(
      '$0 gateway -n infra --gateway l4 --listen-address 10.0.0.5',
      'The same on one address, which the Gateway status then gives as its address',
    );
}

type Args = Awaited<ReturnType<typeof builder>['argv']>;

export const gatewayCommand = {
  command: 'gateway',
  describe: "Serve one Gateway API Gateway: its TCP and UDP listeners, split by its TCPRoutes' and UDPRoutes' weights",
  builder,
  handler: async (argv: Args) => {
    const namespace = requiredFlag(argv.namespace, 'namespace');
    const gateway = requiredFlag(argv.gateway, 'gateway');
    const { runGateway } = await import('../../modes/gateway.ts');
    await runGateway({
      runtime: runtimeOptions(argv),
      kubeconfig: argv.kubeconfig,
      namespace,
      gateway,
      service: argv.service,
      addresses: argv.address,
      listenHost: argv.listenAddress,
      resyncMs: argv.resync * 1000,
      requestTimeoutMs: argv.apiTimeout * 1000,
      drainMs: argv.drainTimeout * 1000,
      leaseDurationMs: argv.leaderElect ? argv.leaseDuration * 1000 : undefined,
    });
  },
};
