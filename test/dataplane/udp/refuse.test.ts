// A backend with `refuse: true` on a UDP listener (Gateway API: "packet drops must respect
// weight"): its share of new flows is dropped, every datagram of such a flow until it has been idle
// for idleTimeoutMs — not placed again datagram by datagram — and a reload that stops it refusing
// lets its flows be placed anew.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { after, before, describe, test } from 'node:test';
import { runConcurrently, startUdpEcho, udpAsk, type UdpBackend } from '../../support/net/backends.ts';
import { applyOnFreePort, createPlane, metricValue, type TestPlane } from '../../support/dataplane/test-plane.ts';
import { snapshotCounters } from '../../../src/dataplane/stats/counters.ts';
import { waitFor } from '../../support/wait.ts';

const HOST = '127.0.0.1';
/** How long a datagram waits for a reply that is not coming. */
const NO_REPLY_MS = 300;

async function clientSocket(): Promise<dgram.Socket> {
  const socket = dgram.createSocket('udp4');
  socket.bind({ address: HOST, port: 0 });
  await once(socket, 'listening');
  return socket;
}

describe('a backend with refuse: true on a UDP listener', { timeout: 30_000 }, () => {
  let plane: TestPlane;
  let a: UdpBackend;
  const sockets: dgram.Socket[] = [];

  before(async () => {
    plane = createPlane();
    a = await startUdpEcho('A', HOST);
  });
  after(async () => {
    await plane.close();
    for (const socket of sockets) socket.close();
    await a.close();
  });

  const listener = (port: number, idleTimeoutMs: number, refuse: boolean) => ({
    listeners: [
      {
        name: 'dns',
        protocol: 'udp',
        listen: `${HOST}:${port}`,
        idleTimeoutMs,
        backends: [
          { name: 'A', host: HOST, port: a.port, weight: 80 },
          refuse
            ? { name: 'missing', weight: 20, refuse: true }
            : { name: 'missing', host: HOST, port: a.port, weight: 20 },
        ],
      },
    ],
  });

  /** Sends `message` from `socket` and says whether a reply came (a flow is its socket's source port). */
  const answered = async (port: number, socket: dgram.Socket, message: string) =>
    (await udpAsk(port, message, { host: HOST, socket, timeoutMs: NO_REPLY_MS })).length > 0;

  test('100 flows at 80/20: 80 answered, 20 get nothing, and their second datagram is dropped too', async () => {
    const port = await applyOnFreePort(plane, (p) => listener(p, 60_000, true), HOST, 'udp');
    const flows = await Promise.all(Array.from({ length: 100 }, () => clientSocket()));
    sockets.push(...flows);
    // Flows opened one at a time (wrr's exact split), the waits for absent replies overlapped.
    const first: boolean[] = [];
    const waits: Promise<void>[] = [];
    for (const [i, socket] of flows.entries()) {
      waits.push(answered(port, socket, `first ${i}`).then((got) => void (first[i] = got)));
      await waitFor(() => plane.listener('dns').accepted + plane.backend('dns', 'missing').refused > i, `flow ${i}`);
    }
    await Promise.all(waits);
    assert.equal(first.filter(Boolean).length, 80);
    const silent = flows.filter((_, i) => !first[i]);
    assert.equal(silent.length, 20);
    const second = await runConcurrently(silent.length, 20, (i) => answered(port, silent[i]!, `second ${i}`));
    assert.deepEqual(
      second.filter(Boolean).length,
      0,
      "a refused flow's later datagrams are dropped, not placed again",
    );
    const answeredAgain = await runConcurrently(80, 20, (i) =>
      answered(port, flows.filter((_, j) => first[j])[i]!, 'again'),
    );
    assert.equal(answeredAgain.filter(Boolean).length, 80, 'the served flows stay on A');

    assert.equal(plane.backend('dns', 'missing').refused, 20, 'flows refused, on the backend');
    assert.equal(plane.backend('dns', 'missing').connections, 0);
    assert.equal(plane.backend('dns', 'A').connections, 80);
    assert.equal(plane.listener('dns').udpDropped.backend_refused, 40, 'every datagram of the refused flows');
    assert.equal(plane.listener('dns').udpDropped.no_backend, 0);
    const metrics = await plane.metrics();
    assert.equal(
      metricValue(metrics, 'canary_l4_udp_dropped_datagrams_total', { listener: 'dns', reason: 'backend_refused' }),
      40,
    );
    assert.equal(metricValue(metrics, 'canary_l4_backend_refused_total', { listener: 'dns', backend: 'missing' }), 20);
    assert.equal(snapshotCounters(plane.stats, plane.dataplane.config).listeners.dns!.missing!.refused, 20);
  });

  test('a refused flow idle for idleTimeoutMs is forgotten: its next datagram is placed anew', async () => {
    const port = await applyOnFreePort(plane, (p) => listener(p, 1000, true), HOST, 'udp');
    const missing = plane.backend('dns', 'missing');
    const A = plane.backend('dns', 'A');
    // Flows until one is refused (wrr: within five).
    let refusedFlow: dgram.Socket | undefined;
    for (let i = 0; i < 5 && refusedFlow === undefined; i++) {
      const socket = await clientSocket();
      sockets.push(socket);
      const before = missing.refused;
      await answered(port, socket, 'hello');
      if (missing.refused > before) refusedFlow = socket;
    }
    assert.ok(refusedFlow !== undefined, 'one of five flows is refused at 80/20');
    const placedBefore = missing.refused + A.connections;
    const droppedBefore = plane.listener('dns').udpDropped.backend_refused;
    await answered(port, refusedFlow, 'still refused');
    assert.equal(missing.refused + A.connections, placedBefore, 'within idleTimeoutMs: the same flow, not placed');
    assert.equal(plane.listener('dns').udpDropped.backend_refused, droppedBefore + 1);
    // Idle past 1000 ms (a sweep every 250 ms): the next datagram is a new flow, placed by the weights.
    await new Promise((resolve) => setTimeout(resolve, 1600));
    await answered(port, refusedFlow, 'a new flow');
    assert.equal(missing.refused + A.connections, placedBefore + 1, 'after idleTimeoutMs: placed again');
  });

  test('a reload that stops the backend refusing lets its refused flows be placed at once', async () => {
    let proxyPort = 0;
    proxyPort = await applyOnFreePort(plane, (p) => listener(p, 60_000, true), HOST, 'udp');
    const missing = plane.backend('dns', 'missing');
    const flows: dgram.Socket[] = [];
    for (let i = 0; i < 5; i++) {
      const socket = await clientSocket();
      sockets.push(socket);
      flows.push(socket);
      await answered(proxyPort, socket, 'hello');
    }
    const refusedBefore = missing.refused;
    assert.ok(refusedBefore >= 1);
    await plane.apply(listener(proxyPort, 60_000, false));
    const replies = await runConcurrently(flows.length, 5, (i) => answered(proxyPort, flows[i]!, 'after the reload'));
    assert.equal(
      replies.filter(Boolean).length,
      5,
      'every flow answered: the refused ones were placed on serving backends',
    );
    assert.equal(missing.refused, refusedBefore);
  });
});
