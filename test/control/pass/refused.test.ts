import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CONFIG_REFUSED, withRefusedConfig } from '../../../src/control/pass/refused.ts';
import { NOW, applyStep, converge, options, run, webWorld } from '../reconcile/world.ts';

const LATER = new Date('2025-01-01T01:00:00Z');
const PROBLEM = 'listener "web-80-tcp" cannot listen on tcp *:8080: the address is in use (EADDRINUSE)';

function failureOf(status: { conditions: readonly { type: string }[] } | undefined) {
  return status?.conditions.find((condition) => condition.type === 'Failure') as
    | { status: string; reason: string; message: string; lastTransitionTime: string }
    | undefined;
}

describe('a config the data plane refuses', () => {
  it('puts a Failure naming the problem in the status the pass writes', () => {
    const world = webWorld();
    const desired = withRefusedConfig(run(world), world.release!, PROBLEM, NOW, world.listening);
    const written = desired.steps.filter((step) => step.kind === 'writeStatus');
    assert.equal(written.length, 1);
    for (const status of [desired.status, written[0]?.kind === 'writeStatus' ? written[0].status : undefined]) {
      assert.equal(failureOf(status)?.status, 'True');
      assert.equal(failureOf(status)?.reason, CONFIG_REFUSED);
      assert.match(failureOf(status)?.message ?? '', /cannot listen on tcp \*:8080/);
    }
    assert.deepEqual(
      desired.steps.map((step) => step.kind),
      run(world).steps.map((step) => step.kind),
      'the other steps stay',
    );
  });

  it('adds a status write to a converged release, and none once the status says so', () => {
    const { world } = converge(webWorld());
    const first = withRefusedConfig(run(world), world.release!, PROBLEM, NOW, world.listening);
    assert.deepEqual(
      first.steps.map((step) => step.kind),
      ['writeStatus'],
    );
    applyStep(world, first.steps[0]!);
    const again = withRefusedConfig(
      run(world, options({ now: LATER })),
      world.release!,
      PROBLEM,
      LATER,
      world.listening,
    );
    assert.deepEqual(again.steps, [], 'nothing to write: the time of the failure does not move');
    assert.equal(failureOf(again.status)?.lastTransitionTime, failureOf(first.status)?.lastTransitionTime);
  });

  it('joins a Failure the release already has', () => {
    const world = webWorld({ services: [{ service: 'nope', ports: [{ port: 80 }] }] });
    const desired = withRefusedConfig(run(world), world.release!, PROBLEM, NOW, world.listening);
    assert.equal(failureOf(desired.status)?.reason, 'InvalidRelease');
    assert.match(
      failureOf(desired.status)?.message ?? '',
      /Service nope not found.*; the proxy cannot serve its config.*EADDRINUSE/,
    );
  });

  it('claims no served weight for a port nothing listens for; a port that listens keeps its own', () => {
    const { world } = converge(webWorld());
    const served = withRefusedConfig(run(world), world.release!, PROBLEM, NOW, world.listening);
    assert.ok(served.status.ports.length > 0);
    assert.deepEqual(
      served.status.ports.map((port) => port.served),
      run(world).status.ports.map((port) => port.served),
      'listening: as planned',
    );
    assert.ok(served.status.ports.every((port) => typeof port.served === 'number'));
    const unserved = withRefusedConfig(run(world), world.release!, PROBLEM, NOW, new Set());
    for (const status of [
      unserved.status,
      ...unserved.steps.flatMap((step) => (step.kind === 'writeStatus' ? [step.status] : [])),
    ]) {
      assert.ok(
        status.ports.every((port) => !('served' in port)),
        JSON.stringify(status.ports),
      );
    }
  });
});
