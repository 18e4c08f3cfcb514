// Tiny HTTP/1.1 backend on raw `node:net`: cheaper than `node:http`, so the proxy under test, not
// the backend, is what the load generator saturates. Run as a child: `http-backend.ts PORT NAME`.
//   GET /          → a short fixed body; honours `Connection: close`
//   GET /stream    → an endless body written with backpressure (for the slow-reader workload)
import { createServer, type Socket } from 'node:net';

const port = Number(process.argv[2]);
const name = process.argv[3] ?? 'backend';
const HEADER_END = '\r\n\r\n';
const body = `hello from ${name}\n`;
const keepAliveResponse = `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
const closeResponse = `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`;
const streamChunk = Buffer.alloc(64 * 1024, 'x');

function streamForever(socket: Socket): void {
  socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n');
  const writeUntilFull = (): void => {
    while (!socket.destroyed && socket.write(streamChunk));
  };
  socket.on('drain', writeUntilFull);
  writeUntilFull();
}

function handle(socket: Socket): void {
  socket.setNoDelay(true);
  socket.on('error', () => socket.destroy());
  let pending = '';
  socket.on('data', (chunk: Buffer) => {
    pending += chunk.toString('latin1');
    for (let end = pending.indexOf(HEADER_END); end !== -1; end = pending.indexOf(HEADER_END)) {
      const head = pending.slice(0, end).toLowerCase();
      pending = pending.slice(end + HEADER_END.length);
      if (head.startsWith('get /stream')) {
        streamForever(socket);
        return;
      }
      if (head.includes('\r\nconnection: close')) {
        socket.end(closeResponse);
        return;
      }
      socket.write(keepAliveResponse);
    }
  });
}

createServer({ noDelay: true }, handle).listen({ host: '127.0.0.1', port, backlog: 4096 }, () => {
  console.log(`http backend ${name} listening on ${port}`);
});
