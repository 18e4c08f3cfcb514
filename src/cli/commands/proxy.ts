import type { Argv } from 'yargs';
import { checkPortBase, parsePortWeights, parseSelector } from '../../api/proxy-flags.ts';
import { defaultProxySelector } from '../../api/names.ts';
import { DEFAULT_PORT_BASE } from '../../defaults.ts';
import { ConfigError } from '../../errors.ts';
import { requiredFlag, runtimeOptions, withCommonOptions, withControllerOptions } from '../options.ts';

function builder(yargs: Argv) {
  return withControllerOptions(
    withCommonOptions(yargs),
    'Elect one writer among the replicas with a Lease canary-l4-<release>; every replica serves traffic',
  )
    .option('namespace', {
      alias: 'n',
      type: 'string',
      describe: 'Namespace of the CanaryRelease and its Services [env: CANARY_RELEASE_NAMESPACE]',
    })
    .option('canary-release', {
      type: 'string',
      describe: 'Name of the CanaryRelease to run [env: CANARY_RELEASE_NAME]',
    })
    .option('kubeconfig', {
      type: 'string',
      describe: 'kubeconfig file [default: in a pod, its service account; else KUBECONFIG or ~/.kube/config]',
    })
    .option('proxy-selector', {
      type: 'string',
      describe: 'Labels of the proxy pods, which retargeted Services select [default: canary-l4.io/release=<name>]',
    })
    .option('port-base', {
      type: 'number',
      default: DEFAULT_PORT_BASE,
      describe:
        'First proxy port; each Service port gets its own, kept for the life of the release (in a pod: only those whose targetPort the proxy cannot listen on)',
    })
    .option('pod-name', {
      type: 'string',
      describe:
        "The proxy's own pod (the Deployment sets it from metadata.name): it listens on the Services' own targetPorts and takes a Service over " +
        'once a proxy pod carrying its labels is Ready; unset, it runs on a host: every proxy port from --port-base, no pod to check',
    })
    .option('listen-address', { type: 'string', describe: 'Address the proxy ports listen on [every address]' })
    .option('weight', {
      type: 'string',
      array: true,
      default: [] as string[],
      describe: 'Override the canary weight of one Service port: SERVICE:PORT=PCT (repeatable); shown in status',
    })
    .option('hand-back-grace', {
      type: 'number',
      default: 10,
      describe:
        'Seconds the proxy keeps serving after it hands a Service back, for clients kube-proxy still sends to it',
    })
    .option('state-dir', {
      type: 'string',
      describe:
        'Directory (an emptyDir) where the served config is kept, so that a restarted proxy serves it before the API answers',
    })
    .option('reuse-port', {
      type: 'boolean',
      default: false,
      describe: 'Share the proxy ports with other processes on this host (SO_REUSEPORT), e.g. replicas on hostNetwork',
    })
    .check((argv) => {
      checkPortBase(argv['port-base']);
      const grace = argv['hand-back-grace'];
      if (!Number.isFinite(grace) || grace < 0)
        throw new ConfigError('--hand-back-grace', [`must be a number of seconds >= 0, got ${grace}`]);
      return true;
    })
    .example('$0 proxy -n shop --canary-release web-v2', 'Run the canary release web-v2 of namespace shop')
    .example(
      '$0 proxy -n shop --canary-release web-v2 --weight web:80=0',
      'The same, with no new traffic to the canary on port 80 of Service web',
    );
}

type Args = Awaited<ReturnType<typeof builder>['argv']>;

export const proxyCommand = {
  command: 'proxy',
  describe: 'Run one CanaryRelease: copy its Services, split each port by weight, hand the Services back when it ends',
  builder,
  handler: async (argv: Args) => {
    const namespace = requiredFlag(argv.namespace, 'namespace', 'CANARY_RELEASE_NAMESPACE');
    const release = requiredFlag(argv.canaryRelease, 'canary-release', 'CANARY_RELEASE_NAME');
    const proxySelector =
      argv.proxySelector === undefined ? defaultProxySelector(release) : parseSelector(argv.proxySelector);
    const weightOverrides = parsePortWeights(argv.weight);
    const { runProxy } = await import('../../modes/proxy.ts');
    await runProxy({
      runtime: { ...runtimeOptions(argv), reusePort: argv.reusePort },
      kubeconfig: argv.kubeconfig,
      namespace,
      release,
      proxySelector,
      portBase: argv.portBase,
      weightOverrides,
      handBackGraceMs: argv.handBackGrace * 1000,
      resyncMs: argv.resync * 1000,
      requestTimeoutMs: argv.apiTimeout * 1000,
      drainMs: argv.drainTimeout * 1000,
      leaseDurationMs: argv.leaderElect ? argv.leaseDuration * 1000 : undefined,
      inPod: argv.podName !== undefined && argv.podName !== '',
      listenHost: argv.listenAddress,
      stateDir: argv.stateDir,
    });
  },
};
