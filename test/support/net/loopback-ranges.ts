// Each module that binds or names loopback addresses beyond 127.0.0.x gets its own /24s of 127.0.0.0/8
// from this one table, so that test files running side by side never bind the same address and port
// (several bind fixed ports: a pod's, a Service's), and a real control plane under test never takes a
// pod network another file uses. loopback-ranges.test.ts proves no /24 is handed to two modules and
// that no module under test/ writes such an address itself.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** One /24 of loopback: `prefix` is its first three octets (`127.0.N`). */
export interface LoopbackRange {
  /** N, the third octet (a real cluster's pod network takes the same number). */
  readonly octet: number;
  readonly prefix: string;
  /** The whole range, `127.0.N.0/24`. */
  readonly cidr: string;
  /** The address `127.0.N.host`. */
  ip(host: number): string;
  /** Matches any one address of the range. */
  readonly addressPattern: RegExp;
}

/** The third octets each module owns, in the order it names them; paths from the repository's root. */
export const LOOPBACK_OWNERS: Readonly<Record<string, readonly number[]>> = {
  // The fake kube-apiserver's defaults (Services, simulated pods): only files that bind nothing there use them.
  'test/support/fake-apiserver/index.ts': [10, 200],
  'test/control/controller/lifecycle.test.ts': [11],
  'test/control/controller/faults.test.ts': [12],
  'test/control/controller/cases.test.ts': [13],
  'test/control/controller/drift.test.ts': [14],
  'test/control/controller/crash.test.ts': [15, 59],
  'test/modes/proxy.test.ts': [16],
  'test/control/controller/ha.test.ts': [17],
  'test/control/loop/apply.test.ts': [18],
  'test/cli/modules.test.ts': [19],
  'test/fake-apiserver/faults.test.ts': [20],
  'test/fake-apiserver/crud.test.ts': [21],
  'test/control/controller/step-numbering.test.ts': [22],
  'test/fake-apiserver/cli.test.ts': [30, 75, 76, 77, 78, 84],
  'test/fake-apiserver/fault-routes.test.ts': [40],
  'test/fake-apiserver/events.test.ts': [41],
  'test/fake-apiserver/apply.test.ts': [42],
  'test/kube-proxy/kube-proxy.test.ts': [43, 44],
  'test/fake-apiserver/pods.test.ts': [45],
  'test/gateway/alpha-routes.test.ts': [46],
  'test/modes/gateway.test.ts': [47, 49],
  'test/gateway/gateway.test.ts': [48],
  'test/control/controller/strand.test.ts': [50, 51],
  'test/control/controller/outages.test.ts': [52, 53],
  'test/soak/soak.ts': [54, 55],
  'test/control/workload/workloads.test.ts': [56, 57, 58],
  'test/manager/manager.test.ts': [60, 61],
  'test/manager/gateway.test.ts': [62],
  'test/kubelet/kubelet.test.ts': [63, 64],
  'test/manager/cli.test.ts': [65],
  'test/deploy/install.test.ts': [66],
  'test/fake-apiserver/printing.test.ts': [67],
  'test/fake-apiserver/deployments.test.ts': [70, 71, 72],
  'test/fake-apiserver/pod-servers.test.ts': [73, 74],
  'test/fake-apiserver/graceful-termination.test.ts': [80, 81, 82, 83],
  'test/control/controller/progressive.test.ts': [86, 87],
  'test/fake-apiserver/gateway-api.test.ts': [88],
  'test/plugin/plugin.test.ts': [89],
  'test/control/controller/reapply.test.ts': [90, 91],
  'test/dataplane/choice/affinity.test.ts': [92, 93],
  'test/dataplane/resources/listener-options.test.ts': [94],
  'test/dataplane/tcp/fast-path.test.ts': [95],
  'test/control/controller/analysis.test.ts': [96, 97],
  'test/control/loop/caches.test.ts': [98],
  'test/dataplane/flows/lifetimes.test.ts': [99],
  'test/dataplane/tcp/graceful-end.test.ts': [100],
  'test/plugin/plan.test.ts': [101],
  'test/control/controller/validation.test.ts': [102],
  'test/control/controller/named-ports.test.ts': [120, 121],
  'test/plugin/dashboard/server.test.ts': [136],
  'test/plugin/dashboard/browser.test.ts': [137],
  'test/control/controller/mirror.test.ts': [146, 147],
  'test/control/controller/upstream-gate.test.ts': [148],
  'test/cluster/release.test.ts': [150],
  'test/cluster/gateway.test.ts': [152],
  'test/cluster/disruption.test.ts': [154],
  'test/cluster/cluster.test.ts': [160],
  'test/conformance/run.ts': [170],
  'test/conformance/echo-basic.test.ts': [171],
};

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The repository-relative path of a module, as LOOPBACK_OWNERS names it. */
export function ownerPath(moduleUrl: string): string {
  return path.relative(ROOT, fileURLToPath(moduleUrl)).split(path.sep).join('/');
}

/**
 * The `nth` range (from 0, in the table's order) that the module at `moduleUrl` (its `import.meta.url`)
 * owns; a module the table does not give that many fails at once, saying where to add one.
 */
export function loopbackRange(moduleUrl: string, nth = 0): LoopbackRange {
  const owner = ownerPath(moduleUrl);
  const octet = LOOPBACK_OWNERS[owner]?.[nth];
  if (octet === undefined)
    throw new Error(
      `${owner} owns no loopback range number ${nth + 1}: give it a free /24 in test/support/net/loopback-ranges.ts`,
    );
  return rangeOf(octet);
}

function rangeOf(octet: number): LoopbackRange {
  const prefix = `127.0.${octet}`;
  return {
    octet,
    prefix,
    cidr: `${prefix}.0/24`,
    ip: (host) => `${prefix}.${host}`,
    addressPattern: new RegExp(`^127\\.0\\.${octet}\\.\\d{1,3}$`),
  };
}
