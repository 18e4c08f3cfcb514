// Where a real-node cluster's network lives: two clusters at once never share an address or a name,
// none overlaps the process-model clusters' 198.18.0.0/16, and every link name fits Linux's 15 bytes.

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { clusterPrefix, networkPlan, podNetOf, REAL_SERVICE_CIDR, SLOTS } from './plan.ts';

describe('real-node network plan', () => {
  it('gives each slot a cluster CIDR and node network of its own in 198.19.0.0/16, apart from the Service CIDR', () => {
    const plans = Array.from({ length: SLOTS }, (_, slot) => networkPlan('/tmp/a', slot));
    const thirdOctets = plans.flatMap((plan) => {
      const base = Number(plan.clusterCidr.split('.')[2]);
      return Array.from({ length: 16 }, (_, i) => base + i);
    });
    assert.equal(new Set(thirdOctets).size, thirdOctets.length, 'no two slots share a /24');
    assert.ok(
      thirdOctets.every((octet) => octet < 240),
      `below ${REAL_SERVICE_CIDR}`,
    );
    assert.deepEqual(
      { cluster: plans[2]!.clusterCidr, nodes: plans[2]!.nodeNetwork, host: plans[2]!.hostAddress },
      { cluster: '198.19.32.0/20', nodes: '198.19.47.0/24', host: '198.19.47.1' },
    );
    assert.deepEqual(
      plans[2]!.nodes.map((node) => node.address),
      ['198.19.47.11', '198.19.47.12'],
    );
    assert.throws(() => networkPlan('/tmp/a', SLOTS), /network slot 15 is not 0-14/);
  });

  it('names everything with a prefix of its DIR, the host link within 15 bytes', () => {
    const plan = networkPlan('/tmp/kc', 0);
    assert.match(plan.prefix, /^cl4[0-9a-f]{6}$/);
    assert.notEqual(clusterPrefix('/tmp/kc'), clusterPrefix('/tmp/kd'));
    assert.ok(plan.hostLink.length <= 15);
    for (const name of [plan.switchNetns, ...plan.nodes.map((node) => node.netns), plan.podNetns(12)])
      assert.ok(name.startsWith(`${plan.prefix}-`), name);
  });

  it("reads a node's podCIDR as its pods' three octets, and refuses any but a /24", () => {
    assert.equal(podNetOf('198.19.1.0/24'), '198.19.1');
    assert.throws(() => podNetOf('198.19.0.0/23'), /podCIDR 198\.19\.0\.0\/23 is not a \/24/);
  });
});
