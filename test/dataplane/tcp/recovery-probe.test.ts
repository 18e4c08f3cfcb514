// Recovery probes (src/dataplane/tcp/recovery-probe.ts): what a probe takes for serving, and what
// its result does to the held-out backend's health and counts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BackendHealth } from '../../../src/dataplane/choice/passive-health.ts';
import { BackendStats } from '../../../src/dataplane/stats/stats.ts';
import { probeTcp, probed } from '../../../src/dataplane/tcp/recovery-probe.ts';
import { startTcpBackend, type TcpBackend } from '../../support/net/backends.ts';
import { freePort } from '../../support/net/free-ports.ts';

describe('probeTcp: does the backend take a connection and keep it?', () => {
  const servers: TcpBackend[] = [];
  const HOST = '127.0.0.1';
  let greeting: TcpBackend;
  let silent: TcpBackend;
  let resetting: TcpBackend;
  before(async () => {
    greeting = await startTcpBackend((socket) => socket.end('hello'), HOST);
    silent = await startTcpBackend(() => {}, HOST);
    resetting = await startTcpBackend((socket) => socket.resetAndDestroy(), HOST);
    servers.push(greeting, silent, resetting);
  });
  after(() => Promise.all(servers.map((server) => server.close())));

  it('one that answers: serving', async () => assert.equal(await probeTcp(HOST, greeting.port, 1_000), true));
  it('one that accepts and says nothing (a server that waits for its client): serving', async () =>
    assert.equal(await probeTcp(HOST, silent.port, 1_000), true));
  it('one that resets what it accepts: not serving', async () =>
    assert.equal(await probeTcp(HOST, resetting.port, 1_000), false));
  it('nothing listening (refused): not serving', async () =>
    assert.equal(await probeTcp(HOST, await freePort(HOST), 1_000), false));
});

describe("probed: what a probe's result does to a held-out backend", () => {
  const FAIL_TIMEOUT_MS = 3_000;
  const heldOut = () => {
    const backend = { health: new BackendHealth(), stats: new BackendStats() };
    backend.health.recordFailure(0, 1, FAIL_TIMEOUT_MS);
    backend.stats.takenOut(0, FAIL_TIMEOUT_MS, 'connect');
    return backend;
  };

  it('a good probe brings it back at once and ends its time out; no further probe', () => {
    const backend = heldOut();
    assert.equal(probed(backend, true, 1_000, FAIL_TIMEOUT_MS), false, 'no further probe');
    assert.equal(backend.health.isAvailable(1_000), true);
    assert.equal(backend.stats.outMs(60_000), 1_000, 'out until the probe, not to the end of its take-out');
    assert.deepEqual(backend.stats.probes, { ok: 1, failed: 0 });
  });

  it('a failed probe keeps it out another failTimeout from the probe; probe again', () => {
    const backend = heldOut();
    assert.equal(probed(backend, false, 2_500, FAIL_TIMEOUT_MS), true, 'probe again');
    assert.equal(backend.health.isAvailable(3_000), false, 'still out where its take-out would have ended');
    assert.equal(backend.health.isAvailable(5_500), true);
    assert.equal(backend.stats.outMs(60_000), 5_500);
    assert.deepEqual(backend.stats.probes, { ok: 0, failed: 1 });
  });

  it("the offers of a failed probe past the grace count against it; a good probe's are cleared", () => {
    const failing = heldOut();
    for (let i = 0; i < 20; i++) failing.stats.heldOut.offered();
    probed(failing, false, FAIL_TIMEOUT_MS, FAIL_TIMEOUT_MS);
    assert.deepEqual(failing.stats.heldOut.failed, { connect: 20, reset: 0 });
    const back = heldOut();
    for (let i = 0; i < 20; i++) back.stats.heldOut.offered();
    probed(back, true, FAIL_TIMEOUT_MS, FAIL_TIMEOUT_MS);
    assert.deepEqual(back.stats.heldOut.failed, { connect: 0, reset: 0 });
    assert.equal(back.stats.heldOut.cleared, 20);
  });
});
