/**
 * The network of a real-node cluster (plan.ts says where): made with `ip` as root, removed whole.
 *
 *   host ── <prefix> (198.19.<n>.1) ─┐
 *                                    ├─ bridge `switch` in the namespace <prefix>-switch
 *   node 1: netns <prefix>-node1 ────┤    eth0 198.19.<n>.11, bridge cbr0 = its podCIDR's .1
 *   node 2: netns <prefix>-node2 ────┘    eth0 198.19.<n>.12, bridge cbr0 = its podCIDR's .1
 *   pod:    netns <prefix>-pod<k>: eth0 (a veth from its node's cbr0) = an address of the node's
 *           podCIDR, its own lo, a default route through its node
 *
 * The host keeps its own rules and forwards nothing (its ip_forward is left as it is): nodes reach
 * each other through the switch, the host's API server on its address there, and the host reaches
 * the pods (the kubelet's probes) by one route per podCIDR on its link, which goes with the link.
 * Nodes forward (their own ip_forward) and route each other's podCIDRs.
 *
 * Cleanup: DIR/real-node.json names the prefix and network slot; a start removes whatever a
 * killed run of the same DIR left (its namespaces' processes killed, then the namespaces and the
 * link), and a slot whose holder is dead is cleaned the same way before it is taken again.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { clusterPrefix, networkPlan, podNetOf, SLOTS, type NetworkPlan, type NodePlan } from './plan.ts';
import { processAlive } from '../processes.ts';

const run = promisify(execFile);
const SLOT_DIR = join(tmpdir(), 'canary-l4-real-node');
const STATE_FILE = 'real-node.json';
const NODE_BRIDGE = 'cbr0';

interface Holder {
  readonly pid: number;
  readonly prefix: string;
}

export interface PodSandbox {
  /** The pod's network namespace: its processes run in it (`ip netns exec`). */
  readonly netns: string;
  /** Removes the namespace and its veth (its processes must have ended). */
  close(): Promise<void>;
}

export interface RealNetwork {
  readonly plan: NetworkPlan;
  /** Gives the node's bridge its podCIDR's first address, and routes the podCIDR to the node from the host and the other nodes. */
  routePodCidr(node: NodePlan, podCidr: string): Promise<void>;
  /** A network namespace of its own for a pod on `node`, with `ip` from the node's podCIDR. */
  openPod(node: NodePlan, podCidr: string, ip: string): Promise<PodSandbox>;
  /** Removes every namespace, link and route of this cluster (kube-proxy's tables go with its node's namespace). */
  remove(): Promise<void>;
}

async function ip(...args: string[]): Promise<void> {
  try {
    await run('ip', args);
  } catch (err) {
    throw new Error(`ip ${args.join(' ')}: ${((err as { stderr?: string }).stderr ?? String(err)).trim()}`);
  }
}

/** Every namespace named `<prefix>-…`: its processes SIGKILLed, then it and the host link `<prefix>` deleted. */
export async function removeByPrefix(prefix: string): Promise<void> {
  const { stdout } = await run('ip', ['netns', 'list']);
  const names = stdout
    .split('\n')
    .map((line) => line.split(' ')[0]!)
    .filter((name) => name.startsWith(`${prefix}-`));
  await run('ip', ['link', 'del', prefix]).catch(() => undefined);
  for (const name of names) {
    const pids = await run('ip', ['netns', 'pids', name]).then(
      ({ stdout: out }) => out.split('\n').filter(Boolean).map(Number),
      () => [] as number[],
    );
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    await run('ip', ['netns', 'del', name]).catch(() => undefined);
  }
}

/** A free network slot, taken by an exclusive create; a dead holder's slot is cleaned and taken. */
async function claimSlot(prefix: string): Promise<number> {
  mkdirSync(SLOT_DIR, { recursive: true });
  const mine = JSON.stringify({ pid: process.pid, prefix } satisfies Holder);
  for (let slot = 0; slot < SLOTS; slot++) {
    const file = join(SLOT_DIR, `slot-${slot}`);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        writeFileSync(file, mine, { flag: 'wx' });
        return slot;
      } catch {
        let holder: Holder | undefined;
        try {
          holder = JSON.parse(readFileSync(file, 'utf8')) as Holder;
        } catch {
          holder = undefined; // being written, or torn: a live holder's; try the next slot
        }
        if (holder === undefined || processAlive(holder.pid)) break;
        await removeByPrefix(holder.prefix);
        rmSync(file, { force: true });
      }
    }
  }
  throw new Error(`all ${SLOTS} real-node network slots of this host are taken (${SLOT_DIR}): stop another cluster`);
}

export async function createRealNetwork(dir: string): Promise<RealNetwork> {
  if (process.getuid?.() !== 0)
    throw new Error(
      '--real-node makes network namespaces, links and routes: run it as root (CAP_NET_ADMIN, CAP_SYS_ADMIN)',
    );
  const stateFile = join(dir, STATE_FILE);
  // What a killed run of this DIR left: its namespaces, link and slot.
  try {
    const left = JSON.parse(readFileSync(stateFile, 'utf8')) as Holder & { slot: number };
    await removeByPrefix(left.prefix);
    const slotFile = join(SLOT_DIR, `slot-${left.slot}`);
    try {
      if ((JSON.parse(readFileSync(slotFile, 'utf8')) as Holder).pid === left.pid) rmSync(slotFile, { force: true });
    } catch {
      // no such slot file: nothing holds it
    }
  } catch {
    // no state: a first start, or a clean stop
  }
  const prefix = clusterPrefix(dir);
  await removeByPrefix(prefix);
  const slot = await claimSlot(prefix);
  const plan = networkPlan(dir, slot);
  writeFileSync(stateFile, JSON.stringify({ pid: process.pid, prefix, slot }));
  const network = new Network(plan, () => {
    rmSync(stateFile, { force: true });
    rmSync(join(SLOT_DIR, `slot-${slot}`), { force: true });
  });
  try {
    await network.build();
  } catch (err) {
    await network.remove();
    throw err;
  }
  return network;
}

class Network implements RealNetwork {
  readonly plan: NetworkPlan;
  readonly #released: () => void;
  #pods = 0;

  constructor(plan: NetworkPlan, released: () => void) {
    this.plan = plan;
    this.#released = released;
  }

  async build(): Promise<void> {
    const { plan } = this;
    const sw = plan.switchNetns;
    await ip('netns', 'add', sw);
    await ip('-n', sw, 'link', 'add', 'switch', 'type', 'bridge');
    await ip('-n', sw, 'link', 'set', 'switch', 'up');
    await ip('link', 'add', plan.hostLink, 'type', 'veth', 'peer', 'name', 'host', 'netns', sw);
    await ip('-n', sw, 'link', 'set', 'host', 'master', 'switch', 'up');
    await ip('addr', 'add', `${plan.hostAddress}/24`, 'dev', plan.hostLink);
    await ip('link', 'set', plan.hostLink, 'up');
    for (const [index, node] of plan.nodes.entries()) {
      const port = `node${index + 1}`;
      await ip('netns', 'add', node.netns);
      await ip('-n', node.netns, 'link', 'set', 'lo', 'up');
      await ip('-n', sw, 'link', 'add', port, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', node.netns);
      await ip('-n', sw, 'link', 'set', port, 'master', 'switch', 'up');
      await ip('-n', node.netns, 'addr', 'add', `${node.address}/24`, 'dev', 'eth0');
      await ip('-n', node.netns, 'link', 'set', 'eth0', 'up');
      // A node's default route (its traffic to a cluster IP needs one before kube-proxy's DNAT); the host forwards nothing.
      await ip('-n', node.netns, 'route', 'add', 'default', 'via', plan.hostAddress);
      // nf_call_iptables: a reply between two pods of one bridge passes netfilter, so conntrack undoes kube-proxy's DNAT.
      await ip('-n', node.netns, 'link', 'add', NODE_BRIDGE, 'type', 'bridge', 'nf_call_iptables', '1');
      await ip('-n', node.netns, 'link', 'set', NODE_BRIDGE, 'up');
      await run('ip', ['netns', 'exec', node.netns, 'sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    }
  }

  async routePodCidr(node: NodePlan, podCidr: string): Promise<void> {
    await ip('-n', node.netns, 'addr', 'add', `${podNetOf(podCidr)}.1/24`, 'dev', NODE_BRIDGE);
    await ip('route', 'add', podCidr, 'via', node.address, 'dev', this.plan.hostLink);
    for (const other of this.plan.nodes)
      if (other !== node) await ip('-n', other.netns, 'route', 'add', podCidr, 'via', node.address);
  }

  async openPod(node: NodePlan, podCidr: string, address: string): Promise<PodSandbox> {
    const n = ++this.#pods;
    const netns = this.plan.podNetns(n);
    const veth = `vp${n}`;
    try {
      await ip('netns', 'add', netns);
      await ip('-n', netns, 'link', 'set', 'lo', 'up');
      await ip('-n', node.netns, 'link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns);
      await ip('-n', node.netns, 'link', 'set', veth, 'master', NODE_BRIDGE, 'up');
      await ip('-n', netns, 'addr', 'add', `${address}/24`, 'dev', 'eth0');
      await ip('-n', netns, 'link', 'set', 'eth0', 'up');
      await ip('-n', netns, 'route', 'add', 'default', 'via', `${podNetOf(podCidr)}.1`);
    } catch (err) {
      await ip('netns', 'del', netns).catch(() => undefined);
      throw err;
    }
    return { netns, close: () => ip('netns', 'del', netns).catch(() => undefined) };
  }

  async remove(): Promise<void> {
    await removeByPrefix(this.plan.prefix);
    this.#released();
  }
}
