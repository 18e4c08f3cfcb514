// Loopback backends and clients for data-plane tests: TCP echo / named / sink servers, a UDP echo,
// and small clients that collect what they receive. Everything binds to loopback, and every server
// tracks its sockets so close() ends them all. Free ports are free-ports.ts's.
import { createHash, randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import net from 'node:net';
import { once } from 'node:events';

export interface TcpBackend {
  readonly port: number;
  readonly host: string;
  /** Connections accepted so far. */
  readonly accepted: number;
  /** Sockets currently open. */
  readonly sockets: ReadonlySet<net.Socket>;
  close(): Promise<void>;
}

async function startTcpServer(host: string, port: number, onSocket: (socket: net.Socket) => void): Promise<TcpBackend> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    accepted++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    onSocket(socket);
  });
  server.listen({ host, port });
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    host,
    get accepted() {
      return accepted;
    },
    sockets,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface EchoBackend extends TcpBackend {
  /** sha256 (hex) of everything each finished connection received, in close order. */
  readonly receivedHashes: string[];
  readonly bytesReceived: number;
}

/** Echoes every byte back, with backpressure; ends its side when the client ends its side. */
export async function startEchoBackend(host = '127.0.0.1', port = 0): Promise<EchoBackend> {
  const receivedHashes: string[] = [];
  let bytesReceived = 0;
  const backend = await startTcpServer(host, port, (socket) => {
    const hash = createHash('sha256');
    socket.on('data', (chunk: Buffer) => {
      hash.update(chunk);
      bytesReceived += chunk.length;
    });
    socket.on('end', () => receivedHashes.push(hash.digest('hex')));
    socket.pipe(socket);
  });
  return {
    port: backend.port,
    host: backend.host,
    sockets: backend.sockets,
    close: () => backend.close(),
    receivedHashes,
    get accepted() {
      return backend.accepted;
    },
    get bytesReceived() {
      return bytesReceived;
    },
  };
}

/** Writes its name to every connection and ends it: what a split test counts. */
export function startNamedBackend(name: string, host = '127.0.0.1', port = 0): Promise<TcpBackend> {
  return startTcpServer(host, port, (socket) => {
    socket.resume();
    socket.end(name);
  });
}

/** Custom behaviour per connection. */
export function startTcpBackend(
  onSocket: (socket: net.Socket) => void,
  host = '127.0.0.1',
  port = 0,
): Promise<TcpBackend> {
  return startTcpServer(host, port, onSocket);
}

export interface UdpBackend {
  readonly port: number;
  /** Datagrams received, by sender "address:port". */
  readonly senders: Map<string, number>;
  received: number;
  close(): Promise<void>;
}

/** Answers every datagram with `<name>:<datagram>` (`replies` times, default once), on `port` (0: any). */
export async function startUdpEcho(name: string, host = '127.0.0.1', replies = 1, port = 0): Promise<UdpBackend> {
  const socket = dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
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
    for (let i = 0; i < replies; i++)
      socket.send(Buffer.concat([Buffer.from(`${name}:`), msg]), rinfo.port, rinfo.address);
  });
  socket.bind({ address: host, port });
  await once(socket, 'listening');
  (backend as { port: number }).port = socket.address().port;
  return backend;
}

export interface Received {
  readonly data: Buffer;
  /** The error that ended the socket, if it did not end cleanly. */
  readonly error: NodeJS.ErrnoException | undefined;
}

/** Connects, writes `payload` (then ends its side unless `keepOpen`), collects everything until close. */
export function exchange(
  port: number,
  payload: Buffer | string = '',
  options: { host?: string; keepOpen?: boolean; timeoutMs?: number } = {},
): Promise<Received> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: options.host ?? '127.0.0.1', port });
    const chunks: Buffer[] = [];
    let error: NodeJS.ErrnoException | undefined;
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`exchange with port ${port} did not finish within ${options.timeoutMs ?? 10_000} ms`));
    }, options.timeoutMs ?? 10_000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (err) => (error = err));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ data: Buffer.concat(chunks), error });
    });
    if (payload.length > 0) socket.write(payload);
    if (!options.keepOpen) socket.end();
  });
}

/** Writes `text` on a live echo connection and resolves with the echo; rejects if the connection goes. */
export async function echoOnce(socket: net.Socket, text: string): Promise<string> {
  const reply = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`no echo of ${JSON.stringify(text)} within 5 s`)), 5000);
    const onClose = () => fail(new Error(`the connection closed before the echo of ${JSON.stringify(text)}`));
    const fail = (err: Error) => {
      clearTimeout(timer);
      socket.off('data', onData);
      socket.off('close', onClose);
      reject(err);
    };
    const onData = (chunk: Buffer) => {
      clearTimeout(timer);
      socket.off('close', onClose);
      resolve(chunk.toString());
    };
    socket.once('data', onData);
    socket.once('close', onClose);
  });
  socket.write(text);
  return reply;
}

/** What a backend named itself on one connection through the proxy (startNamedBackend). */
export async function askName(port: number, host = '127.0.0.1'): Promise<string> {
  const { data, error } = await exchange(port, '', { host });
  if (error !== undefined) throw error;
  return data.toString('utf8');
}

/** Runs `total` calls of `task`, `concurrency` at a time; resolves with every result in order. */
export async function runConcurrently<T>(
  total: number,
  concurrency: number,
  task: (index: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = new Array(total);
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const index = next++;
      results[index] = await task(index);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, worker));
  return results;
}

export function countBy(values: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

export function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Random bytes (random content, so no compression or pattern can hide a lost or repeated chunk). */
export function randomPayload(size: number): Buffer {
  return randomBytes(size);
}

/** Sends one datagram from a fresh socket (a new session) and waits for `expected` replies. */
export async function udpAsk(
  port: number,
  message: string,
  options: { host?: string; socket?: dgram.Socket; expected?: number; timeoutMs?: number } = {},
): Promise<string[]> {
  const host = options.host ?? '127.0.0.1';
  const socket = options.socket ?? dgram.createSocket(net.isIPv6(host) ? 'udp6' : 'udp4');
  const own = options.socket === undefined;
  const expected = options.expected ?? 1;
  const replies: string[] = [];
  try {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(finish, options.timeoutMs ?? 1000);
      function onMessage(msg: Buffer) {
        replies.push(msg.toString('utf8'));
        if (replies.length >= expected) finish();
      }
      function finish() {
        clearTimeout(timer);
        socket.off('message', onMessage);
        resolve();
      }
      socket.on('message', onMessage);
      socket.send(message, port, host);
    });
  } finally {
    if (own) socket.close();
  }
  return replies;
}
