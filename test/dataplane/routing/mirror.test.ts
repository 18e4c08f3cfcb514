// Mirroring (a dark canary) through real sockets on loopback: the mirror backend gets a share of the
// flows and connections, its replies never reach a client, they are judged against the stable's,
// and a mirror that is slow or dies never breaks a client's connection.
import assert from 'node:assert/strict';
import dgram from 'node:dgram';
import { once } from 'node:events';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  countBy,
  echoOnce,
  exchange,
  randomPayload,
  runConcurrently,
  sha256,
  startEchoBackend,
  startTcpBackend,
  startUdpEcho,
  udpAsk,
  type EchoBackend,
  type TcpBackend,
  type UdpBackend,
} from '../../support/net/backends.ts';
import { applyOnFreePort, createPlane, metricValue, type TestPlane } from '../../support/dataplane/test-plane.ts';
import { ReplyPairing, compareReplyPrefixes } from '../../../src/dataplane/routing/mirror-route.ts';
import { noMirrorCounts } from '../../../src/dataplane/stats/stats.ts';
import { waitFor } from '../../support/wait.ts';

/** A UDP server that answers `answer(datagram)`, or nothing when it returns undefined. */
async function startUdpServer(answer: (datagram: string) => string | undefined): Promise<UdpBackend> {
  const socket = dgram.createSocket('udp4');
  const backend: UdpBackend = {
    port: 0,
    senders: new Map(),
    received: 0,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
  socket.on('message', (msg, rinfo) => {
    backend.received++;
    const sender = `${rinfo.address}:${rinfo.port}`;
    backend.senders.set(sender, (backend.senders.get(sender) ?? 0) + 1);
    const reply = answer(msg.toString('utf8'));
    if (reply !== undefined) socket.send(reply, rinfo.port, rinfo.address);
  });
  socket.bind({ address: '127.0.0.1', port: 0 });
  await once(socket, 'listening');
  (backend as { port: number }).port = socket.address().port;
  return backend;
}

/** The stable at weight 100; the canary, the mirror, at `canaryWeight` (0: it serves no client). */
const listener = (
  name: string,
  protocol: 'tcp' | 'udp',
  port: number,
  stablePort: number,
  mirrorPort: number,
  mirror: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  canaryWeight = 0,
) => ({
  listeners: [
    {
      name,
      protocol,
      listen: `127.0.0.1:${port}`,
      backends: [
        { name: 'stable', host: '127.0.0.1', port: stablePort, weight: 100 },
        { name: 'canary', host: '127.0.0.1', port: mirrorPort, weight: canaryWeight },
      ],
      mirror: { to: 'canary', ...mirror },
      ...extra,
    },
  ],
});

describe('judging replies (pure)', () => {
  const cases: readonly [string, string, string, string | null][] = [
    ['the same first bytes', 'HELLO v1', 'HELLO v1', 'equal'],
    ['the mirror sent more (past the stable)', 'HELLO', 'HELLO and more', 'equal'],
    ['other bytes', 'HELLO v1', 'HELLO v2', 'different'],
    ['fewer bytes than the stable', 'HELLO v1', 'HEL', 'different'],
    ['nothing from the mirror', 'HELLO', '', 'missing'],
    ['nothing from either', '', '', null],
    ['only the mirror answered', '', 'HELLO', 'different'],
  ];
  for (const [title, stable, mirror, verdict] of cases) {
    test(`TCP: ${title} → ${verdict}`, () =>
      assert.equal(compareReplyPrefixes(Buffer.from(stable), Buffer.from(mirror)), verdict));
  }

  test('UDP: the n-th replies are paired, whichever comes first; unmatched stable replies are missing at the end', () => {
    const counts = noMirrorCounts();
    const pairing = new ReplyPairing(counts);
    pairing.stableReply(Buffer.from('a'));
    pairing.mirrorReply(Buffer.from('a'));
    pairing.mirrorReply(Buffer.from('x'));
    pairing.stableReply(Buffer.from('b'));
    pairing.stableReply(Buffer.from('c'));
    pairing.finish();
    assert.deepEqual(counts, { mirrored: 0, compared: 2, equal: 1, different: 1, missing: 1, dropped: 0 });
  });
});

describe('UDP mirroring', { timeout: 30_000 }, () => {
  let plane: TestPlane;
  const backends: UdpBackend[] = [];

  before(() => {
    plane = createPlane();
  });
  after(async () => {
    await plane.close();
    await Promise.all(backends.map((backend) => backend.close()));
  });

  test('weight 0, mirror 100: every client reply comes from the stable, the mirror gets every flow, and its replies are judged', async () => {
    const stable = await startUdpEcho('stable');
    const canary = await startUdpEcho('canary');
    backends.push(stable, canary);
    const port = await applyOnFreePort(
      plane,
      (p) =>
        listener(
          'dark',
          'udp',
          p,
          stable.port,
          canary.port,
          { percent: 100, compare: 'replies' },
          { udp: { responses: 1 } },
        ),
      '127.0.0.1',
      'udp',
    );
    const replies = await runConcurrently(40, 8, (i) => udpAsk(port, `query ${i}`));
    assert.deepEqual(
      replies.map((reply) => reply.join('|')),
      replies.map((_, i) => `stable:query ${i}`),
      'each client got exactly its stable reply, none from the mirror',
    );
    await waitFor(() => canary.received === 40, "the mirror to receive every flow's datagram");
    assert.equal(canary.senders.size, 40, 'one mirror socket per flow');
    const counts = plane.backend('dark', 'canary').mirror;
    await waitFor(() => counts.compared === 40, 'every pair judged');
    assert.deepEqual(counts, { mirrored: 40, compared: 40, equal: 0, different: 40, missing: 0, dropped: 0 });
    assert.equal(plane.backend('dark', 'canary').connections, 0, 'the mirror served no client');
    const metrics = await plane.metrics();
    assert.equal(
      metricValue(metrics, 'canary_l4_mirror_total', { listener: 'dark', backend: 'canary', outcome: 'different' }),
      40,
    );
  });

  test('compare: replies counts equal, different and missing (no reply within the reply window)', async () => {
    const stable = await startUdpServer((query) => `answer to ${query}`);
    // The canary answers 3 in 10 queries wrongly and never answers a tenth.
    const canary = await startUdpServer((query) => {
      const last = Number(query.at(-1));
      if (last === 9) return undefined;
      return last < 3 ? `wrong answer to ${query}` : `answer to ${query}`;
    });
    backends.push(stable, canary);
    const port = await applyOnFreePort(
      plane,
      (p) =>
        listener(
          'judged',
          'udp',
          p,
          stable.port,
          canary.port,
          { percent: 100, compare: 'replies' },
          { udp: { responses: 1 } },
        ),
      '127.0.0.1',
      'udp',
    );
    const replies = await runConcurrently(20, 5, (i) => udpAsk(port, `query ${i % 10}`));
    assert.ok(
      replies.every((reply, i) => reply.join() === `answer to query ${i % 10}`),
      "clients only ever see the stable's answers",
    );
    const counts = plane.backend('judged', 'canary').mirror;
    await waitFor(() => counts.missing === 2, 'the unanswered queries to be missing once their window closed');
    assert.deepEqual(counts, { mirrored: 20, compared: 18, equal: 12, different: 6, missing: 2, dropped: 0 });
  });

  test('percent 50 mirrors every other flow; a dead mirror is dropped and counted, clients are served', async () => {
    const stable = await startUdpEcho('stable');
    const dead = await startUdpEcho('dead');
    await dead.close(); // its port now refuses (ICMP port unreachable)
    backends.push(stable);
    const port = await applyOnFreePort(
      plane,
      (p) => listener('half', 'udp', p, stable.port, dead.port, { percent: 50 }, { udp: { responses: 1 } }),
      '127.0.0.1',
      'udp',
    );
    const replies = await runConcurrently(20, 4, (i) => udpAsk(port, `q${i}`));
    assert.ok(replies.every((reply, i) => reply.join() === `stable:q${i}`));
    const counts = plane.backend('half', 'canary').mirror;
    await waitFor(() => counts.dropped === 10, 'every mirror leg to the dead backend dropped');
    assert.deepEqual(counts, { mirrored: 10, compared: 0, equal: 0, different: 0, missing: 0, dropped: 10 });
  });

  test('a flow the pick placed on the mirror backend itself reaches it once, and is not counted as mirrored', async () => {
    const stable = await startUdpServer((query) => `stable:${query}`);
    const queriesSeen: string[] = [];
    const canary = await startUdpServer((query) => {
      queriesSeen.push(query);
      return `canary:${query}`;
    });
    backends.push(stable, canary);
    // 100/100: smooth WRR places every other flow on the canary, and the mirror wants every flow.
    const port = await applyOnFreePort(
      plane,
      (p) =>
        listener(
          'placed',
          'udp',
          p,
          stable.port,
          canary.port,
          { percent: 100, compare: 'replies' },
          { udp: { responses: 1 } },
          100,
        ),
      '127.0.0.1',
      'udp',
    );
    const queries = Array.from({ length: 10 }, (_, i) => `query ${i}`);
    const replies = await runConcurrently(queries.length, 1, (i) => udpAsk(port, queries[i]!));
    assert.deepEqual(countBy(replies.map((reply) => reply.join('|').split(':')[0]!)), { stable: 5, canary: 5 });
    const counts = plane.backend('placed', 'canary').mirror;
    await waitFor(() => counts.compared === counts.mirrored, 'every mirrored flow judged');
    assert.deepEqual(
      queriesSeen.toSorted(),
      queries,
      "the canary got each query once: those of its own flows, and those mirrored from the stable's",
    );
    assert.deepEqual(
      counts,
      { mirrored: 5, compared: 5, equal: 0, different: 5, missing: 0, dropped: 0 },
      "only the stable's flows were mirrored",
    );
  });
});

describe('TCP mirroring', { timeout: 60_000 }, () => {
  let plane: TestPlane;
  let stable: EchoBackend;
  const backends: TcpBackend[] = [];

  before(async () => {
    plane = createPlane();
    stable = await startEchoBackend();
  });
  after(async () => {
    await plane.close();
    await Promise.all([stable, ...backends].map((backend) => backend.close()));
  });

  test('a mirror that never reads is dropped once it falls behind; the client gets every byte back', async () => {
    const stuck: net.Socket[] = [];
    const canary = await startTcpBackend((socket) => {
      socket.pause(); // reads nothing: the kernel buffers fill, then the leg's own bound
      stuck.push(socket);
    });
    backends.push(canary);
    const port = await applyOnFreePort(plane, (p) =>
      listener('slow', 'tcp', p, stable.port, canary.port, { percent: 100, maxBytes: 1024 ** 3 }),
    );
    const payload = randomPayload(32 * 1024 * 1024);
    const { data, error } = await exchange(port, payload, { timeoutMs: 30_000 });
    assert.equal(error, undefined);
    assert.equal(sha256(data), sha256(payload), 'the client got exactly its bytes back');
    const counts = plane.backend('slow', 'canary').mirror;
    assert.deepEqual(counts, { mirrored: 1, compared: 0, equal: 0, different: 0, missing: 0, dropped: 1 });
  });

  test('a mirror that dies mid-connection never breaks a client (byte-exact), and is counted dropped', async () => {
    const canary = await startTcpBackend((socket) => socket.once('data', () => socket.resetAndDestroy()));
    backends.push(canary);
    const port = await applyOnFreePort(plane, (p) =>
      listener('dies', 'tcp', p, stable.port, canary.port, { percent: 100, compare: 'replies', maxBytes: 1024 ** 3 }),
    );
    const payloads = Array.from({ length: 8 }, () => randomPayload(512 * 1024));
    const results = await runConcurrently(payloads.length, 4, (i) =>
      exchange(port, payloads[i]!, { timeoutMs: 20_000 }),
    );
    results.forEach(({ data, error }, i) => {
      assert.equal(error, undefined);
      assert.equal(sha256(data), sha256(payloads[i]!), `connection ${i} got exactly its bytes back`);
    });
    const counts = plane.backend('dies', 'canary').mirror;
    await waitFor(() => counts.dropped === 8, 'every mirror leg dropped');
    assert.deepEqual(counts, { mirrored: 8, compared: 0, equal: 0, different: 0, missing: 0, dropped: 8 });
  });

  test('compare: replies judges the first bytes each side sent back; maxBytes bounds what the mirror is sent', async () => {
    const received: number[] = [];
    // Echoes too, but upper-cases any request that starts with "x"; counts what each connection got.
    const canary = await startTcpBackend((socket) => {
      let bytes = 0;
      let first: boolean | undefined;
      socket.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        first ??= chunk[0] === 0x78;
        socket.write(first ? Buffer.from(chunk.toString('latin1').toUpperCase(), 'latin1') : chunk);
      });
      socket.on('end', () => socket.end());
      socket.on('close', () => received.push(bytes));
    });
    backends.push(canary);
    const port = await applyOnFreePort(plane, (p) =>
      listener('compared', 'tcp', p, stable.port, canary.port, { percent: 100, compare: 'replies', maxBytes: 100 }),
    );
    const requests = ['hello', 'x marks the spot', 'hello again', 'xylophone'];
    for (const request of requests) {
      const { data } = await exchange(port, request);
      assert.equal(data.toString(), request, "the client sees the stable's echo");
    }
    const big = await exchange(port, 'a'.repeat(1000));
    assert.equal(big.data.length, 1000);
    const counts = plane.backend('compared', 'canary').mirror;
    await waitFor(() => counts.compared + counts.missing + counts.dropped === 5, 'every connection judged');
    // The 1000-byte request reached the mirror as its first 100 bytes: it echoed fewer than the stable.
    assert.deepEqual(counts, { mirrored: 5, compared: 5, equal: 2, different: 3, missing: 0, dropped: 0 });
    await waitFor(() => received.length === 5, 'the mirror connections to close');
    assert.equal(Math.max(...received), 100, 'the mirror was sent maxBytes at most');
  });

  test('maxBytes bounds the whole mirrored connection, however many reads bring it; the cut reply is judged different', async () => {
    const canary = await startEchoBackend();
    backends.push(canary);
    const port = await applyOnFreePort(plane, (p) =>
      listener('bounded', 'tcp', p, stable.port, canary.port, { percent: 100, compare: 'replies', maxBytes: 100 }),
    );
    const chunks = Array.from({ length: 10 }, (_, i) => `${`chunk ${i} of the upload`.padEnd(29, '.')}\n`);
    const client = net.connect({ host: '127.0.0.1', port });
    await once(client, 'connect');
    // Each chunk comes back (from the stable) before the next is written: the proxy read each one alone.
    for (const chunk of chunks) assert.equal(await echoOnce(client, chunk), chunk);
    client.end();
    await once(client, 'close');
    await waitFor(() => canary.receivedHashes.length === 1, 'the mirror connection to end');
    const upload = Buffer.from(chunks.join(''));
    assert.equal(upload.length, 300);
    assert.equal(canary.bytesReceived, 100, 'the mirror was sent maxBytes in all');
    assert.equal(canary.receivedHashes[0], sha256(upload.subarray(0, 100)), 'exactly the first maxBytes of the upload');
    const counts = plane.backend('bounded', 'canary').mirror;
    await waitFor(() => counts.compared === 1, 'the connection judged');
    assert.deepEqual(
      counts,
      { mirrored: 1, compared: 1, equal: 0, different: 1, missing: 0, dropped: 0 },
      "the mirror echoed 100 of the stable's 300 bytes",
    );
  });

  test('a connection the pick placed on the mirror backend itself reaches it once, and is not counted as mirrored', async () => {
    const canary = await startEchoBackend();
    backends.push(canary);
    // 100/100: smooth WRR places every other connection on the canary, and the mirror wants every one.
    const port = await applyOnFreePort(plane, (p) =>
      listener('placed', 'tcp', p, stable.port, canary.port, { percent: 100, compare: 'replies' }, {}, 100),
    );
    const requests = Array.from({ length: 10 }, (_, i) => `request ${i}`);
    for (const request of requests) assert.equal((await exchange(port, request)).data.toString(), request);
    assert.equal(plane.backend('placed', 'canary').connections, 5);
    const counts = plane.backend('placed', 'canary').mirror;
    await waitFor(() => counts.compared === counts.mirrored, 'every mirrored connection judged');
    await waitFor(() => canary.sockets.size === 0, "the canary's connections to close");
    assert.deepEqual(
      canary.receivedHashes.toSorted(),
      requests.map((request) => sha256(Buffer.from(request))).toSorted(),
      "the canary got each request once: those of its own connections, and those mirrored from the stable's",
    );
    assert.deepEqual(
      counts,
      { mirrored: 5, compared: 5, equal: 5, different: 0, missing: 0, dropped: 0 },
      "only the stable's connections were mirrored",
    );
  });
});
