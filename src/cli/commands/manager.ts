import type { Argv } from 'yargs';
import { ConfigError } from '../../errors.ts';
import { runtimeOptions, withCommonOptions, withControllerOptions } from '../options.ts';

const NAMESPACE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function builder(yargs: Argv) {
  return (
    withControllerOptions(
      withCommonOptions(yargs),
      'Elect one writer among the replicas with a Lease canary-l4-manager',
    )
      // The manager serves no traffic: nothing to drain, no listener to keep.
      .hide('drain-timeout')
      .hide('listener-grace')
      .option('namespace', {
        alias: 'n',
        type: 'string',
        array: true,
        default: [] as string[],
        describe:
          'A namespace whose CanaryReleases get a proxy (repeatable, or comma-separated) [default: every namespace]',
      })
      .option('proxy-image', {
        type: 'string',
        describe:
          "Image of the proxy pods; a new one rolls every proxy [default: the manager's own image, read from --pod-name]",
      })
      .option('pod-name', {
        type: 'string',
        describe:
          "The manager's own pod (deploy/ sets it from the downward API): its image is the default --proxy-image",
      })
      .option('pod-namespace', {
        type: 'string',
        describe: "The manager's own namespace: where its Lease is [default: the kubeconfig context's namespace]",
      })
      .option('kubeconfig', {
        type: 'string',
        describe:
          'kubeconfig file of the manager only; the proxies use their ServiceAccount [default: in a pod, its service account; else KUBECONFIG or ~/.kube/config]',
      })
      .check((argv) => {
        for (const namespace of namespaces(argv.namespace)) {
          if (!NAMESPACE.test(namespace) || namespace.length > 63)
            throw new ConfigError('--namespace', [
              `must be a namespace name (lower-case letters, digits and '-'), got ${JSON.stringify(namespace)}`,
            ]);
        }
        if (argv['proxy-image'] !== undefined && String(argv['proxy-image']).trim() === '')
          throw new ConfigError('--proxy-image', ['must name an image, got ""']);
        return true;
      })
      .example(
        '$0 manager --proxy-image registry.example/canary-l4:0.2.0',
        'Provision a proxy for every CanaryRelease of the cluster',
      )
      .example(
        '$0 manager -n shop -n payments --proxy-image canary-l4:0.2.0',
        'Only for the CanaryReleases of two namespaces',
      )
  );
}

type Args = Awaited<ReturnType<typeof builder>['argv']>;

/** `-n a -n b`, `-n a,b` and CANARY_L4_NAMESPACE="a b" all name a and b. */
function namespaces(values: readonly (string | number)[]): string[] {
  return [...new Set(values.flatMap((value) => String(value).split(/[\s,]+/)).filter((value) => value !== ''))];
}

export const managerCommand = {
  command: 'manager',
  describe:
    'Keep a proxy (Deployment, PDB, metrics Service, RBAC) for every CanaryRelease, and report it in its status',
  builder,
  handler: async (argv: Args) => {
    const { runManager } = await import('../../modes/manager.ts');
    await runManager({
      runtime: runtimeOptions(argv),
      kubeconfig: argv.kubeconfig,
      namespaces: namespaces(argv.namespace),
      proxyImage: argv.proxyImage,
      pod: { name: argv.podName, namespace: argv.podNamespace },
      resyncMs: argv.resync * 1000,
      requestTimeoutMs: argv.apiTimeout * 1000,
      leaseDurationMs: argv.leaderElect ? argv.leaseDuration * 1000 : undefined,
    });
  },
};
