/**
 * `npm run test:cluster`: the Kubernetes side end to end on a real control plane. Builds the
 * binaries if the cache has none, then runs the suite with CANARY_TEST_API=real: every file
 * below starts its own control plane (as envtest does per suite) and node simulation. The files
 * that are e2e tests against the fake too run unchanged on both (test/support/cluster/api-under-test.ts);
 * those under test/cluster/ need what only a real control plane has (its controllers, RBAC).
 * Extra arguments are passed to `node --test` (e.g. `--test-name-pattern`); test files among them
 * run instead of the suite. `--real-node` runs REAL_NODE_SUITE instead, whose clusters get two real
 * nodes (network namespaces, pods in namespaces of their own, the real kube-proxy; CANARY_TEST_NODE=real).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ensureBinaries } from './build.ts';

/** The scenarios, each a file; run one at a time (each control plane wants a core while it starts). */
export const SUITE = [
  // npm run cluster itself: the ready line, kubectl version, the API groups, RBAC, pods on the node, a clean stop
  'test/cluster/cluster.test.ts',
  // npm run cluster -- --real-node: two nodes, pods in namespaces of their own, the real kube-proxy, a clean stop
  'test/cluster/real-node.test.ts',
  // the takeover and hand-back of a NodePort Service: Adopted, then Deprecated; the proxy's requests as its ClusterRole grants
  'test/control/controller/lifecycle.test.ts',
  // kubectl apply, apply --server-side --force-conflicts and replace of the Service mid-release, with traffic
  'test/control/controller/reapply.test.ts',
  // the same, a renumbered port, a moved targetPort, an adoption waiting for a Ready canary
  'test/control/controller/strand.test.ts',
  // NodePort, unlisted ports, UDP, weights 0 and 100, refused releases, a deleted release, a port clash
  'test/control/controller/cases.test.ts',
  // drift of the managed Services repaired
  'test/control/controller/drift.test.ts',
  // bad CanaryReleases applied with kubectl: the CRD's admission, then the proxy's own checks
  'test/control/controller/validation.test.ts',
  // leader election across two proxy replicas
  'test/control/controller/ha.test.ts',
  // Gateway API v1.6.3's CRDs applied server-side, its objects read back with the schema's defaults,
  // watched, their status written each way; the CEL rule the fake does not enforce refused
  'test/fake-apiserver/gateway-api.test.ts',
  // canary-l4 gateway: Gateway API's CRDs, an 80/20 TCPRoute and UDPRoute, a stepped weight, a refused share, deletion
  'test/gateway/gateway.test.ts',
  // kubectl canary-l4: plan and the actions
  'test/plugin/plugin.test.ts',
  'test/plugin/plan.test.ts',
  // kubectl apply -k deploy/, the manager and its proxies as their ServiceAccounts, a managed workload
  // rolled by the Deployment controller, leader election, the state dir, a stepped release rolled back
  // by its analysis, deletion and the garbage collector
  'test/cluster/release.test.ts',
  // the Gateway API CRDs and kubectl apply -k deploy/: a Gateway's proxy objects from the manager, its class
  // Accepted, the garbage collector, and no request of the manager refused by deploy/'s RBAC
  'test/cluster/gateway.test.ts',
];

/** What runs on real nodes so far: the files whose clusters are their own (the e2e files' testbed plays its pods on the host). */
export const REAL_NODE_SUITE = [
  'test/cluster/real-node.test.ts',
  'test/cluster/release.test.ts',
  'test/cluster/gateway.test.ts',
  // a running release's proxy pod evicted, deleted, its node drained, its process killed: what each costs
  'test/cluster/disruption.test.ts',
];

const root = fileURLToPath(new URL('../../', import.meta.url));
await ensureBinaries((line) => console.error(`canary-l4 cluster: ${line}`));
const realNode = process.argv.includes('--real-node');
const args = process.argv.slice(2).filter((arg) => arg !== '--real-node');
const files = args.some((arg) => arg.endsWith('.test.ts')) ? [] : realNode ? REAL_NODE_SUITE : SUITE;
const child = spawn(
  process.execPath,
  ['--test', '--test-concurrency=1', '--test-timeout=600000', '--test-force-exit', ...args, ...files],
  {
    cwd: root,
    stdio: 'inherit',
    env: { ...process.env, CANARY_TEST_API: 'real', ...(realNode ? { CANARY_TEST_NODE: 'real' } : {}) },
  },
);
child.once('exit', (code, signal) => process.exit(code ?? (signal === null ? 1 : 128)));
