/**
 * Where a real-node cluster's network lives (pure: names and addresses, no I/O). Everything is in
 * 198.19.0.0/16, the upper half of RFC 2544's benchmarking range (no real network routes it; the
 * process-model clusters keep 198.18.0.0/16, so both kinds run on one host at once):
 *   - slot `s` (0-14) of the clusters running at once on this host gets the cluster CIDR
 *     `198.19.<16s>.0/20`, from which the controller-manager gives each node a /24, and the node
 *     network `198.19.<16s+15>.0/24`: the host `.1` (kube-apiserver binds it), node `i` `.1<i>`;
 *   - every cluster's Service CIDR is `198.19.240.0/20`: cluster IPs exist only in the rules
 *     kube-proxy writes inside each node's namespace, so clusters never see each other's;
 *   - every name the cluster gives a network namespace or a host link starts with its prefix,
 *     `cl4<6 hex digits of its DIR's hash>`, so that cleanup removes its own and no other's.
 */
import { createHash } from 'node:crypto';

export const REAL_NODE_NETWORK = '198.19.0.0/16';
export const REAL_SERVICE_CIDR = '198.19.240.0/20';
export const SLOTS = 15;
export const NODE_COUNT = 2;
/** The /24 each node gets for its pods. */
export const NODE_CIDR_MASK = 24;

export interface NodePlan {
  /** `canary-l4-node-<i>`. */
  readonly name: string;
  /** Its network namespace. */
  readonly netns: string;
  /** Its address on the node network (the Node's InternalIP). */
  readonly address: string;
}

export interface NetworkPlan {
  readonly prefix: string;
  readonly slot: number;
  /** The pods' addresses: `--cluster-cidr`. */
  readonly clusterCidr: string;
  /** The node network the nodes and the host share. */
  readonly nodeNetwork: string;
  /** The host's address on it: kube-apiserver binds it, so that nodes and pods reach the API. */
  readonly hostAddress: string;
  /** The host's end of the node network: a link of that name (the prefix). */
  readonly hostLink: string;
  /** The namespace holding the node network's bridge (the "switch"). */
  readonly switchNetns: string;
  readonly nodes: readonly NodePlan[];
  /** The network namespace of the `n`th pod this cluster starts. */
  podNetns(n: number): string;
}

export function clusterPrefix(dir: string): string {
  return `cl4${createHash('sha256').update(dir).digest('hex').slice(0, 6)}`;
}

export function networkPlan(dir: string, slot: number): NetworkPlan {
  if (!Number.isInteger(slot) || slot < 0 || slot >= SLOTS)
    throw new Error(`network slot ${slot} is not 0-${SLOTS - 1}`);
  const prefix = clusterPrefix(dir);
  const nodeNet = `198.19.${16 * slot + 15}`;
  return {
    prefix,
    slot,
    clusterCidr: `198.19.${16 * slot}.0/20`,
    nodeNetwork: `${nodeNet}.0/24`,
    hostAddress: `${nodeNet}.1`,
    hostLink: prefix,
    switchNetns: `${prefix}-switch`,
    nodes: Array.from({ length: NODE_COUNT }, (_, index) => ({
      name: `canary-l4-node-${index + 1}`,
      netns: `${prefix}-node${index + 1}`,
      address: `${nodeNet}.${11 + index}`,
    })),
    podNetns: (n) => `${prefix}-pod${n}`,
  };
}

/** `198.19.3.0/24` → `198.19.3`: the kubelet gives pods `.2` onwards, the node's bridge is `.1`. */
export function podNetOf(podCidr: string): string {
  const match = /^(\d+\.\d+\.\d+)\.0\/24$/.exec(podCidr);
  if (match === null)
    throw new Error(`podCIDR ${podCidr} is not a /24 (the controller-manager's --node-cidr-mask-size)`);
  return match[1]!;
}
