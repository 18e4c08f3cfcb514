// The UDP path's one use of Node internals (src/dataplane/udp/datagram-handle.ts): that the runtime
// still has them, that datagrams really take the handle's path, that a send the kernel queues keeps
// its bytes until sent, that errors still reach 'error', and that the public-API fallback relays.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { promisify } from 'node:util';
import { describe, test } from 'node:test';
import { datagramSender, receiveDatagrams, udpHandleProblem } from '../../../src/dataplane/udp/datagram-handle.ts';

import { freePort } from '../../support/net/free-ports.ts';
import { waitFor } from '../../support/wait.ts';

const MODULE_URL = new URL('../../../src/dataplane/udp/datagram-handle.ts', import.meta.url).href;

async function boundSocket(
  onDatagram: (datagram: Buffer, sender: dgram.RemoteInfo) => void,
  internals?: Error,
): Promise<dgram.Socket> {
  const socket = dgram.createSocket('udp4');
  receiveDatagrams(socket, onDatagram, internals);
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  return socket;
}

async function connectedTo(socket: dgram.Socket): Promise<dgram.Socket> {
  const sender = dgram.createSocket('udp4');
  sender.connect(socket.address().port, '127.0.0.1');
  await once(sender, 'connect');
  return sender;
}

/** Counts the 'message' events dgram emits on `socket`: none once the handle delivers directly. */
function countMessageEvents(socket: dgram.Socket): () => number {
  let count = 0;
  const emit = socket.emit.bind(socket);
  socket.emit = (event: string | symbol, ...args: unknown[]) => {
    if (event === 'message') count++;
    return emit(event, ...args);
  };
  return () => count;
}

describe('UDP datagrams through the socket handle', { timeout: 20_000 }, () => {
  test("this runtime has what datagram-handle.ts uses: a dgram.Socket's 'state symbol' with a handle that sends, and udp_wrap's SendWrap", () => {
    assert.equal(
      udpHandleProblem(),
      null,
      'Node changed the dgram internals datagram-handle.ts relies on; the UDP path runs on the slower public API until it is adapted',
    );
  });

  test('received datagrams reach the handler straight from the handle, with the sender; replies go back by address', async () => {
    const received: string[] = [];
    const echo = await boundSocket((datagram, sender) => {
      received.push(datagram.toString());
      echoReplies.sendTo(datagram, sender.port, sender.address);
    });
    const echoReplies = datagramSender(echo);
    const messageEvents = countMessageEvents(echo);
    const replies: string[] = [];
    const client = await boundSocket((reply) => replies.push(reply.toString()));
    const clientSends = datagramSender(client);
    for (let i = 0; i < 20; i++) clientSends.sendTo(Buffer.from(`ping ${i}`), echo.address().port, '127.0.0.1');
    await waitFor(() => replies.length === 20, 'every ping echoed');
    assert.deepEqual(replies, received);
    assert.equal(messageEvents(), 0, "datagrams went through dgram's 'message' event, not the handle");
    echo.close();
    client.close();
  });

  test('a refused connected socket still reports ECONNREFUSED on its error event', async () => {
    const closedPort = await freePort('127.0.0.1', 'udp');
    const socket = dgram.createSocket('udp4');
    receiveDatagrams(socket, () => assert.fail('nothing listens there'));
    socket.connect(closedPort, '127.0.0.1');
    await once(socket, 'connect');
    const failed = once(socket, 'error');
    datagramSender(socket).send(Buffer.from('anyone?'));
    const [err] = (await failed) as [NodeJS.ErrnoException];
    assert.equal(err.code, 'ECONNREFUSED');
    socket.close();
  });

  test('the public-API fallback (internals not found) relays the same way', async () => {
    const notFound = new Error('test: no internals');
    const received: string[] = [];
    const sink = await boundSocket((datagram) => received.push(datagram.toString()), notFound);
    const messageEvents = countMessageEvents(sink);
    const sender = await connectedTo(sink);
    const sends = datagramSender(sender, notFound);
    for (let i = 0; i < 5; i++) sends.send(Buffer.from(`fallback ${i}`));
    await waitFor(() => received.length === 5, 'every datagram received');
    assert.deepEqual(
      received,
      [0, 1, 2, 3, 4].map((i) => `fallback ${i}`),
    );
    assert.equal(messageEvents(), 5, "the fallback receives through dgram's 'message' event");
    sink.close();
    sender.close();
  });

  // --test-udp-no-try-send makes the runtime queue every send (as when the kernel is busy), and a
  // GC after each send frees whatever nothing references: a queued datagram must keep its bytes.
  test('queued sends keep their own buffers until sent: 50 datagrams with a GC after each arrive intact', async () => {
    const child = `
      const dgram = (await import('node:dgram')).default;
      const { once } = await import('node:events');
      const { datagramSender, receiveDatagrams } = await import(${JSON.stringify(MODULE_URL)});
      const got = [];
      const sink = dgram.createSocket({ type: 'udp4', recvBufferSize: 4 * 1024 * 1024 });
      receiveDatagrams(sink, (datagram) => got.push(datagram.toString('latin1', 0, 8)));
      sink.bind(0, '127.0.0.1'); await once(sink, 'listening');
      const socket = dgram.createSocket('udp4');
      socket.connect(sink.address().port, '127.0.0.1'); await once(socket, 'connect');
      const sends = datagramSender(socket);
      for (let i = 0; i < 50; i++) { sends.send(Buffer.alloc(1024, String(i).padStart(8, '0'))); globalThis.gc(); Buffer.alloc(1024, 'garbage!'); }
      for (let wait = 0; wait < 100 && got.length < 50; wait++) await new Promise((resolve) => setTimeout(resolve, 20));
      console.log(JSON.stringify(got));
      sink.close(); socket.close();
    `;
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--expose-gc', '--test-udp-no-try-send', '--input-type=module', '--eval', child],
      { timeout: 15_000 },
    );
    const got = JSON.parse(stdout) as string[];
    assert.deepEqual(got.sort(), Array.from({ length: 50 }, (_, i) => String(i).padStart(8, '0')).sort());
  });
});
